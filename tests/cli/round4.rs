//! Real transcripts, round 4 (issue 42): the agents of 2026 and single API
//! answers, read from real-shaped fixtures, written back byte for byte,
//! converted with their losses said.

use serde_json::Value;

use crate::util::{ctxclean, fixture};

pub(crate) fn stats(path: &str) -> Value {
    let out = ctxclean()
        .args(["stats", "--json", "-q"])
        .arg(fixture(path))
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

pub(crate) fn validate(path: &str) -> (bool, String) {
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
        assert!(
            notes.contains("the prompt is not in this log"),
            "{path}: {notes}"
        );
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
    let mut lines: Vec<Value> = src
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut blank = lines[1].clone();
    blank["message"]["content"] = serde_json::json!([{"type": "text", "text": "\n\n"}]);
    blank["uuid"] = "0a0a0a0a-0000-4000-8000-000000000001".into();
    lines.insert(2, blank.clone());
    let prompt = serde_json::json!({"type": "user", "message": {"role": "user", "content": "fix the rounding"}, "parent_tool_use_id": null, "session_id": lines[0]["session_id"], "uuid": "0a0a0a0a-0000-4000-8000-000000000002"});
    lines.insert(1, prompt);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    valid_as("claude-code", text.clone());
    // The same block alone in its API message is still refused.
    blank["message"]["id"] = "msg_alone".into();
    let mut alone: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    alone[3] = blank;
    let text: String = alone.iter().map(|l| format!("{l}\n")).collect();
    ctxclean()
        .args(["validate", "-q", "--from", "claude-code", "-"])
        .write_stdin(text)
        .assert()
        .code(1)
        .stdout(predicates::str::contains("non-whitespace"));
}

pub(crate) fn run(args: &[&str], path: &str) -> (Vec<u8>, String) {
    let out = ctxclean().args(args).arg(fixture(path)).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?} {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.stdout, String::from_utf8(out.stderr).unwrap())
}

/// `validate --from FORMAT` takes `body`.
pub(crate) fn valid_as(format: &str, body: impl Into<Vec<u8>>) {
    ctxclean()
        .args(["validate", "-q", "--from", format, "-"])
        .write_stdin(body.into())
        .assert()
        .success();
}

/// Each file written back unchanged is itself, byte for byte.
pub(crate) fn unchanged(paths: &[&str]) {
    for path in paths {
        let (out, _) = run(&["convert", "-q"], path);
        assert_eq!(out, std::fs::read(fixture(path)).unwrap(), "{path}");
    }
}

/// The file with every tool result compacted to 5 tokens: as written,
/// and read.
pub(crate) fn compacted(path: &str) -> (Vec<u8>, Value) {
    let args = [
        "compact-tools",
        "--keep-last",
        "0",
        "--max-result-tokens",
        "5",
        "-q",
    ];
    let (out, _) = run(&args, path);
    let value = serde_json::from_slice(&out).unwrap();
    (out, value)
}

#[test]
fn single_answers_are_read_in_their_providers_format_with_their_usage() {
    for (path, format, calls, usage_key) in [
        (
            "answers/anthropic-message.json",
            "anthropic",
            0,
            "output_tokens",
        ),
        (
            "answers/anthropic-compaction.json",
            "anthropic",
            0,
            "output_tokens",
        ),
        (
            "answers/openai-chat-completion.json",
            "openai",
            2,
            "completion_tokens",
        ),
        (
            "answers/openai-response.json",
            "responses",
            1,
            "output_tokens_details.reasoning_tokens",
        ),
        (
            "answers/gemini-response.json",
            "gemini",
            1,
            "thoughtsTokenCount",
        ),
        (
            "answers/anthropic-stream.jsonl",
            "anthropic",
            1,
            "output_tokens",
        ),
        (
            "answers/openai-stream.jsonl",
            "openai",
            2,
            "completion_tokens",
        ),
        (
            "answers/gemini-stream.json",
            "gemini",
            0,
            "candidatesTokenCount",
        ),
    ] {
        let v = stats(path);
        let c = &v["conversations"][0];
        assert_eq!(v["conversations"].as_array().unwrap().len(), 1, "{path}");
        assert_eq!(c["format"], format, "{path}");
        assert_eq!(c["tool_calls"], calls, "{path}");
        assert!(
            c["as_logged"]["tokens"][usage_key].is_u64(),
            "{path}: {}",
            c["as_logged"]
        );
        assert_eq!(
            c["by_role"].as_object().unwrap().len(),
            1,
            "{path}: only the assistant"
        );
        // An answer is the model's side: no user turn, calls to run next.
        let (ok, said) = validate(path);
        assert!(ok, "{path}: {said}");
        // Converted, what the target cannot say is said.
        let (out, err) = run(&["convert", "--to", "openai"], path);
        if format != "openai" {
            let body: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(body["messages"][0]["role"], "assistant", "{path}");
            assert!(
                body.get("usage").is_none() && body.get("id").is_none(),
                "{path}: {body}"
            );
        }
        if path.contains("anthropic-message") {
            for what in [
                "thinking part",
                "web_search_tool_result part",
                "field id, type, stop_reason, usage",
            ] {
                assert!(err.contains(what), "{path}: {err}");
            }
        }
    }
    // The signatures and encrypted parts are bytes, never tokens.
    let v = stats("answers/anthropic-message.json");
    assert_eq!(v["conversations"][0]["opaque_bytes"], 156);
}

#[test]
fn a_streamed_answer_is_the_message_its_events_make_and_is_never_rewritten() {
    let (out, _) = run(
        &["convert", "--to", "anthropic", "-q"],
        "answers/openai-stream.jsonl",
    );
    let body: Value = serde_json::from_slice(&out).unwrap();
    // As a request, the answer is opened by the user, as Anthropic requires.
    assert_eq!(
        body["messages"][0]["content"][0]["text"],
        "[Start of conversation]"
    );
    let blocks = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["text"], "Checking both stations.");
    assert_eq!(blocks[2]["input"], serde_json::json!({"station": "south"}));
    let (out, _) = run(
        &["convert", "--to", "openai", "-q"],
        "answers/anthropic-stream.jsonl",
    );
    let body: Value = serde_json::from_slice(&out).unwrap();
    let call = &body["messages"][0]["tool_calls"][0]["function"];
    assert_eq!(call["arguments"], r#"{"city":"Oslo","unit":"celsius"}"#);
    let (out, _) = run(
        &["convert", "--to", "openai", "-q"],
        "answers/gemini-stream.json",
    );
    let body: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        "The capital of Portugal is Lisbon, on the Tagus estuary."
    );
    // An operation that would change it keeps the events as they came, and says so.
    for path in [
        "answers/anthropic-stream.jsonl",
        "answers/gemini-stream.json",
        "answers/openai-stream.jsonl",
    ] {
        let (out, err) = run(&["filter", "--exclude-roles", "assistant"], path);
        assert_eq!(out, std::fs::read(fixture(path)).unwrap(), "{path}");
        assert!(
            err.contains("a streamed answer is not rewritten"),
            "{path}: {err}"
        );
    }
}

#[test]
fn an_answer_takes_an_operation_in_its_own_shape() {
    let path = "answers/anthropic-message.json";
    let (out, err) = run(&["filter", "--drop-thinking"], path);
    assert!(err.contains("1 thinking block removed"), "{err}");
    let before: Value = serde_json::from_slice(&std::fs::read(fixture(path)).unwrap()).unwrap();
    let after: Value = serde_json::from_slice(&out).unwrap();
    let mut expected = before.clone();
    expected["content"].as_array_mut().unwrap().remove(0);
    assert_eq!(after, expected);
}

#[test]
fn an_opencode_export_reads_each_step_and_writes_its_parts_back_in_place() {
    let v = stats("opencode/export.json");
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "opencode");
    // Two steps of one assistant message: two turns, each with its results.
    assert_eq!(c["messages"], 11);
    assert_eq!(c["tool_calls"], 4);
    assert_eq!(c["tool_results"], 3, "the running call has no result yet");
    let (ok, said) = validate("opencode/export.json");
    assert!(ok, "{said}");
    // A result compacted: only its part's output changes.
    let path = "opencode/export.json";
    let (out, _) = run(
        &[
            "compact-tools",
            "--keep-last",
            "1",
            "--max-result-tokens",
            "50",
        ],
        path,
    );
    let before: Value = serde_json::from_slice(&std::fs::read(fixture(path)).unwrap()).unwrap();
    let after: Value = serde_json::from_slice(&out).unwrap();
    let mut expected = before.clone();
    let output = &after["messages"][1]["parts"][3]["state"]["output"];
    assert!(
        output.as_str().unwrap().starts_with("[Tool: 36 lines"),
        "{output}"
    );
    expected["messages"][1]["parts"][3]["state"]["output"] = output.clone();
    assert_eq!(after, expected);
    // Thinking dropped: its part goes, the step bounds stay.
    let (out, _) = run(&["filter", "--drop-thinking"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let types: Vec<&str> = after["messages"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "step-start",
            "text",
            "tool",
            "step-finish",
            "step-start",
            "text",
            "step-finish"
        ]
    );
    // Converted, the steps are turns of the target format.
    let (out, _) = run(&["convert", "--to", "openai", "-q"], path);
    let body: Value = serde_json::from_slice(&out).unwrap();
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles[..4], ["user", "assistant", "tool", "assistant"]);
}

#[test]
fn an_opencode_compaction_starts_what_the_next_call_carries() {
    let v = stats("opencode/compacted.json");
    let c = &v["conversations"][0];
    // The summary and what follows; the request is a marker, never removed.
    assert_eq!(c["messages"], 3);
    let notes = c["notes"].to_string();
    assert!(
        notes.contains("4 messages precede the last compaction"),
        "{notes}"
    );
    let (ok, said) = validate("opencode/compacted.json");
    assert!(ok, "{said}");
}

#[test]
fn an_unknown_shape_names_no_format_but_lists_its_keys() {
    let out = ctxclean()
        .args(["stats", "-"])
        .write_stdin(
            r#"{"info": {"id": "s"}, "messages": [{"meta": {"role": "user"}, "chunks": []}]}"#,
        )
        .assert()
        .code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(!err.contains("closest"), "{err}");
    assert!(
        err.contains("(info, messages; its records' keys: meta, chunks)"),
        "{err}"
    );
}

#[test]
fn a_qwen_code_recording_reads_its_gemini_turns_and_usage() {
    let path = "qwen-code/session.jsonl";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "qwen-code");
    assert_eq!(c["tool_calls"], 3);
    assert_eq!(c["tool_results"], 3);
    assert_eq!(c["as_logged"]["tokens"]["promptTokenCount"], 36353);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    // Trimmed, the placeholder is a line of the chain, and the output
    // reads back valid.
    let (out, _) = run(&["trim", "--max-tokens", "150"], path);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let added = lines
        .iter()
        .find(|l| {
            l.get("uuid").is_some()
                && l["message"]["parts"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("[Earlier"))
        })
        .expect("the placeholder line");
    assert_eq!(added["sessionId"], lines[0]["sessionId"]);
    let last = lines.last().unwrap();
    assert_eq!(last["parentUuid"], added["uuid"]);
    valid_as("qwen-code", text);
    // Converted, the thought is said lost by its name.
    let (_, err) = run(&["convert", "--to", "openai"], path);
    assert!(err.contains("1 × thought part"), "{err}");
}

#[test]
fn goose_sessions_and_runs_read_their_tool_items() {
    for (path, calls) in [("goose/session.jsonl", 2), ("goose/run-stream.jsonl", 1)] {
        let v = stats(path);
        let c = &v["conversations"][0];
        assert_eq!(c["format"], "goose", "{path}");
        assert_eq!(c["tool_calls"], calls, "{path}");
        assert_eq!(c["tool_results"], calls, "{path}");
        assert!(c["as_logged"]["tokens"]["total_tokens"].is_u64(), "{path}");
        let (ok, said) = validate(path);
        assert!(ok, "{path}: {said}");
    }
    // What only the user sees is not what the model was sent.
    let (out, _) = run(&["convert", "--to", "openai", "-q"], "goose/session.jsonl");
    let body: Value = serde_json::from_slice(&out).unwrap();
    let result = body["messages"][2]["content"].as_str().unwrap();
    assert_eq!(result.matches("def total(lines)").count(), 1, "{result}");
    // A result compacted keeps its item's shape.
    let src = std::fs::read_to_string(fixture("goose/session.jsonl")).unwrap();
    let long: String = (0..80)
        .map(|i| format!("{i} line of the file\\n"))
        .collect();
    let src = src.replace(
        "41 def total(lines):",
        &format!("{long}41 def total(lines):"),
    );
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--from",
            "goose",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "50",
            "-",
        ])
        .write_stdin(src)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let line: Value = serde_json::from_str(text.lines().nth(5).unwrap()).unwrap();
    let value = &line["content"][0]["toolResult"]["value"];
    assert!(
        value["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[Tool: 84 lines"),
        "{value}"
    );
    assert_eq!(value["isError"], false);
}

#[test]
fn a_copilot_chat_session_reads_each_round_and_its_results() {
    let path = "copilot-chat/session.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "copilot-chat");
    assert_eq!(c["messages"], 9);
    assert_eq!(
        c["tool_calls"], 3,
        "parallel calls of one round are each read"
    );
    assert_eq!(c["tool_results"], 3);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    // Thinning the rounds of previous cycles: the request keeps its last
    // round, its results go with their calls, and the view is untouched.
    let (out, _) = run(
        &["filter", "--previous-cycles", "--exclude-tool-calls"],
        path,
    );
    let after: Value = serde_json::from_slice(&out).unwrap();
    let before: Value = serde_json::from_slice(&std::fs::read(fixture(path)).unwrap()).unwrap();
    let meta = &after["requests"][1]["result"]["metadata"];
    assert!(
        meta["toolCallResults"].as_object().unwrap().is_empty(),
        "{meta}"
    );
    assert_eq!(
        after["requests"][1]["response"],
        before["requests"][1]["response"]
    );
    assert_eq!(after["requests"][0], before["requests"][0]);
    valid_as("copilot-chat", out);
    // Every assistant message of a request with rounds gone: its response
    // goes too. It stayed, and read again it was the answer once more.
    let (out, _) = run(&["filter", "-q", "--exclude-roles", "assistant"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(after["requests"][1]["response"], serde_json::json!([]));
    let read_again = ctxclean()
        .args(["stats", "--json", "-q", "--from", "copilot-chat", "-"])
        .write_stdin(out)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&read_again.get_output().stdout).unwrap();
    assert_eq!(
        v["conversations"][0]["messages"], 2,
        "the user's two, as kept"
    );
}

#[test]
fn roo_subtasks_pair_with_their_results_however_late_or_long() {
    let path = "cline/roo-orchestrator.json";
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    let out = ctxclean()
        .args(["stats", "--tools", "-q"])
        .arg(fixture(path))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    // The header quoting a message of many lines; the result turns later.
    assert!(text.contains("#1 new_task {\"mode\":\"ask\""), "{text}");
    assert!(text.contains("→ #2,"), "{text}");
    assert!(text.contains("#4 new_task {\"mode\":\"code\""), "{text}");
    assert!(text.contains("→ #8,"), "{text}");
    // Every operation keeps it valid, and it is written back as it came.
    for op in [
        &["trim", "--max-tokens", "600"][..],
        &["filter", "--previous-cycles"],
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ],
    ] {
        let (out, _) = run(op, path);
        valid_as("cline", out);
    }
}

#[test]
fn letta_agent_files_read_what_is_in_context_and_keep_it_so() {
    for (path, messages) in [
        ("letta/customer_service.af", 13),
        ("letta/outreach_workflow_agent.af", 1),
        ("letta/loop.af", 3),
    ] {
        let v = stats(path);
        let c = &v["conversations"][0];
        assert_eq!(c["format"], "letta", "{path}");
        assert_eq!(c["messages"], messages, "{path}");
        let (ok, said) = validate(path);
        assert!(ok, "{path}: {said}");
    }
    let v = stats("letta/outreach_workflow_agent.af");
    let notes = v["conversations"][0]["notes"].to_string();
    assert!(
        notes.contains("9 messages are not in the agent's context"),
        "{notes}"
    );
    // Trimmed, the indices follow the messages that stay.
    let (out, _) = run(
        &["trim", "--max-tokens", "1800"],
        "letta/customer_service.af",
    );
    let after: Value = serde_json::from_slice(&out).unwrap();
    let n = after["messages"].as_array().unwrap().len();
    assert!(n < 13);
    let expected: Vec<usize> = (0..n).collect();
    assert_eq!(
        after["in_context_message_indices"],
        serde_json::json!(expected)
    );
    valid_as("letta", out);
}

#[test]
fn a_kimi_cli_context_keeps_its_checkpoints_and_usage_lines_in_place() {
    let path = "kimi-cli/context.jsonl";
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    let own = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with("{\"role\": \"_"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Read as OpenAI messages; before, the first line failed the read
    // (`unknown role "_checkpoint"`).
    let s = stats(path);
    let c = &s["conversations"][0];
    assert_eq!(c["format"], "openai");
    assert_eq!(c["messages"], 10);
    assert_eq!(c["tool_calls"], 4);
    assert_eq!(c["tool_results"], 4);
    // Unchanged: byte for byte.
    let (out, _) = run(&["convert", "-q"], path);
    assert_eq!(String::from_utf8(out).unwrap(), text);
    // Trimmed: the messages go, every line of the CLI's own stays where it
    // was, as it was.
    let (out, _) = run(&["trim", "--max-tokens", "120", "-q"], path);
    let out = String::from_utf8(out).unwrap();
    assert!(out.lines().count() < text.lines().count());
    assert_eq!(own(&out), own(&text));
    assert!(out.starts_with("{\"role\": \"_checkpoint\", \"id\": 0}\n"));
    // OpenAI refuses the assistant turn whose content is `[]` beside its
    // calls (Kimi's API takes it): said, not hidden.
    let (valid, said) = validate(path);
    assert!(
        !valid && said.contains("content is an empty list"),
        "{said}"
    );
}

#[test]
fn an_agents_sdk_run_state_reads_its_input_and_items_and_resumes_after_a_trim() {
    let path = "openai-agents/run.json";
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    let s = stats(path);
    let c = &s["conversations"][0];
    assert_eq!(c["format"], "openai-agents");
    // The user's input item, a call, its result, the answer, and the call
    // waiting for approval (its approval item is not a second call).
    assert_eq!(c["messages"], 5);
    assert_eq!(c["tool_calls"], 2);
    assert_eq!(c["tool_results"], 1);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    // Unchanged: byte for byte; so are the SDK's own corpus files.
    let (out, _) = run(&["convert", "-q"], path);
    assert_eq!(String::from_utf8(out).unwrap(), text);
    for other in [
        "openai-agents/v1_13_pending_tool_approval.json",
        "openai-agents/v1_13_programmatic_tool_calling.json",
        "openai-agents/v1_13_nested_history_ownership.json",
        "openai-agents/v1_11_tool_output_custom_data.json",
        "openai-agents/v1_17.json",
    ] {
        let (out, _) = run(&["convert", "-q"], other);
        assert_eq!(out, std::fs::read(fixture(other)).unwrap(), "{other}");
        assert_eq!(stats(other)["conversations"][0]["format"], "openai-agents");
    }
    // Trimmed: the input and the first items go, and the indexes that run
    // beside the items follow them.
    let (out, _) = run(&["trim", "--max-messages", "3", "-q"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let items: Vec<&str> = after["generated_items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        items,
        [
            "message_output_item",
            "tool_call_item",
            "tool_approval_item"
        ]
    );
    assert_eq!(after["original_input"], serde_json::json!([]));
    assert_eq!(
        after["generated_session_item_indexes"],
        serde_json::json!([2, null, null])
    );
    assert_eq!(
        after["model_responses"],
        serde_json::from_str::<Value>(&text).unwrap()["model_responses"]
    );
    // Converted to a request, the SDK's bookkeeping is said lost.
    for to in ["openai", "anthropic", "responses"] {
        let (_, said) = run(&["convert", "--to", to], path);
        assert!(
            said.contains("openai-agents bookkeeping") || to == "responses",
            "{to}: {said}"
        );
    }
}

#[test]
fn a_copilot_chat_operation_log_reads_as_its_session_and_writes_back_as_one_snapshot() {
    let (log, json) = ("copilot-chat/session.jsonl", "copilot-chat/session.json");
    let text = std::fs::read_to_string(fixture(log)).unwrap();
    let (a, b) = (stats(log), stats(json));
    assert_eq!(a["conversations"][0]["format"], "copilot-chat");
    for key in ["messages", "tokens", "tool_calls", "tool_results"] {
        assert_eq!(
            a["conversations"][0][key], b["conversations"][0][key],
            "{key}"
        );
    }
    let (ok, said) = validate(log);
    assert!(ok, "{said}");
    // Unchanged: the log itself, byte for byte.
    let (out, _) = run(&["convert", "-q"], log);
    assert_eq!(String::from_utf8(out).unwrap(), text);
    // Changed: one snapshot line, the session the `.json` trims to (but
    // for the title the log set and then deleted).
    let (out, _) = run(&["trim", "--max-tokens", "250", "-q"], log);
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 1);
    let line: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(line["kind"], 0);
    let (trimmed, _) = run(&["trim", "--max-tokens", "250", "-q"], json);
    let mut expected: Value = serde_json::from_slice(&trimmed).unwrap();
    expected
        .as_object_mut()
        .unwrap()
        .shift_remove("customTitle");
    assert_eq!(line["v"], expected);
    ctxclean()
        .args(["stats", "-q", "-"])
        .write_stdin(out)
        .assert()
        .success();
    // A change that names no value is refused at its line.
    let bad = format!("{text}{{\"kind\":1,\"k\":[\"requests\",9,\"result\"],\"v\":{{}}}}\n");
    let lines = bad.lines().count();
    ctxclean()
        .args(["stats", "-"])
        .write_stdin(bad)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!("-:{lines}:")));
}

/// OpenCode's storage layout, written from the export fixture as OpenCode
/// keeps it: one file per session, per message and per part.
fn opencode_storage(root: &std::path::Path) -> String {
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("opencode/export.json")).unwrap())
            .unwrap();
    let write = |path: std::path::PathBuf, v: &Value| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
    };
    let sid = export["info"]["id"].as_str().unwrap().to_string();
    let project = export["info"]["projectID"].as_str().unwrap();
    write(
        root.join(format!("session/{project}/{sid}.json")),
        &export["info"],
    );
    for m in export["messages"].as_array().unwrap() {
        let mid = m["info"]["id"].as_str().unwrap();
        write(root.join(format!("message/{sid}/{mid}.json")), &m["info"]);
        for p in m["parts"].as_array().unwrap() {
            let pid = p["id"].as_str().unwrap();
            write(root.join(format!("part/{mid}/{pid}.json")), p);
        }
    }
    sid
}

#[test]
fn opencode_storage_reads_one_conversation_per_session() {
    let dir = crate::util::temp_dir("opencode-storage");
    let storage = dir.join("storage");
    let sid = opencode_storage(&storage);
    // Given OpenCode's data directory or its storage: the session, as its
    // export reads.
    let export = stats("opencode/export.json");
    for given in [dir.as_path(), storage.as_path()] {
        let out = ctxclean()
            .args(["stats", "--json"])
            .arg(given)
            .output()
            .unwrap();
        assert!(out.status.success());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &v["conversations"][0];
        assert_eq!(c["format"], "opencode");
        for key in ["messages", "tokens", "tool_calls", "tool_results"] {
            assert_eq!(c[key], export["conversations"][0][key], "{key}");
        }
    }
    // Never rewritten in place; written out, it is the session's export.
    ctxclean()
        .args(["trim", "--max-tokens", "300", "--in-place"])
        .arg(&storage)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("read from many files"));
    let out = dir.join("out");
    ctxclean()
        .args(["convert", "-q", "--out-dir"])
        .arg(&out)
        .arg(&storage)
        .assert()
        .success();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("{sid}.json"))).unwrap())
            .unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("opencode/export.json")).unwrap())
            .unwrap();
    assert_eq!(written, expected);
    // A broken part is named with its line.
    let part = std::fs::read_dir(storage.join("part"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(&part)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&file, "{\n  \"id\": \n").unwrap();
    ctxclean()
        .arg("stats")
        .arg(&storage)
        .assert()
        .failure()
        .stderr(predicates::str::contains(format!("{}:3:", file.display())));
}

#[test]
fn bedrock_converse_requests_and_responses_read_their_blocks() {
    let (req, resp) = (
        "bedrock/converse-request.json",
        "answers/bedrock-converse-response.json",
    );
    let s = stats(req);
    let c = &s["conversations"][0];
    assert_eq!(c["format"], "bedrock");
    // The system blocks, two user turns, two answers, one call and its
    // result (a `json` block).
    assert_eq!(c["messages"], 6);
    assert_eq!(c["tool_calls"], 1);
    assert_eq!(c["tool_results"], 1);
    let (ok, said) = validate(req);
    assert!(ok, "{said}");
    // A response is its message, with its usage as logged.
    let s = stats(resp);
    let c = &s["conversations"][0];
    assert_eq!(c["format"], "bedrock");
    assert_eq!(c["messages"], 1);
    assert_eq!(c["tool_calls"], 1);
    assert_eq!(c["as_logged"]["tokens"]["inputTokens"], 1462);
    // Unchanged: byte for byte.
    unchanged(&[req, resp]);
    // The reasoning (and its signature) is kept and not counted as text;
    // an operation writes blocks back in their own shape.
    let (out, after) = compacted(req);
    let result = &after["messages"][2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q");
    assert_eq!(result["status"], "success");
    assert!(result["content"][0]["text"].is_string(), "{result}");
    assert_eq!(
        after["messages"][3]["content"][0]["reasoningContent"]["reasoningText"]["signature"],
        "ErcBCkgIBRABGAIiQGm3WcvKxU8Pp1b0tq0XQ2mYv0uYZ1dJ4l4nR0h7E2Jm"
    );
    valid_as("bedrock", out);
    // Converted, the calls and results pair in the other format.
    for to in ["openai", "anthropic"] {
        let (out, _) = run(&["convert", "--to", to, "-q"], req);
        valid_as(to, out);
    }
}

/// A processed image in a Bedrock request and a Gemini body: the note
/// `--strip-processed-images` puts in its place is the format's own text
/// block, `{"text": …}`. It went out chat-shaped, with a `type` both APIs
/// refuse as an unknown field.
#[test]
fn a_note_in_an_image_s_place_is_the_format_s_own_text() {
    let dir = crate::util::temp_dir("image-notes");
    let mut bedrock: Value =
        serde_json::from_slice(&std::fs::read(fixture("bedrock/converse-request.json")).unwrap())
            .unwrap();
    let image =
        serde_json::json!({"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}});
    bedrock["messages"][0]["content"]
        .as_array_mut()
        .unwrap()
        .push(image);
    let gemini = serde_json::json!({"contents": [
        {"role": "user", "parts": [{"text": "what is this?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
        {"role": "model", "parts": [{"text": "A cat."}]},
        {"role": "user", "parts": [{"text": "thanks"}]}
    ]});
    for (name, doc, list, key) in [
        ("bedrock", bedrock, "messages", "content"),
        ("gemini", gemini, "contents", "parts"),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
        let out = ctxclean()
            .args(["filter", "-q", "--strip-processed-images"])
            .arg(&path)
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let first = &v[list][0][key];
        let note = first
            .as_array()
            .unwrap()
            .iter()
            .find(|b| {
                b["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("[image removed"))
            })
            .unwrap_or_else(|| panic!("{name}: no note in {first}"));
        assert_eq!(note.as_object().unwrap().len(), 1, "{name}: {note}");
    }
}

#[test]
fn amp_threads_read_their_results_in_run_and_write_them_back_there() {
    let path = "amp/T-019b9d03-62e3-772f-9780-3e637f90eaec.json";
    let s = stats(path);
    let c = &s["conversations"][0];
    assert_eq!(c["format"], "anthropic");
    assert_eq!(c["messages"], 6);
    assert_eq!(c["tool_calls"], 2);
    assert_eq!(c["tool_results"], 2);
    // A thread is not a request body: no `max_tokens` asked of it.
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path, "amp/T-aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaab.json"]);
    // Compacted, a result stays in `run`, in Amp's shape: no Anthropic keys
    // are added to the block.
    let (out, after) = compacted(path);
    let block = &after["messages"][2]["content"][0];
    assert_eq!(block["toolUseID"], "toolu_01A2b3C4d5E6f7G8h9J0k1L2");
    assert!(block.get("content").is_none() && block.get("tool_use_id").is_none());
    let result = block["run"]["result"].as_str().unwrap();
    assert!(
        result.starts_with("[Tool: object {output, exitCode}"),
        "{result}"
    );
    assert_eq!(after["messages"][2]["content"][0]["run"]["status"], "done");
    ctxclean()
        .args(["validate", "-q", "-"])
        .write_stdin(out)
        .assert()
        .success();
}

#[test]
fn a_kimi_code_wire_log_reads_each_piece_of_a_step_and_writes_it_back_in_place() {
    let path = "kimi-code/wire.jsonl";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "kimi-code");
    assert_eq!(c["tool_calls"], 6);
    assert_eq!(c["tool_results"], 6);
    // Each step's `step.end` usage, summed.
    assert_eq!(c["as_logged"]["tokens"]["inputOther"], 2440);
    assert_eq!(c["as_logged"]["requests"], 6);
    // The encrypted reasoning of a `think` part is a payload, not text.
    assert_eq!(c["opaque"]["encrypted_reasoning"]["payloads"], 1, "{c}");
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path, "kimi-code/compacted.jsonl"]);
    // A session that has no message yet (its header and settings) is one.
    let src = std::fs::read_to_string(fixture(path)).unwrap();
    let head: String = src.lines().take(4).map(|l| format!("{l}\n")).collect();
    let out = ctxclean()
        .args(["stats", "--json", "-q", "-"])
        .write_stdin(head)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["conversations"][0]["format"], "kimi-code");
    assert_eq!(v["conversations"][0]["messages"], 0);
    // A step's pieces are one message of a request: its text and both its
    // parallel calls, their results right after; the thought said lost.
    let (out, err) = run(&["convert", "--to", "openai"], path);
    let body: Value = serde_json::from_slice(&out).unwrap();
    let m = &body["messages"];
    assert_eq!(m[1]["tool_calls"].as_array().unwrap().len(), 2, "{m}");
    assert_eq!(m[2]["tool_call_id"], "tc-grep-1");
    assert_eq!(m[3]["tool_call_id"], "tc-read-1");
    assert!(err.contains("1 × think part"), "{err}");
    valid_as("openai", out);
    // Thinking dropped: its record goes, every other line stays as it was.
    let (out, _) = run(&["filter", "--drop-thinking", "-q"], path);
    let src = std::fs::read_to_string(fixture(path)).unwrap();
    let kept: Vec<&str> = src.lines().filter(|l| !l.contains("\"think\"")).collect();
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        kept.join("\n") + "\n"
    );
    valid_as("kimi-code", out);
}

#[test]
fn a_kimi_code_result_compacted_or_trimmed_keeps_its_record_and_the_steps() {
    // A long result, compacted, keeps its event's shape and `isError`.
    let src = std::fs::read_to_string(fixture("kimi-code/wire.jsonl")).unwrap();
    let long: String = (0..300).map(|k| format!("tests/case_{k}.py F\n")).collect();
    let long = serde_json::to_string(&long).unwrap();
    let src = src.replacen(
        "\"F.\\nFAILED tests/test_total.py::test_total_of_halves - NameError: name 'Decimal' is not defined\\n1 failed, 1 passed in 0.04s\"",
        &long,
        1,
    );
    assert!(src.contains("case_299"));
    let out = ctxclean()
        .args(["compact-tools", "--keep-last", "1", "-q", "-"])
        .write_stdin(src.clone())
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let changed: Vec<(&str, &str)> = src
        .lines()
        .zip(text.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    let line: Value = serde_json::from_str(changed[0].1).unwrap();
    let result = &line["event"]["result"];
    assert_eq!(result["isError"], true);
    assert!(!result["output"].as_str().unwrap().contains("case_299"));
    assert_eq!(line["event"]["toolCallId"], "tc-bash-1");
    valid_as("kimi-code", text);
    // Trimmed: whole steps go with their results, the records that are
    // not messages stay, and what is left reads back valid.
    let (out, _) = run(
        &["trim", "--max-tokens", "150", "-q"],
        "kimi-code/wire.jsonl",
    );
    let text = String::from_utf8(out).unwrap();
    for kept in [
        "\"type\":\"metadata\"",
        "\"turn.prompt\"",
        "\"usage.record\"",
    ] {
        assert!(text.contains(kept), "{kept}");
    }
    assert!(!text.contains("tc-grep-1"));
    assert!(text.contains("tc-bash-2"));
    valid_as("kimi-code", text);
}

#[test]
fn a_kimi_code_compaction_and_undo_leave_what_the_next_call_carries() {
    let path = "kimi-code/compacted.jsonl";
    let (out, err) = run(&["convert", "--to", "openai"], path);
    assert!(
        err.contains("8 message records up to line 24 left Kimi Code's context"),
        "{err}"
    );
    let body: Value = serde_json::from_slice(&out).unwrap();
    let texts: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    // The user's own messages before the compaction, its summary, and the
    // turn asked again after the undo; not the turn taken back.
    assert_eq!(texts[0], "List the modules under src/ledger.");
    assert_eq!(texts[1], "Which of them formats the report cells?");
    assert!(texts[2].starts_with("The user asked about the modules"));
    assert_eq!(
        texts[3],
        "Make cell() round half up, keeping its width of 10."
    );
    assert!(!texts
        .iter()
        .any(|t| t.contains("too.") || t.contains("Should it")));
    assert!(!texts.iter().any(|t| t.contains("Three modules")));
    let v = stats(path);
    assert_eq!(v["conversations"][0]["messages"], 7);
}

#[test]
fn a_kimi_code_home_walked_for_its_wire_logs_reads_each_agent() {
    let home = crate::util::temp_dir("kimi-code-home");
    let session = home.join("sessions/wd_ledger_0123456789ab/session_9f0e");
    for (agent, src) in [("main", "wire.jsonl"), ("agent-1", "compacted.jsonl")] {
        let dir = session.join("agents").join(agent);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(fixture(&format!("kimi-code/{src}")), dir.join("wire.jsonl")).unwrap();
    }
    // What Kimi Code keeps beside them is not a transcript.
    std::fs::write(
        session.join("state.json"),
        r#"{"id": "9f0e", "version": 2, "agents": {"main": {"type": "main"}}}"#,
    )
    .unwrap();
    std::fs::write(
        home.join("session_index.jsonl"),
        "{\"sessionId\": \"9f0e\", \"workDir\": \"/home/dev/ledger\"}\n",
    )
    .unwrap();
    let out = ctxclean()
        .args(["stats", "--json", "-q", "--glob", "wire.jsonl"])
        .arg(&*home)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let formats: Vec<&str> = v["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["format"].as_str().unwrap())
        .collect();
    assert_eq!(formats, ["kimi-code", "kimi-code"]);
}
