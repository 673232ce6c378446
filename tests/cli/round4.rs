//! Real transcripts, round 4 (issue 42): the agents of 2026 and single API
//! answers, read from real-shaped fixtures, written back byte for byte,
//! converted with their losses said.

use serde_json::Value;

use crate::util::{ctxclean, fixture};

fn stats(path: &str) -> Value {
    let out = ctxclean()
        .args(["stats", "--json", "-q"])
        .arg(fixture(path))
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn validate(path: &str) -> (bool, String) {
    let out = ctxclean()
        .args(["validate", "-q"])
        .arg(fixture(path))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn claude_stream_json_reads_its_results_subagents_and_bill() {
    for path in [
        "claude-code/stream-json.jsonl",
        "claude-code/execution-output.json",
    ] {
        let v = stats(path);
        let c = &v["conversations"][0];
        assert_eq!(c["format"], "claude-code", "{path}");
        // The execution file's tool-result turns have no role: still results.
        assert_eq!(c["tool_calls"], 3, "{path}");
        assert_eq!(c["tool_results"], 3, "{path}");
        let logged = &c["as_logged"];
        assert_eq!(logged["tokens"]["output_tokens"], 412, "{path}");
        assert_eq!(logged["cost_usd"], 0.0853126, "{path}");
        let notes = c["notes"].to_string();
        assert!(notes.contains("the prompt is not in this log"), "{path}: {notes}");
        // Every call answered: only the missing prompt is said.
        let (_, said) = validate(path);
        assert!(!said.contains("has no result"), "{path}: {said}");
        assert!(said.contains("requires the user first"), "{path}: {said}");
    }
    // The subagent's lines (parent_tool_use_id) are its own conversation.
    let v = stats("claude-code/stream-json.jsonl");
    let notes = v["conversations"][0]["notes"].to_string();
    assert!(notes.contains("4 subagent"), "{notes}");
    assert_eq!(v["conversations"][0]["messages"], 8);
}

#[test]
fn claude_code_lines_of_one_api_message_are_judged_together() {
    // A "\n\n" text block written on a line of its own, beside the other
    // blocks of its API message: valid, as the API saw them together.
    let src = std::fs::read_to_string(fixture("claude-code/stream-json.jsonl")).unwrap();
    let mut lines: Vec<Value> = src.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut blank = lines[1].clone();
    blank["message"]["content"] = serde_json::json!([{"type": "text", "text": "\n\n"}]);
    blank["uuid"] = "0a0a0a0a-0000-4000-8000-000000000001".into();
    lines.insert(2, blank.clone());
    let prompt = serde_json::json!({"type": "user", "message": {"role": "user", "content": "fix the rounding"}, "parent_tool_use_id": null, "session_id": lines[0]["session_id"], "uuid": "0a0a0a0a-0000-4000-8000-000000000002"});
    lines.insert(1, prompt);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = ctxclean()
        .args(["validate", "-q", "--from", "claude-code", "-"])
        .write_stdin(text.clone())
        .assert()
        .success();
    drop(out);
    // The same block alone in its API message is still refused.
    blank["message"]["id"] = "msg_alone".into();
    let mut alone: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    alone[3] = blank;
    let text: String = alone.iter().map(|l| format!("{l}\n")).collect();
    ctxclean()
        .args(["validate", "-q", "--from", "claude-code", "-"])
        .write_stdin(text)
        .assert()
        .code(1)
        .stdout(predicates::str::contains("non-whitespace"));
}
