//! Issue 15: `trim` and `summarize` on real agent sessions in the formats
//! whose API wants the user first. Budgets below the first prompt leave a
//! conversation that is not empty, valid for its provider, within budget or
//! flagged, that reads back as the same format; a Claude Code session keeps
//! an unbroken `parentUuid` chain.

use ctxclean::format::{read_document, ReadOptions};
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::Role;
use serde_json::Value;

use crate::trim::chain_problems;
use crate::util::{ctxclean, fixture, temp_dir};

/// Real sessions (and a request) of every user-first format, with the
/// format each must read back as.
const SESSIONS: [(&str, &str); 12] = [
    ("claude-code/viewer-session.jsonl", "claude-code"),
    ("claude-code/sidechains.jsonl", "claude-code"),
    ("claude-code/parallel-tasks.jsonl", "claude-code"),
    ("claude-code/loglines.json", "claude-code"),
    ("cline/api_conversation_history.json", "cline"),
    ("cline/xml-tools.json", "cline"),
    ("gemini/cli-session.json", "gemini"),
    ("gemini/cli-session.jsonl", "gemini"),
    ("gemini/history.json", "gemini"),
    ("written/anthropic_request.json", "anthropic"),
    ("exports/claude-ai.json", "claude-ai"),
    ("exports/aistudio.json", "aistudio"),
];

/// The tokens of the first user message that is not a tool result.
fn first_prompt_tokens(path: &str) -> usize {
    let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
    let bytes = std::fs::read(fixture(path)).unwrap();
    let doc = read_document(path, bytes, &ReadOptions::default()).unwrap();
    let conv = &doc.conversations[0];
    let first = conv
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .expect("a user message");
    tok.count_message(first)
}

fn input(path: &str) -> String {
    std::fs::read_to_string(fixture(path)).unwrap()
}

fn stats(bytes: &[u8]) -> Value {
    let out = ctxclean()
        .args(["stats", "--json", "-"])
        .write_stdin(bytes.to_vec())
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn trim_below_the_first_prompt_leaves_a_valid_tail() {
    let dir = temp_dir("agents-trim");
    let report = dir.join("report.json");
    let mut checked = 0;
    for (path, format) in SESSIONS {
        let first = first_prompt_tokens(path);
        for budget in [1, 20, 60, first.saturating_sub(1).max(2)] {
            let out = ctxclean()
                .args(["trim", "--max-tokens", &budget.to_string(), "--report"])
                .arg(&report)
                .arg(fixture(path))
                .assert()
                .success();
            let stdout = out.get_output().stdout.clone();
            let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
            let what = format!("{path} at {budget} tokens");
            // Not empty, and the same format.
            let s = stats(&stdout);
            let conv = &s["conversations"][0];
            assert_eq!(conv["format"], format, "{what}");
            let says: u64 = ["user", "assistant", "tool"]
                .iter()
                .filter_map(|r| conv["by_role"][r]["messages"].as_u64())
                .sum();
            assert!(says > 0, "{what}: nothing left\n{stderr}");
            // Valid for its provider.
            ctxclean()
                .args(["validate", "-"])
                .write_stdin(stdout.clone())
                .assert()
                .success();
            // Within budget, or flagged in the report and told on stderr.
            let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
            let flagged = r["conversations"][0]["over_budget"] == true;
            let tokens = conv["tokens"].as_u64().unwrap() as usize;
            assert!(
                tokens <= budget || flagged,
                "{what}: {tokens} tokens, not flagged"
            );
            if flagged {
                assert!(
                    stderr.contains("ctxclean trim: warning: ")
                        && stderr.contains("conversation 0: over budget"),
                    "{what}: {stderr}"
                );
            }
            // The budget is below the first prompt: something was trimmed,
            // and a tail that does not open with the user got a placeholder.
            assert!(r["total"]["removed"].as_u64().unwrap() > 0, "{what}");
            if format == "claude-code" {
                let text = String::from_utf8(stdout.clone()).unwrap();
                let problems = chain_problems(&input(path), &text);
                assert!(problems.is_empty(), "{what}: {problems:?}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, SESSIONS.len() * 4);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_placeholder_is_one_user_line_in_the_session() {
    // A Claude Code session trimmed to its last answer: the new line opens
    // the kept tail, names what it stands for, and joins the chain.
    let out = ctxclean()
        .args(["trim", "--max-tokens", "200"])
        .arg(fixture("claude-code/viewer-session.jsonl"))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = lines
        .iter()
        .find(|l| l["type"] == "user" || l["type"] == "assistant")
        .unwrap();
    assert_eq!(first["type"], "user");
    let said = first["message"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.starts_with("[Earlier conversation trimmed: ") && said.ends_with(" tokens]"),
        "{said}"
    );
    for key in ["uuid", "sessionId", "timestamp", "cwd", "version"] {
        assert!(
            first.get(key).is_some(),
            "the new line has no {key}: {first}"
        );
    }
    let uuid = first["uuid"].as_str().unwrap();
    assert!(lines.iter().any(|l| l["parentUuid"] == uuid));
    assert!(chain_problems(&input("claude-code/viewer-session.jsonl"), &text).is_empty());
    // Trimming the output again changes nothing.
    ctxclean()
        .args(["trim", "--max-tokens", "200"])
        .write_stdin(text.clone())
        .assert()
        .success()
        .stdout(text);
}

#[test]
fn no_placeholder_drops_to_the_user_and_says_so() {
    let out = ctxclean()
        .args(["trim", "--max-tokens", "20", "--no-placeholder"])
        .arg(fixture("cline/api_conversation_history.json"))
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let msgs = v.as_array().unwrap();
    assert_eq!(msgs[0]["role"], "user");
    assert!(!msgs[0].to_string().contains("Earlier conversation trimmed"));
    // Over budget: the active cycle and the user message it answers, flagged.
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("over budget"), "{stderr}");
    ctxclean()
        .args([
            "trim",
            "--no-placeholder",
            "--start-on",
            "user",
            "--max-tokens",
            "9",
        ])
        .arg(fixture("cline/api_conversation_history.json"))
        .assert()
        .code(2);
}

#[test]
fn summarize_keeps_agent_sessions_valid() {
    for (path, format) in SESSIONS {
        let out = ctxclean()
            .args(["summarize", "--threshold", "50", "--keep", "2"])
            .arg(fixture(path))
            .assert()
            .success();
        let stdout = out.get_output().stdout.clone();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            stderr.starts_with("ctxclean summarize: "),
            "{path}: {stderr}"
        );
        let s = stats(&stdout);
        assert_eq!(s["conversations"][0]["format"], format, "{path}");
        ctxclean()
            .args(["validate", "-"])
            .write_stdin(stdout.clone())
            .assert()
            .success();
        if format == "claude-code" {
            let text = String::from_utf8(stdout).unwrap();
            let problems = chain_problems(&input(path), &text);
            assert!(problems.is_empty(), "{path}: {problems:?}");
        }
    }
}

#[test]
fn a_filter_that_removes_everything_says_so() {
    let dir = temp_dir("agents-filter");
    let report = dir.join("report.json");
    let out = ctxclean()
        .args([
            "filter",
            "--exclude-roles",
            "user,assistant,tool",
            "--report",
        ])
        .arg(&report)
        .arg(fixture("gemini/cli-session.json"))
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["conversations"][0]["emptied"], true);
    std::fs::remove_dir_all(dir).unwrap();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("ctxclean filter: warning: ")
            && stderr.contains(
                "conversation 0: no messages left (every message was removed by exclude-roles)"
            )
            && stderr.contains("1 conversation left with no messages"),
        "{stderr}"
    );
}

#[test]
fn a_real_task_as_an_anthropic_request_trims_to_a_valid_one() {
    // The Cline task's messages are Anthropic's: as a request body, the
    // same rules hold.
    let out = ctxclean()
        .args(["convert", "--to", "anthropic"])
        .arg(fixture("cline/api_conversation_history.json"))
        .assert()
        .success();
    let request = out.get_output().stdout.clone();
    for budget in [1, 30, 100, 300] {
        let out = ctxclean()
            .args(["trim", "--max-tokens", &budget.to_string()])
            .write_stdin(request.clone())
            .assert()
            .success();
        let trimmed = out.get_output().stdout.clone();
        let v: Value = serde_json::from_slice(&trimmed).unwrap();
        assert_eq!(v["messages"][0]["role"], "user", "{budget}: {v}");
        assert_eq!(stats(&trimmed)["conversations"][0]["format"], "anthropic");
        ctxclean()
            .args(["validate", "-"])
            .write_stdin(trimmed)
            .assert()
            .success();
    }
}
