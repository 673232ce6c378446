//! Bad input: exit 1 with `ctxclean: FILE:LINE:COLUMN: …`, never a panic.
//! Usage errors exit 2. A closed pipe is not an error.

use std::io::Read;
use std::process::{Command, Stdio};

use predicates::prelude::*;

use crate::util::{ctxclean, temp_dir};

fn fails_with(input: &str, expected: &str) {
    ctxclean()
        .args(["stats"])
        .write_stdin(input)
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(format!("ctxclean: {expected}")))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn malformed_inputs_are_located() {
    fails_with("{\"messages\": [\n", "-:2:1: EOF while parsing");
    fails_with("5", "-:1:1: a JSON number is not a transcript");
    fails_with("{\"messages\": 5}", "-:1:14: \"messages\" must be a list");
    fails_with("[{\"content\": \"x\"}]", "-:1:1: cannot tell the format");
    fails_with(
        "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"a\",}\n",
        "-:2:30: trailing comma",
    );
    fails_with(
        "{\"role\":\"assistant\",\"tool_calls\":{}}\n",
        "-:1:1: \"tool_calls\" must be a list",
    );
    fails_with(
        "[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{}}}]}]",
        "-:1:2: [0]: tool_calls[0]: \"arguments\" must be a JSON-encoded string",
    );
    fails_with(
        "{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":\"user\"}\n",
        "-:2:1: blank line",
    );
    fails_with("{\"role\":\"user\",\"content\":\"\u{0}\"}\n", "-:1:");
}

#[test]
fn from_names_the_format_when_detection_cannot() {
    ctxclean()
        .args(["stats", "--from", "openai"])
        .write_stdin("[{\"content\": \"x\"}]")
        .assert()
        .code(1)
        .stderr("ctxclean: -:1:2: [0]: message has no \"role\"\n");
}

#[test]
fn invalid_utf8_is_located() {
    ctxclean()
        .args(["stats"])
        .write_stdin(&b"{\"role\":\"user\",\"content\":\"\xff\"}\n"[..])
        .assert()
        .code(1)
        .stderr("ctxclean: -:1:27: invalid UTF-8 (transcripts must be UTF-8 text)\n");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    ctxclean()
        .args(["stats"])
        .write_stdin(deep)
        .assert()
        .code(1)
        .stderr(
            predicate::str::starts_with("ctxclean: -:1:")
                .and(predicate::str::contains("recursion limit")),
        );
}

#[test]
fn skip_invalid_counts_and_keeps_lines() {
    let input = "// header\n{\"role\":\"user\",\"content\":\"a\"}\n{oops\n";
    ctxclean()
        .args(["convert", "--skip-invalid"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout(input)
        .stderr(predicate::str::contains("2 invalid lines skipped"));
}

#[test]
fn files_are_named_in_errors() {
    let dir = temp_dir("errors-files");
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":7}\n",
    )
    .unwrap();
    ctxclean()
        .arg("stats")
        .arg(&bad)
        .assert()
        .code(1)
        .stderr(format!(
            "ctxclean: {}:2:1: \"role\" must be a string (--skip-invalid skips such lines)\n",
            bad.display()
        ));
    ctxclean()
        .arg("stats")
        .arg(dir.join("missing.json"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("missing.json"));
    ctxclean()
        .arg("stats")
        .arg(&dir)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.jsonl:2:1: \"role\""));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn failed_output_leaves_no_partial_file() {
    let dir = temp_dir("errors-output");
    let out = dir.join("out.json");
    std::fs::write(&out, "previous").unwrap();
    ctxclean()
        .args(["convert", "-o"])
        .arg(&out)
        .write_stdin("{\"messages\": [")
        .assert()
        .code(1);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    ctxclean()
        .args(["stats", "--no-such-flag"])
        .assert()
        .code(2);
    ctxclean()
        .args(["stats", "--tokenizer", "gpt2"])
        .assert()
        .code(2);
    ctxclean()
        .args(["convert", "--to", "nope"])
        .assert()
        .code(2);
    ctxclean().assert().code(2);
}

#[test]
fn closed_pipe_is_not_an_error() {
    let line = "{\"role\":\"user\",\"content\":\"a fairly long line of text to fill the pipe\"}\n";
    let dir = temp_dir("errors-pipe");
    let input = dir.join("big.jsonl");
    std::fs::write(&input, line.repeat(50_000)).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ctxclean"))
        .args(["convert", "-q"])
        .arg(&input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "exit {status:?}, stderr {stderr}");
    assert_eq!(stderr, "");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_forced_format_no_record_is_of_is_an_error_not_an_empty_output() {
    // Issue 29: `--from gemini` on a Codex log exited 0 with 0 messages,
    // and `convert` wrote nothing.
    for cmd in ["stats", "convert"] {
        ctxclean()
            .args([cmd, "--from", "gemini", "fixtures/codex/rollout.jsonl"])
            .assert()
            .code(1)
            .stdout("")
            .stderr(predicates::str::contains(
                "rollout.jsonl:1:1: no record is a gemini message (the first has: timestamp, type, payload)",
            ));
    }
}

#[test]
fn a_jsonl_line_with_no_record_of_the_forced_format_is_an_error_too() {
    // A JSONL line of conversations was read from its value without the
    // check a JSON document gets: `--from openai` read a line of records
    // none of which is an OpenAI message as an empty conversation, exit 0.
    let dir = temp_dir("forced-jsonl");
    let path = dir.join("chats.jsonl");
    std::fs::write(
        &path,
        "{\"messages\":[{\"role\":\"exit\",\"content\":\"x\"}]}\n\
         {\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n",
    )
    .unwrap();
    ctxclean()
        .args(["stats", "--from", "openai"])
        .arg(&path)
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicates::str::contains(
            "chats.jsonl:1:1: no record is a openai message",
        ));
}

#[test]
fn an_unknown_file_names_no_format_it_shares_nothing_with() {
    // Issue 29: "the closest is grok" for a file with nothing of grok's.
    let dir = temp_dir("unknown-keys");
    let path = dir.join("x.json");
    std::fs::write(&path, r#"{"foo": 1, "bar": [{"x": 1}]}"#).unwrap();
    ctxclean()
        .arg("stats")
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "cannot tell the format: no format ctxclean reads has these keys (foo, bar)",
        ))
        .stderr(predicates::str::contains("closest").not());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `serve --max-connections` past what a semaphore holds, or a timeout
/// past what the clock can add, is a usage error, not a panic (at start in
/// tokio's `Semaphore::new`; at the first request, a deadline overflowing
/// `Instant`).
#[test]
fn absurd_serve_bounds_are_usage_errors() {
    let huge = "18446744073709551615";
    let cases = [
        ("--max-connections", "0"),
        ("--max-connections", "1000001"),
        ("--max-connections", huge),
        ("--header-timeout", huge),
        ("--body-timeout", huge),
        ("--clean-timeout", huge),
        ("--connect-timeout", huge),
        ("--timeout", "100000001"),
    ];
    for (flag, n) in cases {
        ctxclean()
            .args(["serve", "--upstream", "http://127.0.0.1:9"])
            .args(["--listen", "127.0.0.1:0", flag, n])
            .args(["--", "trim", "--max-tokens", "100"])
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(flag));
    }
}
