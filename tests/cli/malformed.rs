//! The malformed-input suite (`fixtures/malformed/`) and `--in-place`
//! safety: located errors, exit 1, never a panic, never a half-written file.

use std::fs;
use std::path::Path;

use crate::util::{ctxclean, fixture, temp_dir};

/// Every command that reads transcripts.
const COMMANDS: &[&[&str]] = &[
    &["stats"],
    &["stats", "--json", "--by", "file"],
    &["validate"],
    &["convert", "--to", "anthropic"],
    &["filter", "--previous-cycles"],
    &["trim", "--max-tokens", "50"],
    &["compact-tools", "--max-result-tokens", "0"],
    &["summarize", "--threshold", "0"],
];

/// (file, the error's `FILE:LINE:COLUMN:` suffix, or `None` when the input is
/// acceptable as it is).
const CASES: &[(&str, Option<&str>)] = &[
    ("truncated.json", Some(":1:46: EOF while parsing a string")),
    (
        "scalar.json",
        Some(":1:1: a JSON number is not a transcript"),
    ),
    (
        "messages_not_list.json",
        Some(":1:14: \"messages\" must be a list"),
    ),
    ("no_role.json", Some(":3:3: [1]: message has no \"role\"")),
    (
        "tool_calls_not_list.json",
        Some(":3:3: [1]: \"tool_calls\" must be a list"),
    ),
    (
        "arguments_not_string.json",
        Some(":3:3: [1]: tool_calls[0]: \"arguments\" must be a JSON-encoded string"),
    ),
    ("invalid_utf8.jsonl", Some(":2:47: invalid UTF-8")),
    ("nul_byte.json", Some(":1:44: control character")),
    ("nested.json", Some(":1:132: recursion limit exceeded")),
    (
        "bad_line_middle.jsonl",
        Some(":2:48: EOF while parsing a list"),
    ),
    (
        "duplicate_key.json",
        Some(":4:3: the key \"messages\" twice in one object"),
    ),
    (
        "duplicate_key.jsonl",
        Some(":2:43: the key \"role\" twice in one object"),
    ),
    (
        "duplicate_escaped_key.jsonl",
        Some(":2:67: a key twice in one object (once written with escapes)"),
    ),
    (
        "mixed_formats.jsonl",
        Some(":61:1: this line reads as anthropic, the file as openai"),
    ),
    ("crlf.jsonl", None),
    ("bom.json", None),
    ("empty.json", None),
    ("whitespace.jsonl", None),
    // An image whose base64 holds characters past ASCII: read, no image
    // size found (its header's cut once fell inside a character: a panic).
    ("image_not_base64.json", None),
];

/// Exit 1 with the located error, or success: never a panic (101) or a
/// signal (a stack overflow aborts).
fn expect(file: &Path, args: &[&str], error: Option<&str>) {
    let out = ctxclean().args(args).arg(file).assert();
    let o = out.get_output();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let code = o.status.code();
    assert!(
        code.is_some(),
        "{args:?} {}: killed by a signal",
        file.display()
    );
    match error {
        Some(suffix) => {
            assert_eq!(code, Some(1), "{args:?} {}: {stderr}", file.display());
            let want = format!("ctxclean: {}{suffix}", file.display());
            assert!(
                stderr.starts_with(&want),
                "{args:?}: {stderr:?} does not start with {want:?}"
            );
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        }
        None => assert_eq!(code, Some(0), "{args:?} {}: {stderr}", file.display()),
    }
}

#[test]
fn malformed_inputs_fail_located_and_never_panic() {
    for (name, error) in CASES {
        let file = fixture(&format!("malformed/{name}"));
        for args in COMMANDS {
            expect(&file, args, *error);
        }
    }
}

#[test]
fn acceptable_inputs_read_as_they_should() {
    // An empty or whitespace-only input is zero conversations.
    for name in ["empty.json", "whitespace.jsonl"] {
        let out = ctxclean()
            .args(["stats", "--json"])
            .arg(fixture(&format!("malformed/{name}")))
            .assert()
            .success();
        let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["total"]["conversations"], 0, "{name}");
    }
    // CRLF and a BOM read and write back (the BOM is dropped).
    let crlf = fixture("malformed/crlf.jsonl");
    let out = ctxclean().arg("convert").arg(&crlf).assert().success();
    assert_eq!(out.get_output().stdout, fs::read(&crlf).unwrap());
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(fixture("malformed/bom.json"))
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["total"]["messages"], 1);
    // --skip-invalid reads past the bad line and keeps it in place.
    let bad = fixture("malformed/bad_line_middle.jsonl");
    let out = ctxclean()
        .args(["convert", "--skip-invalid"])
        .arg(&bad)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, fs::read(&bad).unwrap());
}

#[test]
fn a_50_mb_line() {
    let dir = temp_dir("malformed-50mb");
    let big = "x".repeat(50 << 20);
    let good = dir.join("good.jsonl");
    fs::write(
        &good,
        format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{big}\"}}]}}\n"),
    )
    .unwrap();
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(&good)
        .assert()
        .success();
    assert!(out.get_output().stdout == fs::read(&good).unwrap());
    // The same line cut short: located at its end, on line 1.
    let bad = dir.join("bad.jsonl");
    fs::write(
        &bad,
        format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{big}"),
    )
    .unwrap();
    let col = 43 + (50 << 20);
    expect(
        &bad,
        &["stats"],
        Some(&format!(":1:{col}: EOF while parsing a string")),
    );
    fs::remove_dir_all(dir).unwrap();
}

/// Ten conversations, one per line; line 9 broken when `broken`.
fn ten_lines(path: &Path, broken: bool) {
    let mut text = String::new();
    for i in 1..=10 {
        if broken && i == 9 {
            text.push_str("{\"messages\": [{\"role\": \"user\", \"content\": \n");
            continue;
        }
        text.push_str(&format!(
            "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q{i}\"}}, {{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{{\"id\": \"c{i}\", \"type\": \"function\", \"function\": {{\"name\": \"f\", \"arguments\": \"{{}}\"}}}}]}}, {{\"role\": \"tool\", \"tool_call_id\": \"c{i}\", \"content\": \"{}\"}}, {{\"role\": \"assistant\", \"content\": \"a{i}\"}}]}}\n",
            "r".repeat(2000)
        ));
    }
    fs::write(path, text).unwrap();
}

fn only(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn in_place_leaves_the_input_untouched_on_a_reader_error() {
    let dir = temp_dir("in-place-reader-error");
    let file = dir.join("log.jsonl");
    ten_lines(&file, true);
    let before = fs::read(&file).unwrap();
    ctxclean()
        .args(["filter", "--exclude-tool-calls", "--in-place"])
        .arg(&file)
        .assert()
        .code(1)
        .stderr(predicates::str::starts_with(format!(
            "ctxclean: {}:9:",
            file.display()
        )));
    assert_eq!(fs::read(&file).unwrap(), before);
    assert_eq!(only(&dir), ["log.jsonl"], "no temporary file left");
    fs::remove_dir_all(dir).unwrap();
}

#[cfg(unix)]
#[test]
fn in_place_leaves_the_input_untouched_when_writing_fails() {
    let dir = temp_dir("in-place-write-error");
    let file = dir.join("log.jsonl");
    ten_lines(&file, false);
    let before = fs::read(&file).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("ctxclean");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        // A read-only directory: the temporary file cannot be created.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
        let out = std::process::Command::new(&bin)
            .args(["filter", "--exclude-tool-calls", "--in-place"])
            .arg(&file)
            .output()
            .unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(fs::read(&file).unwrap(), before);
        assert_eq!(only(&dir), ["log.jsonl"]);
    }
    // A file size limit (which binds root too; 4 blocks, well under the
    // 20 KB output): the write fails half-way
    // with EFBIG (SIGXFSZ ignored), the temporary file is removed, the input
    // is untouched.
    let script = format!(
        "trap '' XFSZ; ulimit -f 4; exec '{}' convert --to anthropic --in-place '{}'",
        bin.display(),
        file.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("ctxclean: "), "{stderr}");
    assert_eq!(fs::read(&file).unwrap(), before);
    assert_eq!(only(&dir), ["log.jsonl"], "no temporary file left");
    // And with the limit lifted, the same command succeeds.
    ctxclean()
        .args(["convert", "--to", "anthropic", "--in-place"])
        .arg(&file)
        .assert()
        .success();
    assert_ne!(fs::read(&file).unwrap(), before);
    fs::remove_dir_all(dir).unwrap();
}

/// A message that names itself as its parent (a hand-edited or corrupted
/// export) ends the walk up the tree: `trim` finishes, and afterwards every
/// parent link names a node that is there, or none (issue 38: Open WebUI
/// spun forever).
#[test]
fn a_self_parented_node_ends_the_walk_and_no_link_dangles() {
    use serde_json::json;
    use std::time::Duration;
    let owui = json!([{"id": "c", "chat": {"history": {"currentId": "n3", "messages": {
        "n1": {"id": "n1", "parentId": null, "childrenIds": ["n2"], "role": "user", "content": "first", "timestamp": 1},
        "n2": {"id": "n2", "parentId": "n2", "childrenIds": ["n3"], "role": "assistant", "content": "second", "timestamp": 2},
        "n3": {"id": "n3", "parentId": "n2", "childrenIds": [], "role": "user", "content": "third", "timestamp": 3}}}}}]);
    let msg = |id: &str, role: &str, text: &str| json!({"id": id, "author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, "create_time": 1.0});
    let chatgpt = json!([{"title": "t", "create_time": 1.0, "current_node": "n3", "mapping": {
        "n1": {"id": "n1", "message": msg("n1", "user", "first"), "parent": null, "children": ["n2"]},
        "n2": {"id": "n2", "message": msg("n2", "assistant", "second"), "parent": "n2", "children": ["n3"]},
        "n3": {"id": "n3", "message": msg("n3", "user", "third"), "parent": "n2", "children": []}}}]);
    let lc = |id: &str, parent: &str, user: bool, text: &str| {
        json!({"messageId": id, "parentMessageId": parent, "isCreatedByUser": user,
               "sender": if user { "User" } else { "GPT-4" }, "text": text, "createdAt": "2024-05-28T18:08:55.014Z"})
    };
    let librechat = json!({"conversationId": "c", "title": "t", "exportAt": "t", "branches": false, "recursive": false,
        "messages": [lc("n1", "00000000-0000-0000-0000-000000000000", true, "first"), lc("n2", "n2", false, "second"), lc("n3", "n2", true, "third")]});
    for (format, doc) in [
        ("open-webui", owui),
        ("chatgpt", chatgpt),
        ("librechat", librechat),
    ] {
        let out = ctxclean()
            .args(["trim", "--max-messages", "1", "--from", format, "-q"])
            .write_stdin(doc.to_string())
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // (the node map, the parent key, the list of nodes when a list)
        let nodes: Vec<serde_json::Value> = match format {
            "open-webui" => v[0]["chat"]["history"]["messages"]
                .as_object()
                .unwrap()
                .values()
                .cloned()
                .collect(),
            "chatgpt" => v[0]["mapping"]
                .as_object()
                .unwrap()
                .values()
                .cloned()
                .collect(),
            _ => v["messages"].as_array().unwrap().clone(),
        };
        let (id_key, parent_key) = match format {
            "open-webui" => ("id", "parentId"),
            "chatgpt" => ("id", "parent"),
            _ => ("messageId", "parentMessageId"),
        };
        let ids: Vec<&str> = nodes.iter().filter_map(|n| n[id_key].as_str()).collect();
        for n in &nodes {
            let p = &n[parent_key];
            let ok = p.is_null()
                || p == "00000000-0000-0000-0000-000000000000"
                || ids.contains(&p.as_str().unwrap_or(""));
            assert!(ok, "{format}: {n} names a parent that is gone");
        }
    }
}

/// `ctxclean stats` fed `block` again and again on its standard input (up
/// to 1 GB, until it stops reading): its exit status, its standard error,
/// and the bytes it took.
fn stats_of_an_endless_stream(block: String) -> (Option<i32>, String, usize) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ctxclean"))
        .arg("stats")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let mut sent = 0usize;
        while sent < 1 << 30 && stdin.write_all(block.as_bytes()).is_ok() {
            sent += block.len();
        }
        sent
    });
    let out = child.wait_with_output().unwrap();
    let sent = feeder.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), err, sent)
}

/// Lines whose format cannot be told fail at the first line, after a
/// bounded sample, even when they never end (issue 38: `yes '{}'` grew to
/// 6.5 GB with no output).
#[test]
fn an_endless_stream_of_unknown_lines_fails_at_once() {
    let (code, err, sent) = stats_of_an_endless_stream("{}\n".repeat(1 << 16));
    assert_eq!(code, Some(1));
    assert!(err.contains("-:1:1: cannot tell the format"), "{err}");
    assert!(sent < 64 << 20, "{sent} bytes read before failing");
}

/// An input that opens with a byte no JSON value starts with fails at
/// that byte, before the rest is read: `yes`, or `/dev/zero`, has no line
/// break to stop at (it grew by 1 GB a second until memory ran out).
#[test]
fn an_endless_stream_that_is_not_json_fails_at_once() {
    for (what, block) in [("y", "y\n".repeat(1 << 16)), ("NUL", "\0".repeat(1 << 17))] {
        let (code, err, sent) = stats_of_an_endless_stream(block);
        assert_eq!(code, Some(1), "{what}");
        let expected = "-:1:1: expected value: not JSON or JSONL";
        assert!(err.contains(expected), "{what}: {err}");
        assert!(sent < 64 << 20, "{what}: {sent} bytes read before failing");
    }
    // Where it does not open the input, but further on, the line is named.
    let dir = temp_dir("not-json");
    let path = dir.join("padded.json");
    fs::write(&path, "  \n\n   garbage").unwrap();
    ctxclean()
        .arg("stats")
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("padded.json:3:4: expected value"));
}

/// A recursive LibreChat export nests two levels a reply: one of 400
/// replies is read, written back byte for byte and trimmed (issue 38: past
/// ~60 it failed, "recursion limit exceeded"); other documents that deep,
/// and any 100,000 deep, are still refused. (2,000 replies, the most it
/// reads, are read on an 8 MiB main thread in a debug build too: checked
/// by hand, too slow for the suite.)
#[test]
fn a_deep_librechat_export_is_read_and_hostile_nesting_is_not() {
    let mut tree = String::from("[]");
    for i in (0..400).rev() {
        let parent = if i == 0 {
            "00000000-0000-0000-0000-000000000000".to_string()
        } else {
            format!("m{}", i - 1)
        };
        tree = format!(
            "[{{\"messageId\":\"m{i}\",\"parentMessageId\":\"{parent}\",\"isCreatedByUser\":{},\"sender\":\"{}\",\"text\":\"message {i}\",\"createdAt\":\"2024-05-28T18:08:55.014Z\",\"children\":{tree}}}]",
            i % 2 == 0,
            if i % 2 == 0 { "User" } else { "GPT-4o" }
        );
    }
    let export = format!(
        "{{\"conversationId\":\"c\",\"endpoint\":\"openAI\",\"title\":\"deep\",\"exportAt\":\"t\",\"branches\":false,\"recursive\":true,\"messagesTree\":{tree}}}"
    );
    for jobs in ["1", "2"] {
        let out = ctxclean()
            .args(["convert", "-q", "-j", jobs])
            .write_stdin(export.clone())
            .assert()
            .success();
        assert!(out.get_output().stdout == export.as_bytes());
        let out = ctxclean()
            .args(["stats", "--json", "-j", jobs])
            .write_stdin(export.clone())
            .assert()
            .success();
        let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["total"]["messages"], 400);
    }
    let out = ctxclean()
        .args(["trim", "-q", "--max-messages", "3"])
        .write_stdin(export.clone())
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("message 397") && !text.contains("message 396\""),
        "{text}"
    );
    // Not a recursive export, or far too deep: refused, located.
    let plain = format!("{{\"messages\":{tree}}}");
    let hostile = format!(
        "{{\"recursive\":true,\"messagesTree\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    for (doc, says) in [
        (plain, "recursion limit exceeded"),
        (
            hostile,
            "nested deeper than the 4,096 levels ctxclean reads",
        ),
    ] {
        ctxclean()
            .arg("stats")
            .write_stdin(doc)
            .assert()
            .code(1)
            .stderr(predicates::str::contains(says));
    }
}
