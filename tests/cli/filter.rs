//! `ctxclean filter`: the seed examples, the CLI, and properties over
//! generated transcripts with random rule combinations.

use ctxclean::ops::filter::{filter, FilterSpec};
use ctxclean::pairs::pair_problems;
use ctxclean::transcript::{Conversation, Role};
use proptest::prelude::*;
use serde_json::Value;

use crate::util::ctxclean;

fn stdout_json(args: &[&str]) -> Value {
    serde_json::from_slice(&ctxclean().args(args).assert().success().get_output().stdout).unwrap()
}

#[test]
fn previous_cycles_seed_example() {
    // The second query's model call sees only the first query's user
    // message and final text answer, and the cycle in progress.
    let out = ctxclean()
        .args(["filter", "--previous-cycles", "fixtures/written/two_queries.json"])
        .assert()
        .success()
        .stderr("ctxclean filter: previous cycles: 1 empty assistant removed, 1 tool message; kept 5 messages, −26 tokens\n");
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let texts: Vec<String> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}:{}",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or("<calls>")
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user:weather in Paris?",
            "assistant:18C in Paris.",
            "user:and Rome?",
            "assistant:<calls>",
            "tool:{\"temp_c\":22}"
        ]
    );
}

#[test]
fn agent_memory_keeps_what_pm_heard() {
    let out = ctxclean()
        .args([
            "filter",
            "--agent",
            "pm",
            "--chat-id",
            "chat-1",
            "fixtures/written/agent_memory.jsonl",
        ])
        .assert()
        .success();
    let lines: Vec<Value> = String::from_utf8(out.get_output().stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let contents: Vec<&str> = lines
        .iter()
        .map(|l| l["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            "You are pm, the project manager.",
            "Hello team, we start today.",
            "@pm please plan the release.",
            "@dev start with the login page.",
            "@pm login page done, see the PR.",
            "It is raining in the office."
        ]
    );
    // Kept lines are written back byte for byte, unknown fields and all.
    let input = std::fs::read_to_string("fixtures/written/agent_memory.jsonl").unwrap();
    let out_text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(out_text.lines().all(|l| input.lines().any(|i| i == l)));
}

#[test]
fn report_lists_each_change_with_its_rule() {
    let dir = crate::util::temp_dir("filter-report");
    let report = dir.join("r.json");
    ctxclean()
        .args([
            "filter",
            "--previous-cycles",
            "--exclude-tool-calls",
            "-q",
            "fixtures/functionary/test_case.json",
            "--report",
        ])
        .arg(&report)
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    insta::assert_snapshot!(
        serde_json::to_string_pretty(&r["conversations"][0]["changes"]).unwrap()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn rules_on_other_formats() {
    // Claude Code: thinking blocks, images in results, tool pairs across lines.
    let v = stdout_json(&[
        "stats",
        "--json",
        "fixtures/claude-code/screenshot-session.jsonl",
    ]);
    let images = v["total"]["images"].as_u64().unwrap();
    assert!(images > 0);
    let out = ctxclean()
        .args([
            "filter",
            "--strip-processed-images",
            "--drop-thinking",
            "fixtures/claude-code/screenshot-session.jsonl",
        ])
        .assert()
        .success();
    let after: Value = serde_json::from_slice(
        &ctxclean()
            .args(["stats", "--json"])
            .write_stdin(out.get_output().stdout.clone())
            .assert()
            .success()
            .get_output()
            .stdout,
    )
    .unwrap();
    assert!(after["total"]["images"].as_u64().unwrap() <= images);
    // Open WebUI: excluding tool calls removes the embedded blocks.
    let out = ctxclean()
        .args([
            "filter",
            "--exclude-tool-calls",
            "fixtures/written/open_webui_tool_calls.json",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(!text.contains("tool_calls\\\""), "embedded calls remain");
    assert!(text.contains("Both queries failed."));
}

#[test]
fn usage_errors() {
    ctxclean()
        .args(["filter", "--chat-id", "x"])
        .assert()
        .code(2);
    for bad in ["=path", "tool=", ""] {
        ctxclean()
            .args(["filter", "--supersede", bad])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(
                "expected TOOL=ARG, TOOL=* or TOOL",
            ));
    }
    ctxclean()
        .args(["filter", "--keep-thinking-turns", "2"])
        .assert()
        .code(2);
}

fn spec() -> impl Strategy<Value = FilterSpec> {
    (
        (
            any::<bool>(),
            prop::option::of(prop::sample::select(vec!["pm", "dev"])),
            any::<bool>(),
            any::<bool>(),
        ),
        (any::<bool>(), any::<bool>(), 0..3usize),
        (
            prop::option::of(prop::sample::subsequence(
                vec![Role::System, Role::User, Role::Assistant, Role::Tool],
                1..4,
            )),
            prop::sample::subsequence(
                vec![Role::System, Role::User, Role::Assistant, Role::Tool],
                0..2,
            ),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (previous_cycles, agent, supersede, images),
                (dedupe, thinking, keep),
                (include_roles, exclude_roles, tools, all_tools),
            )| {
                FilterSpec {
                    previous_cycles,
                    agent: agent.map(str::to_string),
                    supersede: if supersede {
                        vec![
                            ("lookup".into(), "q".into()),
                            ("lookup".into(), "*".into()),
                            ("lookup".into(), String::new()),
                        ]
                    } else {
                        vec![]
                    },
                    strip_processed_images: images,
                    dedupe_tool_results: dedupe,
                    drop_thinking: thinking,
                    keep_thinking_turns: keep,
                    include_roles,
                    exclude_roles,
                    exclude_tools: if tools { vec!["lookup".into()] } else { vec![] },
                    exclude_tool_calls: all_tools,
                    ..FilterSpec::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn filter_output_is_valid_and_a_subsequence(msgs in crate::trim::conversation(), spec in spec()) {
        let out = filter(Conversation::new(msgs.clone()), &spec);
        let kept = &out.conversation.messages;
        prop_assert!(pair_problems(kept).is_empty(), "{:?}", pair_problems(kept));
        let idx: Vec<usize> = kept.iter().map(|m| m.input_index().unwrap()).collect();
        prop_assert!(idx.windows(2).all(|w| w[0] < w[1]));
        for m in kept {
            let i = m.input_index().unwrap();
            let orig = &msgs[i];
            prop_assert_eq!(m.role, orig.role);
            // Calls are only ever removed.
            prop_assert!(m.calls().iter().all(|c| orig.calls().contains(c)));
            if m != orig {
                let reasons: Vec<&str> = out.changes.iter().filter(|c| c.index == i).map(|c| c.reason.as_str()).collect();
                prop_assert!(!reasons.is_empty(), "message {} changed without a reported rule", i);
                if m.content != orig.content {
                    prop_assert!(
                        reasons.iter().any(|r| ["processed images", "duplicate results", "thinking"].contains(r)),
                        "content of {} changed by {:?}", i, reasons
                    );
                }
            }
        }
        // Every removed message is reported.
        for i in 0..msgs.len() {
            if !idx.contains(&i) {
                prop_assert!(out.changes.iter().any(|c| c.index == i && c.action == ctxclean::report::Action::Removed));
            }
        }
        // Deterministic.
        let again = filter(Conversation::new(msgs.clone()), &spec);
        prop_assert_eq!(&again.conversation.messages, kept);
    }
}

#[test]
fn a_to_do_list_rewritten_whole_keeps_its_latest_version() {
    // Claude Code's TodoWrite: each call is the whole list again.
    let path = "fixtures/claude-code/viewer-session.jsonl";
    let out = ctxclean()
        .args(["filter", "--supersede", "TodoWrite", path])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "supersede TodoWrite: 2 superseded results, 2 empty assistants removed",
        ));
    let stdout = out.get_output().stdout.clone();
    let text = String::from_utf8(stdout.clone()).unwrap();
    assert_eq!(text.matches(r#""name":"TodoWrite""#).count(), 1, "{text}");
    // What is left reads back whole, every result with its call.
    ctxclean()
        .args(["validate", "--from", "claude-code"])
        .write_stdin(stdout)
        .assert()
        .success();
}

#[test]
fn supersede_dedupe_images_and_selection_on_a_fixture() {
    let path = "fixtures/written/script_rewrites.json";
    let out = ctxclean()
        .args(["filter", "--supersede", "create_python_script=path", "--dedupe-tool-results", "--strip-processed-images", path])
        .assert()
        .success()
        .stderr(predicates::str::contains("supersede create_python_script=path: 1 superseded result, 1 tool_call stripped; processed images: 1 image replaced; kept 11 messages"));
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let msgs = v["messages"].as_array().unwrap();
    // The first write is gone (its message keeps its text), the second stays.
    assert_eq!(msgs[2]["content"], "I'll write a script.");
    assert!(msgs[2].get("tool_calls").is_none());
    assert!(msgs.iter().any(|m| m["tool_calls"][0]["id"] == "c3"));
    // The second read of the same file is the first's, but 26 bytes:
    // shorter than a note pointing back to the first, so it stays.
    let last_read = msgs.iter().find(|m| m["tool_call_id"] == "c4").unwrap();
    assert_eq!(last_read["content"], "month,sales\njan,10\nfeb,12\n");
    // The screenshot was answered: it became a note.
    assert_eq!(
        msgs[1]["content"][1]["text"],
        "[image removed: image/png, 70 bytes]"
    );

    let out = ctxclean()
        .args([
            "filter",
            "--exclude-tools",
            "read_file",
            "--exclude-roles",
            "system",
            path,
        ])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "user");
    assert!(msgs.iter().all(|m| m["tool_calls"]
        .as_array()
        .is_none_or(|c| c.iter().all(|c| c["function"]["name"] != "read_file"))));
    assert_eq!(msgs.len(), 7);
    let out = ctxclean()
        .args(["filter", "--include-roles", "user,assistant", path])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    // Without their results, calls are stripped; assistants left empty go.
    assert_eq!(v["messages"].as_array().unwrap().len(), 4);
}

/// `--drop-thinking` keeps the thinking of the assistant turn in progress
/// (its call's results are all that follow): with thinking on, Anthropic
/// refuses that turn without it (issue 39).
#[test]
fn drop_thinking_keeps_the_turn_in_progress() {
    let body = r#"{"model":"claude-sonnet-4-5","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"list"},{"role":"assistant","content":[{"type":"thinking","thinking":"old thought","signature":"c2ln"},{"type":"text","text":"first"}]},{"role":"user","content":"again"},{"role":"assistant","content":[{"type":"thinking","thinking":"I will list.","signature":"c2ln"},{"type":"tool_use","id":"t1","name":"ls","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}]}"#;
    let out = ctxclean()
        .args([
            "filter",
            "-q",
            "--drop-thinking",
            "--keep-thinking-turns",
            "0",
        ])
        .write_stdin(body)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        !text.contains("old thought") && text.contains("I will list."),
        "{text}"
    );
    ctxclean()
        .args(["validate", "-q", "--request"])
        .write_stdin(text)
        .assert()
        .success();
}

/// A Responses reasoning item goes with the call it produced when
/// `--exclude-tool-calls` removes the call (issue 39: `[user, reasoning]`
/// was left, which OpenAI refuses); one the input had alone stays.
#[test]
fn a_reasoning_item_goes_with_its_output() {
    let body = r#"{"model":"o3","input":[{"role":"user","content":"list"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ls","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"a.txt"}]}"#;
    let out = ctxclean()
        .args([
            "filter",
            "-q",
            "--exclude-tool-calls",
            "--from",
            "responses",
        ])
        .write_stdin(body)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert_eq!(
        text,
        r#"{"model":"o3","input":[{"role":"user","content":"list"}]}"#
    );
    let alone = r#"{"model":"o3","input":[{"role":"user","content":"list"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}]}"#;
    let out = ctxclean()
        .args([
            "filter",
            "-q",
            "--exclude-tool-calls",
            "--from",
            "responses",
        ])
        .write_stdin(alone)
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stdout), alone);
}

/// `--drop-thinking` on Responses keeps a reasoning item that a function
/// call follows (OpenAI refuses the call "without its required 'reasoning'
/// item"), and drops one that preceded a message. Found by
/// `in_flight::no_recipe_makes_a_valid_request_invalid`: the proxy had to
/// forward such bodies as they came.
#[test]
fn drop_thinking_keeps_the_reasoning_a_call_needs() {
    let body = r#"{"model":"o3","input":[{"role":"user","content":"list"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ls","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"a.txt"},{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gBBB"},{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"one file"}]},{"role":"user","content":"thanks"}]}"#;
    let out = ctxclean()
        .args([
            "filter",
            "-q",
            "--drop-thinking",
            "--keep-thinking-turns",
            "0",
            "--from",
            "responses",
        ])
        .write_stdin(body)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("rs_1") && !text.contains("rs_2"), "{text}");
    ctxclean()
        .args(["validate", "-q", "--request", "--from", "responses"])
        .write_stdin(text)
        .assert()
        .success();
}

#[test]
fn a_failed_edit_retried_on_its_file_keeps_its_path_and_its_error() {
    // An Anthropic request as Claude Code sends one: an Edit refused, the
    // file read, the Edit again.
    let old =
        "fn total(items: &[Item]) -> u64 {\n    items.iter().map(|i| i.price).sum()\n}\n".repeat(2);
    let new = old.replace("price", "price * i.quantity");
    let edit = |id: &str| {
        serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Edit",
            "input": {"file_path": "src/cart.rs", "old_string": old, "new_string": new}}]})
    };
    let result = |id: &str, text: &str, error: bool| {
        serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "content": text, "is_error": error}]})
    };
    let body = serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
        {"role": "user", "content": "charge for quantities"},
        edit("e1"),
        result("e1", "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", true),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "src/cart.rs"}}]},
        result("r1", &old, false),
        edit("e2"),
        result("e2", "The file src/cart.rs has been updated.", false),
    ]});
    let out = ctxclean()
        .args(["filter", "--retried-failures", "--from", "anthropic"])
        .write_stdin(body.to_string())
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "retried failures: 2 arguments replaced",
        ));
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let msgs = v["messages"].as_array().unwrap();
    let input = &msgs[1]["content"][0]["input"];
    assert_eq!(input["file_path"], "src/cart.rs");
    assert_eq!(
        input["old_string"],
        format!("[old_string of this Edit call, which failed and was retried on the same file; {} bytes]", old.len())
    );
    assert_eq!(msgs[2]["content"][0]["is_error"], true, "the error stays");
    assert_eq!(
        msgs[5]["content"][0]["input"]["new_string"], new,
        "the retry stays whole"
    );
    // Every message stays: only what the failed call wrote went.
    assert_eq!(msgs.len(), 7);
}
