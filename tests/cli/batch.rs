//! Batch work: directory trees, `--out-dir`, `--in-place`, `--keep-going`,
//! order under `--jobs`, streamed JSONL, and the progress bar.

use std::fs;
use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::{json, Value};

use crate::util::{ctxclean, fixture, temp_dir};

/// A tree of mixed inputs:
///
/// ```text
/// in/a.json              analyst session (JSON document)
/// in/notes.txt           not a transcript (not matched)
/// in/.hidden/h.json      hidden (skipped unless --hidden)
/// in/sub/b.jsonl         LLaMA-Factory JSONL (a conversation per line)
/// in/sub/deep/c.jsonl    Claude Code session (messages per line)
/// ```
fn tree(name: &str) -> crate::util::TempDir {
    let dir = temp_dir(name);
    let root = dir.join("in");
    for (from, to) in [
        ("written/analyst_session.json", "a.json"),
        ("written/analyst_session.json", ".hidden/h.json"),
        ("llama-factory/reason_tool_use_demo_8.jsonl", "sub/b.jsonl"),
        ("claude-code/viewer-session.jsonl", "sub/deep/c.jsonl"),
    ] {
        let to = root.join(to);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(fixture(from), to).unwrap();
    }
    fs::write(root.join("notes.txt"), "not a transcript\n").unwrap();
    dir
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(
                    p.strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    out.sort();
    out
}

#[test]
fn out_dir_mirrors_the_tree() {
    let dir = tree("batch-out-dir");
    let out = dir.join("out");
    ctxclean()
        .args(["trim", "--max-tokens", "300", "--out-dir"])
        .arg(&out)
        .arg(dir.join("in"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "\nctxclean trim: 10 conversations",
        ));
    assert_eq!(
        files_under(&out),
        ["a.json", "sub/b.jsonl", "sub/deep/c.jsonl"]
    );
    // Each output is what the file alone gives.
    for f in ["a.json", "sub/b.jsonl", "sub/deep/c.jsonl"] {
        let alone = ctxclean()
            .args(["trim", "--max-tokens", "300", "-q"])
            .arg(dir.join("in").join(f))
            .assert()
            .success();
        assert_eq!(
            fs::read(out.join(f)).unwrap(),
            alone.get_output().stdout,
            "{f}"
        );
    }
    // --hidden and --glob choose other files.
    let out2 = dir.join("out2");
    ctxclean()
        .args(["convert", "-q", "--hidden", "--glob", "*.json", "--out-dir"])
        .arg(&out2)
        .arg(dir.join("in"))
        .assert()
        .success();
    assert_eq!(files_under(&out2), [".hidden/h.json", "a.json"]);
    let out3 = dir.join("out3");
    ctxclean()
        .args(["convert", "-q", "--glob", "sub/**/*.jsonl", "--out-dir"])
        .arg(&out3)
        .arg(dir.join("in"))
        .assert()
        .success();
    assert_eq!(files_under(&out3), ["sub/b.jsonl", "sub/deep/c.jsonl"]);
    // Unchanged inputs come back byte for byte.
    assert_eq!(
        fs::read(out3.join("sub/deep/c.jsonl")).unwrap(),
        fs::read(dir.join("in/sub/deep/c.jsonl")).unwrap()
    );
    fs::remove_dir_all(dir).unwrap();
}

/// A directory walk reads regular files only: a FIFO could wait for ever,
/// a device never end. What it passes over that its globs match (a FIFO,
/// a link to nothing), or a link to a directory it does not follow, is
/// said on standard error and in the report, never dropped without a word.
#[test]
fn what_a_walk_passes_over_is_said() {
    let dir = tree("batch-passed-over");
    let root = dir.join("in");
    let status = std::process::Command::new("mkfifo")
        .arg(root.join("live.jsonl"))
        .status()
        .unwrap();
    assert!(status.success());
    std::os::unix::fs::symlink(root.join("gone.json"), root.join("dangling.json")).unwrap();
    std::os::unix::fs::symlink(root.join("sub"), root.join("linked")).unwrap();
    // Not matched by the globs: not said.
    std::os::unix::fs::symlink(root.join("gone.txt"), root.join("dangling.txt")).unwrap();
    let report = dir.join("report.json");
    let run = ctxclean()
        .args(["convert", "-q", "--report"])
        .arg(&report)
        .arg("--out-dir")
        .arg(dir.join("out"))
        .arg(&root)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    let said = [
        format!(
            "{}: passed over: a FIFO, not a regular file (name it to read it)",
            root.join("live.jsonl").display()
        ),
        format!(
            "{}: passed over: a broken link: No such file",
            root.join("dangling.json").display()
        ),
        format!(
            "{}: passed over: a link to a directory (a walk follows links to files only)",
            root.join("linked").display()
        ),
    ];
    for line in &said {
        assert!(
            stderr.contains(&format!("ctxclean convert: note: {line}")),
            "{line}\n{stderr}"
        );
    }
    assert!(!stderr.contains("dangling.txt"), "{stderr}");
    let notes: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    let notes: Vec<&str> = notes["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for line in &said {
        assert!(
            notes.iter().any(|n| n.starts_with(line.as_str())),
            "{line}\n{notes:?}"
        );
    }
    // The files it took are read as before; `stats --json` lists the rest in its total.
    let stats = ctxclean()
        .args(["stats", "--json"])
        .arg(&root)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let stats: Value = serde_json::from_slice(&stats.get_output().stdout).unwrap();
    assert_eq!(stats["conversations"].as_array().unwrap().len(), 10);
    assert_eq!(
        stats["total"]["passed_over"].as_array().unwrap().len(),
        3,
        "{stats}"
    );
}

#[test]
fn in_place_with_backup_keeps_permissions() {
    let dir = tree("batch-in-place");
    let root = dir.join("in");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(root.join("a.json"), fs::Permissions::from_mode(0o640)).unwrap();
    }
    let before_a = fs::read(root.join("a.json")).unwrap();
    let before_b = fs::read(root.join("sub/b.jsonl")).unwrap();
    ctxclean()
        .args([
            "filter",
            "--exclude-tool-calls",
            "--in-place",
            "--backup",
            ".orig",
        ])
        .arg(&root)
        .assert()
        .success();
    assert_eq!(fs::read(root.join("a.json.orig")).unwrap(), before_a);
    assert_eq!(fs::read(root.join("sub/b.jsonl.orig")).unwrap(), before_b);
    let a: Value = serde_json::from_slice(&fs::read(root.join("a.json")).unwrap()).unwrap();
    assert!(a["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["role"] != "tool" && m.get("tool_calls").is_none()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(root.join("a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
    }
    // No temporary files are left behind.
    assert!(files_under(&root).iter().all(|f| !f.contains(".tmp")));
    // --in-place needs files.
    ctxclean()
        .args(["convert", "--in-place"])
        .write_stdin("{}")
        .assert()
        .code(2);
    fs::remove_dir_all(dir).unwrap();
}

fn break_file(root: &Path) -> PathBuf {
    let bad = root.join("sub/broken.jsonl");
    fs::write(
        &bad,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n{\"messages\": [{\"role\": 5}]}\n",
    )
    .unwrap();
    bad
}

#[test]
fn keep_going_skips_a_broken_file_and_exits_1() {
    let dir = tree("batch-keep-going");
    let root = dir.join("in");
    let bad = break_file(&root);
    let before_bad = fs::read(&bad).unwrap();
    let out = dir.join("out");
    ctxclean()
        .args(["trim", "--max-tokens", "300", "--keep-going", "--out-dir"])
        .arg(&out)
        .arg(&root)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("1 file of 4 failed:"))
        .stderr(predicate::str::contains(format!("{}:2:", bad.display())));
    assert_eq!(
        files_under(&out),
        ["a.json", "sub/b.jsonl", "sub/deep/c.jsonl"]
    );

    // In place: the broken file is untouched, the others are rewritten.
    ctxclean()
        .args(["trim", "--max-tokens", "300", "--keep-going", "--in-place"])
        .arg(&root)
        .assert()
        .code(1);
    assert_eq!(fs::read(&bad).unwrap(), before_bad);
    assert_eq!(
        fs::read(root.join("a.json")).unwrap(),
        fs::read(out.join("a.json")).unwrap()
    );

    // Without --keep-going the run stops at the broken file: what came before
    // is written, the broken file's output is not, nor what comes after.
    let stop = dir.join("stop");
    ctxclean()
        .args(["trim", "--max-tokens", "300", "--out-dir"])
        .arg(&stop)
        .arg(dir.join("in/a.json"))
        .arg(&bad)
        .arg(dir.join("in/sub/b.jsonl"))
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(format!(
            "ctxclean: {}:2:",
            bad.display()
        )));
    assert_eq!(files_under(&stop), ["a.json"]);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn several_documents_need_an_out_dir() {
    let dir = tree("batch-stdout");
    ctxclean()
        .arg("convert")
        .arg(dir.join("in"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("use --out-dir DIR or --in-place"));
    // JSONL inputs share standard output, in order.
    let both = ctxclean()
        .args(["convert", "-j", "2"])
        .arg(dir.join("in/sub"))
        .assert()
        .success();
    let mut want = fs::read(dir.join("in/sub/b.jsonl")).unwrap();
    want.extend(fs::read(dir.join("in/sub/deep/c.jsonl")).unwrap());
    assert_eq!(both.get_output().stdout, want);
    fs::remove_dir_all(dir).unwrap();
}

/// A JSONL file of `n` conversations, several megabytes: many chunks.
fn big_jsonl(path: &Path, n: usize, crlf: bool) {
    let mut text = String::new();
    let eol = if crlf { "\r\n" } else { "\n" };
    for i in 0..n {
        let conv = json!({"id": i, "messages": [
            {"role": "system", "content": "You answer from the database."},
            {"role": "user", "content": format!("question {i}: {}", "how many rows? ".repeat(20))},
            {"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function",
                "function": {"name": "run_sql", "arguments": "{\"q\": \"select 1\"}"}}]},
            {"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("[{}]", vec!["{\"row\": 1}"; 60].join(", "))},
            {"role": "assistant", "content": format!("answer {i} 数据 😀")},
        ]});
        text.push_str(&conv.to_string());
        text.push_str(eol);
    }
    text.push_str(eol); // a trailing blank line is the file's tail
    fs::write(path, text).unwrap();
}

#[test]
fn streamed_jsonl_is_lossless_ordered_and_located() {
    let dir = temp_dir("batch-stream");
    let big = dir.join("big.jsonl");
    big_jsonl(&big, 6000, false);
    assert!(
        fs::metadata(&big).unwrap().len() > 4 << 20,
        "several chunks"
    );
    // Unchanged: byte for byte, whatever the jobs.
    for jobs in ["1", "2"] {
        let out = ctxclean()
            .args(["convert", "-q", "-j", jobs])
            .arg(&big)
            .assert()
            .success();
        assert!(
            out.get_output().stdout == fs::read(&big).unwrap(),
            "jobs {jobs}"
        );
    }
    // Changed: the same with 1 and 2 jobs, and conversation indices count
    // over the whole file.
    let run = |jobs: &str| {
        let report = dir.join(format!("r{jobs}.json"));
        let out = ctxclean()
            .args(["filter", "--exclude-tool-calls", "-j", jobs, "--report"])
            .arg(&report)
            .arg(&big)
            .assert()
            .success();
        let r: Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
        (out.get_output().stdout.clone(), r)
    };
    let (one, r1) = run("1");
    let (two, r2) = run("2");
    assert!(one == two);
    assert_eq!(r1["conversations"], r2["conversations"]);
    let indices: Vec<u64> = r2["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, (0..6000).collect::<Vec<u64>>());
    let lines: Vec<&[u8]> = one.split(|&b| b == b'\n').collect();
    assert_eq!(
        lines.len(),
        6002,
        "6000 lines, the blank tail line, the end"
    );
    let last: Value = serde_json::from_slice(lines[5999]).unwrap();
    assert_eq!(last["id"], 5999);
    assert_eq!(last["messages"].as_array().unwrap().len(), 3);
    fs::remove_dir_all(dir).unwrap();
}

/// The other half of the streamed file's checks (one test took 20 s of the
/// debug suite beside the others): stats agree whatever the jobs, an error
/// deep in the file names its line, CRLF files stream.
#[test]
fn streamed_jsonl_counts_alike_and_names_a_bad_lines_number() {
    let dir = temp_dir("batch-stream-stats");
    let big = dir.join("big.jsonl");
    big_jsonl(&big, 6000, false);
    // stats: the same with 1 and 2 jobs.
    let stats = |jobs: &str| {
        ctxclean()
            .args(["stats", "--json", "-j", jobs])
            .arg(&big)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone()
    };
    assert!(stats("1") == stats("2"));

    // An error deep in the file names its line.
    let mut text = fs::read_to_string(&big).unwrap();
    let at = text.match_indices('\n').nth(4999).unwrap().0 + 1;
    text.insert_str(at, "{\"messages\": 5}\n");
    fs::write(&big, &text).unwrap();
    ctxclean()
        .args(["stats", "-j", "2"])
        .arg(&big)
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(format!(
            "ctxclean: {}:5001:",
            big.display()
        )));
    // CRLF files stream too.
    big_jsonl(&big, 3000, true);
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(&big)
        .assert()
        .success();
    assert!(out.get_output().stdout == fs::read(&big).unwrap());
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn stats_by_file_and_totals() {
    let dir = tree("batch-stats");
    let out = ctxclean()
        .args(["stats", "--by", "file"])
        .arg(dir.join("in"))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let root = dir.join("in");
    for (f, convs) in [("a.json", 1), ("sub/b.jsonl", 8), ("sub/deep/c.jsonl", 1)] {
        let head = format!(
            "{} · {}",
            root.join(f).display(),
            if convs == 1 {
                "1 conversation".to_string()
            } else {
                format!("{convs} conversations")
            }
        );
        assert!(text.contains(&head), "{head} in\n{text}");
    }
    assert!(
        text.ends_with("total: 10 conversations, 114 messages, 9,453 tokens (o200k_base)\n"),
        "{text}"
    );
    let json = ctxclean()
        .args(["stats", "--by", "file", "--json"])
        .arg(dir.join("in"))
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    assert_eq!(v["total"]["tokens"], 9453);
    let per_conv = ctxclean()
        .args(["stats", "--json"])
        .arg(dir.join("in"))
        .assert()
        .success();
    let v2: Value = serde_json::from_slice(&per_conv.get_output().stdout).unwrap();
    assert_eq!(v2["conversations"].as_array().unwrap().len(), 10);
    assert_eq!(v2["total"], v["total"]);
    fs::remove_dir_all(dir).unwrap();
}

/// Runs ctxclean with its standard error on a fresh pseudo-terminal and
/// returns what it wrote there.
#[cfg(unix)]
fn on_terminal(args: &[&str]) -> String {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the two integers.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (mut master, slave) =
        unsafe { (fs::File::from_raw_fd(master), fs::File::from_raw_fd(slave)) };
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ctxclean"))
        .args(args)
        .env("CTXCLEAN_PROGRESS_DELAY_MS", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(slave)
        .spawn()
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // Reading ends with EIO once the child has closed the terminal.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    });
    assert!(child.wait().unwrap().success());
    String::from_utf8_lossy(&reader.join().unwrap()).to_string()
}

#[cfg(unix)]
#[test]
fn progress_bar_on_a_terminal_never_on_a_pipe() {
    let dir = temp_dir("batch-progress");
    let big = dir.join("big.jsonl");
    big_jsonl(&big, 3000, false);
    let big = big.display().to_string();
    // On a terminal, the bar shows: files, bytes, conversations, tokens.
    let seen = on_terminal(&["stats", "--by", "file", &big]);
    for part in [
        "/1 files · ",
        " conversations · ",
        " tokens · ETA",
        "MiB/4.37 MiB",
    ] {
        assert!(seen.contains(part), "{part} not in {seen:?}");
    }
    let seen = on_terminal(&["trim", "--max-tokens", "100", &big]);
    assert!(seen.contains(" → "), "tokens before → after: {seen:?}");
    // -q silences it on a terminal too.
    let seen = on_terminal(&["convert", "-q", &big]);
    assert!(seen.is_empty(), "{seen:?}");
    // On a pipe, nothing but the report.
    let out = ctxclean()
        .args(["stats", "--by", "file", &big])
        .env("CTXCLEAN_PROGRESS_DELAY_MS", "0")
        .assert()
        .success();
    assert!(out.get_output().stderr.is_empty());
    fs::remove_dir_all(dir).unwrap();
}
