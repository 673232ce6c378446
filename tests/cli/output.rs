//! Issue 16: the output side never loses a byte, never crashes, never
//! leaks. Each test reproduces one way a file was lost or a run crashed.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use predicates::prelude::*;
use serde_json::{json, Value};

use crate::summarize::{ollama_answer, Reply, Server};
use crate::util::{ctxclean, fixture, temp_dir};

const INPUT: &str = "written/two_queries.json";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ctxclean"))
}

/// A copy of the input in a fresh directory.
fn setup(name: &str) -> (crate::util::TempDir, PathBuf) {
    let dir = temp_dir(name);
    let file = dir.join("a.json");
    fs::copy(fixture(INPUT), &file).unwrap();
    (dir, file)
}

/// The temporary files (ours) left in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.contains(".ctxclean-") && n.ends_with(".tmp"))
        .collect()
}

#[test]
fn an_empty_backup_suffix_is_a_usage_error() {
    let (dir, file) = setup("out-backup");
    let before = fs::read(&file).unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place", "--backup="])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--backup needs a suffix"));
    assert_eq!(fs::read(&file).unwrap(), before);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fifos_and_devices_are_written_directly_never_replaced() {
    let dir = temp_dir("out-special");
    // A FIFO as -o and as --report: read by a thread, still a FIFO after.
    for flag in ["-o", "--report"] {
        let fifo = dir.join(format!("fifo{flag}"));
        let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(&fifo).unwrap())
        };
        ctxclean()
            .args(["filter", "--previous-cycles", flag])
            .arg(&fifo)
            .arg(fixture(INPUT))
            .assert()
            .success();
        let got = reader.join().unwrap();
        assert!(!got.is_empty(), "{flag}: nothing came through the FIFO");
        let v: Value = serde_json::from_slice(&got).unwrap();
        assert!(v.is_object());
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        // --in-place refuses it, naming it.
        ctxclean()
            .args(["filter", "--previous-cycles", "--in-place"])
            .arg(&fifo)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is a FIFO"));
    }
    // /dev/null and /dev/stdout work as a normal user would use them.
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "-o",
            "/dev/null",
            "--report",
            "/dev/stdout",
        ])
        .arg(fixture(INPUT))
        .assert()
        .success()
        .stdout(predicate::str::contains("\"command\": \"filter\""));
    assert!(fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A device node made here (as root): written to, never replaced.
    if is_root() {
        let node = dir.join("null-node");
        let status = Command::new("mknod")
            .args([node.to_str().unwrap(), "c", "1", "3"])
            .status()
            .unwrap();
        if status.success() {
            for flag in ["-o", "--report"] {
                ctxclean()
                    .args(["filter", "--previous-cycles", flag])
                    .arg(&node)
                    .arg(fixture(INPUT))
                    .assert()
                    .success();
                assert!(fs::metadata(&node).unwrap().file_type().is_char_device());
            }
            ctxclean()
                .args(["filter", "--previous-cycles", "--in-place"])
                .arg(&node)
                .assert()
                .code(2)
                .stderr(predicate::str::contains("a character device"));
        }
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_report_never_goes_over_an_input_or_the_output() {
    let (dir, file) = setup("out-report");
    let before = fs::read(&file).unwrap();
    // By another spelling of the same file, and through a hard link.
    let link = dir.join("hard.json");
    fs::hard_link(&file, &link).unwrap();
    for report in [dir.join("./a.json"), link.clone()] {
        ctxclean()
            .args(["filter", "--previous-cycles", "--report"])
            .arg(&report)
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("would overwrite it"));
    }
    let out = dir.join("out.json");
    fs::write(&out, "old").unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "-o"])
        .arg(&out)
        .arg("--report")
        .arg(&out)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("one would overwrite the other"));
    // The same file twice to --in-place --backup.
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "--in-place",
            "--backup",
            ".bak",
        ])
        .arg(&file)
        .arg(&link)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("are the same file"));
    assert_eq!(fs::read(&file).unwrap(), before);
    assert!(!dir.join("a.json.bak").exists());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn owner_group_and_mode_are_kept() {
    let (dir, file) = setup("out-owner");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&file)
        .assert()
        .success();
    assert_eq!(fs::metadata(&file).unwrap().mode() & 0o7777, 0o640);
    if is_root() {
        // Root keeps another user's ownership, and the setuid bit with it.
        fs::copy(fixture(INPUT), &file).unwrap();
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o4755)).unwrap();
        ctxclean()
            .args(["filter", "--previous-cycles", "--in-place"])
            .arg(&file)
            .assert()
            .success();
        let m = fs::metadata(&file).unwrap();
        assert_eq!(
            (m.uid(), m.gid(), m.mode() & 0o7777),
            (65534, 65534, 0o4755)
        );
        // A user who cannot keep the owner drops setuid and setgid.
        fs::copy(fixture(INPUT), &file).unwrap();
        std::os::unix::fs::chown(&file, Some(0), Some(0)).unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o6755)).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let status = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin())
            .args(["filter", "--previous-cycles", "--in-place"])
            .arg(&file)
            .stderr(Stdio::null())
            .status();
        if let Ok(status) = status {
            assert!(status.success());
            let m = fs::metadata(&file).unwrap();
            assert_eq!(m.uid(), 65534);
            assert_eq!(
                m.mode() & 0o7777,
                0o755,
                "setuid/setgid kept on a file that changed owner"
            );
        }
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn unchanged_files_are_not_rewritten_and_links_stay_links() {
    let (dir, file) = setup("out-unchanged");
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&file)
        .assert()
        .success();
    let before = fs::metadata(&file).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "--in-place",
            "--backup",
            ".bak",
        ])
        .arg(&file)
        .assert()
        .success();
    let after = fs::metadata(&file).unwrap();
    assert_eq!(before.ino(), after.ino());
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
    assert!(
        !dir.join("a.json.bak").exists(),
        "no backup of an unchanged file"
    );
    // A symbolic link: its target is rewritten, the link stays.
    let target = dir.join("target.json");
    fs::copy(fixture(INPUT), &target).unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("target.json", &link).unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&link)
        .assert()
        .success();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_ne!(
        fs::read(&target).unwrap(),
        fs::read(fixture(INPUT)).unwrap()
    );
    assert!(temporaries(&dir).is_empty());
    fs::remove_dir_all(dir).unwrap();
}

/// A session long enough to summarize, written to `file`.
fn long_session(file: &Path) {
    let mut msgs = vec![json!({"role": "system", "content": "Be brief."})];
    for i in 0..30 {
        msgs.push(json!({"role": "user", "content": format!("question {i} about the report")}));
        msgs.push(
            json!({"role": "assistant", "content": format!("answer {i}: the numbers went up")}),
        );
    }
    let lines: Vec<String> = msgs.iter().map(Value::to_string).collect();
    fs::write(file, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_file_appended_to_while_rewritten_is_left_alone() {
    let dir = temp_dir("out-appended");
    let file = dir.join("live.jsonl");
    long_session(&file);
    // The server appends a line to the session (as a live Claude Code
    // session would get one) while ctxclean waits for the summary.
    let hook = {
        let file = file.clone();
        Arc::new(move || {
            use std::io::Write;
            let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
            writeln!(f, "{}", json!({"role": "user", "content": "one more"})).unwrap();
        }) as Arc<dyn Fn() + Send + Sync>
    };
    let server = Server::start(vec![Reply::Hook(
        hook,
        Duration::from_millis(10),
        ollama_answer("A summary."),
    )]);
    let before = fs::read_to_string(&file).unwrap();
    ctxclean()
        .args([
            "summarize",
            "--threshold",
            "50",
            "--engine",
            "ollama",
            "--url",
            &server.url,
        ])
        .arg("--in-place")
        .arg(&file)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("changed while processing"));
    let after = fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&before) && after.ends_with("\"one more\"}\n"),
        "{after}"
    );
    assert!(temporaries(&dir).is_empty());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_file_another_run_rewrites_is_refused() {
    let (dir, file) = setup("out-locked");
    let holder = fs::File::open(&file).unwrap();
    holder.lock().unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&file)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "being rewritten by another ctxclean run",
        ));
    assert_eq!(fs::read(&file).unwrap(), fs::read(fixture(INPUT)).unwrap());
    drop(holder);
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&file)
        .assert()
        .success();
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn numbers_keep_their_spelling_in_a_changed_conversation() {
    let input = r#"{"messages":[{"role":"user","content":"a","score":1e5,"big":1e999,"w":1.50},{"role":"assistant","content":"b","t":2E-3},{"role":"user","content":"c","n":-0.0,"k":7E+1}]}"#;
    ctxclean()
        .args(["filter", "--exclude-roles", "assistant"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout(
            r#"{"messages":[{"role":"user","content":"a","score":1e5,"big":1e999,"w":1.50},{"role":"user","content":"c","n":-0.0,"k":7E+1}]}"#,
        );
}

#[test]
fn writing_never_panics() {
    let file = fixture(INPUT);
    // An unwritable stderr: the run still succeeds.
    let status = Command::new(bin())
        .args(["convert"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(
            fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // A full stdout: exit 1, never 101.
    for args in [
        vec!["completions", "bash"],
        vec!["convert", file.to_str().unwrap()],
    ] {
        let out = Command::new(bin())
            .args(&args)
            .stdout(
                fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("standard output"));
    }
    // A closed stdout is an error, not output thrown away.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' stats '{}' >&-",
            bin().display(),
            file.display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output is closed"));
    // Too many workers: capped, and said.
    ctxclean()
        .args(["stats", "-j", "20000"])
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains("-j 20000: using"));
}

#[test]
fn a_file_size_limit_is_an_error_naming_the_file() {
    let (dir, file) = setup("out-fsize");
    let big = dir.join("big.jsonl");
    long_session(&big);
    let out = dir.join("out.jsonl");
    let run = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 1 && exec '{}' convert '{}' -o '{}'",
            bin().display(),
            big.display(),
            out.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("out.jsonl") && stderr.contains("File too large"),
        "{stderr}"
    );
    assert!(!out.exists());
    assert!(temporaries(&dir).is_empty());
    let _ = file;
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn signals_remove_temporaries_and_later_runs_sweep_stale_ones() {
    let dir = temp_dir("out-signal");
    let file = dir.join("s.jsonl");
    // Conversations one per line: the first chunk (two lines, over a
    // chunk's size, under the threshold) is written to the temporary file
    // while the last line waits for a summary that does not come.
    let conv = |words: usize| {
        json!({"messages": [
            {"role": "user", "content": "word ".repeat(words)},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": "done"},
        ]})
        .to_string()
    };
    let lines = [conv(60_000), conv(10), conv(120_000)];
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    let before = fs::read(&file).unwrap();
    // A stale temporary of a process that is gone, and one of a live one.
    let stale = dir.join(".s.jsonl.ctxclean-999999999-0.tmp");
    let live = dir.join(format!(".s.jsonl.ctxclean-{}-0.tmp", std::process::id()));
    fs::write(&stale, "half").unwrap();
    fs::write(&live, "half").unwrap();
    let server = Server::start(vec![Reply::Slow(
        Duration::from_secs(30),
        ollama_answer("late"),
    )]);
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let mut child = Command::new(bin())
            .args([
                "summarize",
                "--threshold",
                "100000",
                "--keep",
                "2",
                "--engine",
                "ollama",
            ])
            .args(["--url", &server.url])
            .arg("--in-place")
            .arg(&file)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait for its temporary file, then signal it.
        let mine = format!(".ctxclean-{}-", child.id());
        for _ in 0..500 {
            if temporaries(&dir).iter().any(|n| n.contains(&mine)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            temporaries(&dir).iter().any(|n| n.contains(&mine)),
            "no temporary file seen"
        );
        // SAFETY: kill sends a signal to our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code));
        assert!(!temporaries(&dir).iter().any(|n| n.contains(&mine)));
        assert_eq!(fs::read(&file).unwrap(), before);
    }
    assert!(!stale.exists(), "a dead run's temporary file stays");
    assert!(live.exists(), "a live run's temporary file was removed");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn long_file_names_can_be_rewritten() {
    let dir = temp_dir("out-longname");
    let name = format!("{}.json", "n".repeat(245));
    let file = dir.join(&name);
    fs::copy(fixture(INPUT), &file).unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&file)
        .assert()
        .success();
    assert_ne!(fs::read(&file).unwrap(), fs::read(fixture(INPUT)).unwrap());
    assert!(temporaries(&dir).is_empty());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn keep_going_covers_output_failures_and_every_error_names_its_file() {
    let dir = temp_dir("out-keepgoing");
    let inputs = dir.join("in");
    fs::create_dir_all(&inputs).unwrap();
    for n in ["a.json", "b.json", "c.json"] {
        fs::copy(fixture(INPUT), inputs.join(n)).unwrap();
    }
    let out = dir.join("out");
    fs::create_dir_all(out.join("b.json")).unwrap(); // b's output cannot be written
    ctxclean()
        .args(["filter", "--previous-cycles", "--keep-going", "--out-dir"])
        .arg(&out)
        .arg(&inputs)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("1 file of 3 failed").and(predicate::str::contains("b.json")),
        );
    assert!(out.join("a.json").is_file() && out.join("c.json").is_file());
    // Without --keep-going the run stops at it, naming it.
    fs::remove_dir_all(&out).unwrap();
    fs::create_dir_all(out.join("b.json")).unwrap();
    ctxclean()
        .args(["filter", "--previous-cycles", "--out-dir"])
        .arg(&out)
        .arg(&inputs)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("b.json"));
    // A full device, a missing TMPDIR: the error names the file.
    ctxclean()
        .args(["convert", "-o", "/dev/full"])
        .arg(fixture(INPUT))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/dev/full"));
    // A streamed input is held until it ends (a later chunk may fail), in
    // memory and then in TMPDIR.
    let stream = dir.join("s.jsonl");
    let line = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    // Larger than a chunk (256 KiB), so that it is streamed.
    fs::write(&stream, format!("{line}\n").repeat(8000)).unwrap();
    ctxclean()
        .args(["convert"])
        .arg(&stream)
        .env("TMPDIR", dir.join("missing"))
        .env("CTXCLEAN_SPOOL_BYTES", "16")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("TMPDIR").and(predicate::str::contains("missing")));
    // A document read whole is complete once read: it goes straight to
    // standard output, never through TMPDIR.
    ctxclean()
        .args(["convert"])
        .arg(fixture(INPUT))
        .env("TMPDIR", dir.join("missing"))
        .env("CTXCLEAN_SPOOL_BYTES", "16")
        .assert()
        .success()
        .stdout(fs::read_to_string(fixture(INPUT)).unwrap());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn out_dir_inside_the_inputs_is_never_read_back() {
    let dir = temp_dir("out-inside");
    fs::copy(fixture(INPUT), dir.join("a.json")).unwrap();
    let out = dir.join("cleaned");
    for _ in 0..2 {
        ctxclean()
            .args(["filter", "--previous-cycles", "--out-dir"])
            .arg(&out)
            .arg(&dir)
            .assert()
            .success()
            .stderr(predicate::str::contains("kept 5 messages"));
    }
    assert!(!out.join("cleaned").exists());
    ctxclean()
        .args(["filter", "--previous-cycles", "--out-dir"])
        .arg(&dir)
        .arg(&dir)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("use --in-place"));
    fs::remove_dir_all(dir).unwrap();
}

/// A Claude Code line of a live session: an assistant turn with thinking
/// (which `filter --drop-thinking` rewrites) and a text naming `n`.
fn live_line(n: usize) -> String {
    let parent = if n == 0 {
        Value::Null
    } else {
        json!(format!("u{}", n - 1))
    };
    let (kind, content) = if n == 0 {
        ("user", json!("start the work"))
    } else {
        (
            "assistant",
            json!([
                {"type": "thinking", "thinking": format!("thinking about step {n}"), "signature": "c2ln"},
                {"type": "text", "text": format!("marker {n} done")}
            ]),
        )
    };
    let role = kind;
    json!({"type": kind, "uuid": format!("u{n}"), "parentUuid": parent, "sessionId": "live",
           "message": {"role": role, "content": content}})
    .to_string()
        + "\n"
}

#[test]
fn lines_appended_during_in_place_runs_are_never_lost() {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let dir = temp_dir("out-append-race");
    let file = dir.join("live.jsonl");
    // A thousand lines and sixty runs: each run is a process of the
    // unoptimized build, and the window a line can land in is each commit.
    const LINES: usize = 1000;
    let first: String = (0..LINES).map(live_line).collect();
    fs::write(&file, first).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(LINES));
    // The agent: appends a line (open, append, close, as Claude Code does)
    // whenever every other run has started writing its new content, after
    // 0 to 2 ms, so that lines land in every moment of a commit. The runs
    // between write undisturbed, so some must rewrite the file: on a busy
    // machine a commit takes longer than 2 ms and a run that is written
    // into is refused every time (CI's red run: 60 of 60).
    let writer = {
        let (dir, file, stop, written) = (
            dir.to_path_buf(),
            file.clone(),
            stop.clone(),
            written.clone(),
        );
        std::thread::spawn(move || {
            let mut last = String::new();
            let mut seen = 0;
            while !stop.load(Ordering::Relaxed) {
                let tmp = fs::read_dir(&dir)
                    .unwrap()
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .find(|n| n.ends_with(".tmp"));
                match tmp {
                    Some(t) if t != last && seen % 2 == 1 => {
                        seen += 1;
                        last = t;
                    }
                    Some(t) if t != last => {
                        seen += 1;
                        let n = written.load(Ordering::Relaxed);
                        std::thread::sleep(Duration::from_micros((n as u64 * 7919) % 2000));
                        let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
                        f.write_all(live_line(n).as_bytes()).unwrap();
                        drop(f);
                        written.store(n + 1, Ordering::Relaxed);
                        last = t;
                    }
                    // A short nap, not a spin: a spinning watcher takes a
                    // core from the runs (and from every other test).
                    _ => std::thread::sleep(Duration::from_micros(50)),
                }
            }
        })
    };
    let (mut rewritten, mut refused) = (0, 0);
    for _ in 0..60 {
        let out = Command::new(bin())
            .args([
                "filter",
                "--drop-thinking",
                "--keep-thinking-turns",
                "0",
                "-q",
                "--tokenizer",
                "approx",
            ])
            .arg("--in-place")
            .arg(&file)
            .output()
            .unwrap();
        match out.status.code() {
            Some(0) => rewritten += 1,
            Some(1) => {
                let err = String::from_utf8_lossy(&out.stderr);
                let why = ["changed while processing", "open for writing by process"];
                assert!(why.iter().any(|w| err.contains(w)), "{err}");
                refused += 1;
            }
            other => panic!("{other:?}: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let n = written.load(Ordering::Relaxed);
    let text = fs::read_to_string(&file).unwrap();
    let runs = format!("{n} lines written, {rewritten} runs rewrote, {refused} refused");
    assert_eq!(text.lines().count(), n, "{runs}");
    for k in 1..n {
        let times = text.matches(&format!("\"marker {k} done\"")).count();
        assert_eq!(times, 1, "marker {k}: {runs}");
    }
    assert!(rewritten > 0 && n > LINES, "{runs}");
    assert!(temporaries(&dir).is_empty());
}

#[test]
fn nothing_written_goes_over_a_backup_the_recipe_or_an_input() {
    let (dir, file) = setup("out-writes");
    let before = fs::read(&file).unwrap();
    let recipe = dir.join("my.toml");
    let recipe_text = "[[step]]\nop = \"trim\"\nmax-tokens = 500\n";
    fs::write(&recipe, recipe_text).unwrap();
    let backup = dir.join("a.json.bak");
    let taken = dir.join("taken.json");
    let refused = |args: &[&std::ffi::OsStr], says: &str| {
        ctxclean()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    };
    let os = |p: &Path| p.as_os_str().to_owned();
    for flag in ["--report", "--report-jsonl", "--save-recipe"] {
        // The backup --in-place would make, and the one it makes when that
        // name is taken (PATH.1).
        for report in [backup.clone(), dir.join("a.json.bak.1")] {
            refused(
                &[
                    "trim".as_ref(),
                    "--max-tokens".as_ref(),
                    "500".as_ref(),
                    "--in-place".as_ref(),
                    "--backup".as_ref(),
                    ".bak".as_ref(),
                    flag.as_ref(),
                    &os(&report),
                    &os(&file),
                ],
                "the backup of",
            );
        }
        // The recipe of `apply`.
        refused(
            &[
                "apply".as_ref(),
                &os(&recipe),
                &os(&file),
                flag.as_ref(),
                &os(&recipe),
            ],
            "is the recipe",
        );
    }
    refused(
        &[
            "apply".as_ref(),
            &os(&recipe),
            &os(&file),
            "-o".as_ref(),
            &os(&recipe),
        ],
        "is the recipe",
    );
    // --prices read, then overwritten by the report.
    fs::write(&taken, "{}").unwrap();
    refused(
        &[
            "trim".as_ref(),
            "--max-tokens".as_ref(),
            "500".as_ref(),
            "--model".as_ref(),
            "gpt-4o".as_ref(),
            "--prices".as_ref(),
            &os(&taken),
            "--report".as_ref(),
            &os(&taken),
            &os(&file),
        ],
        "the --prices file",
    );
    assert_eq!(fs::read(&file).unwrap(), before);
    assert_eq!(fs::read_to_string(&recipe).unwrap(), recipe_text);
    assert_eq!(fs::read_to_string(&taken).unwrap(), "{}");
    assert!(!backup.exists());
    // Apart, all of it works, and the backup holds the original.
    ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "50",
            "--in-place",
            "--backup",
            ".bak",
            "--report",
        ])
        .arg(dir.join("r.json"))
        .arg(&file)
        .assert()
        .success();
    assert_eq!(fs::read(&backup).unwrap(), before);
}
