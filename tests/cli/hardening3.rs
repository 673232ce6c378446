//! Hardening, round 3: the surfaces added last round under attack. Each
//! test fails on the code before the fix it names.

use std::fs;
use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::util::{ctxclean, fixture, temp_dir};

/// Every flag that names a file a run writes, as the words of a command
/// that reads `input` (a session) or `log` (a proxy log) and writes `out`.
fn writers(input: &Path, log: &Path, out: &Path) -> Vec<(&'static str, Vec<PathBuf>)> {
    let p = |s: &str| PathBuf::from(s);
    let (i, l, o) = (input.to_path_buf(), log.to_path_buf(), out.to_path_buf());
    vec![
        (
            "stats --svg",
            vec![p("stats"), i.clone(), p("--svg"), o.clone()],
        ),
        (
            "replay --chart",
            vec![
                p("replay"),
                i.clone(),
                p("--chart"),
                o.clone(),
                p("--"),
                p("trim"),
                p("--max-tokens"),
                p("300"),
            ],
        ),
        (
            "bill --svg",
            vec![p("bill"), l.clone(), p("--svg"), o.clone()],
        ),
        (
            "trim -o",
            vec![
                p("trim"),
                p("--max-tokens"),
                p("300"),
                i.clone(),
                p("-o"),
                o.clone(),
            ],
        ),
        (
            "trim --report",
            vec![
                p("trim"),
                p("--max-tokens"),
                p("300"),
                i.clone(),
                p("--report"),
                o.clone(),
                p("-q"),
            ],
        ),
        (
            "trim --report-jsonl",
            vec![
                p("trim"),
                p("--max-tokens"),
                p("300"),
                i.clone(),
                p("--report-jsonl"),
                o.clone(),
                p("-q"),
            ],
        ),
        (
            "trim --save-recipe",
            vec![
                p("trim"),
                p("--max-tokens"),
                p("300"),
                i.clone(),
                p("--save-recipe"),
                o.clone(),
                p("-q"),
            ],
        ),
    ]
}

#[test]
fn no_flag_that_names_an_output_writes_over_an_input_or_through_a_link_to_one() {
    let dir = temp_dir("h3-outputs");
    let input = dir.join("session.jsonl");
    fs::copy(fixture("claude-code/parallel-tasks.jsonl"), &input).unwrap();
    let log = dir.join("proxy.log");
    fs::copy(fixture("serve/proxy.log"), &log).unwrap();
    let link = dir.join("link.svg");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let log_link = dir.join("log-link.svg");
    std::os::unix::fs::symlink(&log, &log_link).unwrap();
    let (session, proxy_log) = (fs::read(&input).unwrap(), fs::read(&log).unwrap());
    for target in [&input, &link, &log, &log_link] {
        for (flag, args) in writers(&input, &log, target) {
            // The log is an input of `bill` only; the session of the others.
            let theirs = if flag.starts_with("bill") {
                target == &log || target == &log_link
            } else {
                target == &input || target == &link
            };
            if !theirs {
                continue;
            }
            ctxclean()
                .args(&args)
                .assert()
                .code(2)
                .stderr(predicate::str::contains("would overwrite"));
            assert_eq!(fs::read(&input).unwrap(), session, "{flag} onto {target:?}");
            assert_eq!(fs::read(&log).unwrap(), proxy_log, "{flag} onto {target:?}");
        }
    }
    // An existing file that is no input is replaced whole, as -o replaces it.
    let existing = dir.join("old.out");
    for (flag, args) in writers(&input, &log, &existing) {
        fs::write(&existing, "old").unwrap();
        ctxclean().args(&args).assert().success();
        assert_ne!(fs::read(&existing).unwrap(), b"old", "{flag}");
    }
}

#[test]
fn request_files_are_one_per_input_path_conversation_and_call() {
    let dir = temp_dir("h3-requests");
    // Kimi Code names every session's log wire.jsonl.
    for s in ["a", "b"] {
        fs::create_dir_all(dir.join(s)).unwrap();
        fs::copy(
            fixture("kimi-code/wire.jsonl"),
            dir.join(s).join("wire.jsonl"),
        )
        .unwrap();
    }
    let out = dir.join("requests");
    let replay = |extra: &[&str]| {
        let mut c = ctxclean();
        c.arg("replay")
            .arg(dir.join("a/wire.jsonl"))
            .arg(dir.join("b/wire.jsonl"))
            .arg("--write-requests")
            .arg(&out)
            .args(extra)
            .args(["--", "trim", "--max-tokens", "300"]);
        c
    };
    replay(&[]).assert().success();
    let names: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Six calls a session, none lost to a shared name.
    assert_eq!(names.len(), 12, "{names:?}");
    // A folder with files already is refused unless asked.
    replay(&[])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--replace-requests"));
    // Asked, a link among them is never written through.
    let outside = dir.join("outside.txt");
    fs::write(&outside, "mine").unwrap();
    let first = out.join(&names[0]);
    fs::remove_file(&first).unwrap();
    std::os::unix::fs::symlink(&outside, &first).unwrap();
    replay(&["--replace-requests"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("symbolic link"));
    assert_eq!(fs::read(&outside).unwrap(), b"mine");
}

#[test]
fn a_capture_replays_its_calls_and_its_request_files_hold_the_body_alone() {
    let dir = temp_dir("h3-capture");
    let out = dir.join("requests");
    ctxclean()
        .args(["replay", "--json"])
        .arg(fixture("written/proxy_capture.jsonl"))
        .arg("--write-requests")
        .arg(&out)
        .args(["--", "trim", "--max-tokens", "300"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"calls\": 0").not());
    let mut files = 0;
    for e in fs::read_dir(&out).unwrap() {
        let text = fs::read_to_string(e.unwrap().path()).unwrap();
        files += 1;
        assert!(!text.contains("x-api-key"), "{text}");
        assert!(!text.contains("headers"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["messages"].is_array(), "{text}");
    }
    assert_eq!(files, 3);
}

#[test]
fn bill_skips_bad_lines_and_implausible_figures_and_says_so() {
    let dir = temp_dir("h3-bill");
    let log = dir.join("proxy.log");
    let mut bytes = fs::read(fixture("serve/proxy.log")).unwrap();
    bytes.extend_from_slice(b"\xff\xfe not UTF-8\n");
    bytes.extend_from_slice(
        br#"{"time":1795702232,"route":"anthropic-messages","model":"claude-sonnet-4-5","billed":{"input":18446744073709551615,"cache_read":0,"cache_write":0,"output":1},"usage":"billed","dollars":1.4e13}"#,
    );
    bytes.push(b'\n');
    bytes.extend_from_slice(
        br#"{"time":-1e30,"route":"anthropic-messages","model":"claude-sonnet-4-5","dollars":0.01}"#,
    );
    bytes.push(b'\n');
    bytes.extend_from_slice(&vec![b'x'; 3 << 20]);
    bytes.push(b'\n');
    fs::write(&log, &bytes).unwrap();
    let svg = dir.join("chart.svg");
    let out = ctxclean()
        .args(["bill", "--json", "--svg"])
        .arg(&svg)
        .arg(&log)
        .assert()
        .success()
        .stderr(predicate::str::contains("2 request line(s) left out"))
        .get_output()
        .stdout
        .clone();
    let b: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(b["implausible"], 2);
    assert_eq!(
        b["skipped"], 2,
        "the line that is not UTF-8 and the long one"
    );
    let dollars = b["total"]["dollars"].as_f64().unwrap();
    assert!(dollars.is_finite() && dollars < 100.0, "{dollars}");
    let chart = fs::read_to_string(&svg).unwrap();
    assert!(
        !chart.contains("NaN") && !chart.contains("height=\"-"),
        "{chart}"
    );
}

#[test]
fn previous_cycles_keeps_the_result_just_returned_when_text_rides_with_it() {
    // Cline and Roo append environment_details to every tool result.
    let body = r#"{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[
{"role":"user","content":"fix the bug"},
{"role":"assistant","content":[{"type":"tool_use","id":"t0","name":"read","input":{"path":"old.rs"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t0","content":"OLD RESULT"},{"type":"text","text":"<environment_details>cwd</environment_details>"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"path":"a.rs"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"JUST RETURNED"},{"type":"text","text":"<environment_details>cwd</environment_details>"}]}]}"#;
    let out = ctxclean()
        .args(["filter", "--previous-cycles", "-q", "--from", "anthropic"])
        .write_stdin(body)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("JUST RETURNED"), "{out}");
    assert!(
        out.contains("OLD RESULT"),
        "the cycle began at the user's words: {out}"
    );
    assert!(out.contains("\"t1\""), "{out}");
}

#[test]
fn a_database_is_never_read_with_a_writers_uncommitted_rows() {
    let dir = temp_dir("h3-rollback");
    let db = dir.join("crush.db");
    // Rollback-journal mode (no WAL): a writer whose cache spills writes
    // rows it has not committed into the file itself.
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .execute_batch(&fs::read_to_string(fixture("crush/crush.sql")).unwrap())
        .unwrap();
    let committed = ctxclean()
        .args(["stats", "--json"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(committed.status.success());
    writer
        .execute_batch("PRAGMA cache_size=1; BEGIN; UPDATE messages SET parts = '[{\"type\":\"text\",\"data\":{\"text\":\"ROLLED BACK\"}}]';")
        .unwrap();
    for _ in 0..200 {
        writer
            .execute("INSERT INTO messages SELECT id || 'x' || abs(random()), session_id, role, parts, model, created_at, updated_at, finished_at, provider, is_summary_message FROM messages LIMIT 1", [])
            .unwrap();
    }
    // Its own temporary directory, to see that nothing is left there.
    let tmp = dir.join("tmp");
    fs::create_dir(&tmp).unwrap();
    let out = ctxclean()
        .args(["convert", "--to", "openai"])
        .arg(&db)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    // Locked while the writer spills: an error, or what was committed;
    // never the rows rolled back below.
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("ROLLED BACK"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        assert!(String::from_utf8_lossy(&out.stderr).contains("locked"));
    }
    writer.execute_batch("ROLLBACK;").unwrap();
    // And no copy of it is left behind: the database is read into memory.
    let left: Vec<_> = fs::read_dir(&tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_open_webui_loop_trimmed_leaves_no_message_its_own_parent() {
    let node = |id: &str, parent: &str, child: &str, role: &str, n: u64| serde_json::json!({"id": id, "parentId": parent, "childrenIds": [child], "role": role, "content": id.to_uppercase(), "timestamp": n});
    let (a, b, c) = (
        node("a", "c", "b", "user", 1),
        node("b", "a", "c", "assistant", 2),
        node("c", "b", "a", "user", 3),
    );
    let chat = serde_json::json!({"id": "x", "title": "t",
        "history": {"currentId": "c", "messages": {"a": a, "b": b, "c": c}},
        "messages": [a, b, c]});
    let out = ctxclean()
        .args(["trim", "--max-messages", "1", "-q", "--from", "open-webui"])
        .write_stdin(chat.to_string())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let tree = &v["history"]["messages"];
    for node in tree
        .as_object()
        .unwrap()
        .values()
        .chain(v["messages"].as_array().unwrap())
    {
        let id = node["id"].as_str().unwrap();
        assert_ne!(node["parentId"].as_str(), Some(id), "{node}");
        for child in node["childrenIds"].as_array().unwrap() {
            assert!(
                tree.get(child.as_str().unwrap()).is_some(),
                "dangling child: {node}"
            );
        }
    }
}

#[test]
fn a_log_or_body_without_end_is_refused_not_read_for_ever() {
    // /dev/zero: one line that never ends. Before, `bill` read it for ever
    // (in constant memory), and `cache-units` held it whole until memory
    // ran out.
    let wait = std::time::Duration::from_secs(60);
    ctxclean()
        .args(["bill", "/dev/zero"])
        .timeout(wait)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "reading the log /dev/zero: not a log of `ctxclean serve --log`: no line of one in its first 64 MiB",
        ));
    // Standard input from the device itself (assert_cmd's `pipe_stdin`
    // would read it whole first).
    let mut units = std::process::Command::new(assert_cmd::cargo::cargo_bin("ctxclean"))
        .args(["cache-units", "--format", "openai"])
        .stdin(fs::File::open("/dev/zero").unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while units.try_wait().unwrap().is_none() {
        if started.elapsed() > wait {
            units.kill().unwrap();
            panic!("cache-units still reads /dev/zero after {wait:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let units = units.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&units.stderr);
    assert_eq!(units.status.code(), Some(1), "{said}");
    assert!(
        said.contains("standard input, line 1: a body over 32 MiB"),
        "{said}"
    );
    // A log that starts with lines not its own is read past them, once a
    // line of the proxy's is found within the bound.
    let dir = temp_dir("h3-endless");
    let log = dir.join("proxy.log");
    let mut bytes = vec![b'x'; 3 << 20];
    bytes.push(b'\n');
    bytes.extend(fs::read(fixture("serve/proxy.log")).unwrap());
    fs::write(&log, &bytes).unwrap();
    let out = ctxclean()
        .args(["bill", "--json"])
        .arg(&log)
        .timeout(wait)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let b: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(b["skipped"], 1, "{b}");
    assert_eq!(b["total"]["requests"], 10, "{b}");
}
