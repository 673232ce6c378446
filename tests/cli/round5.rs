//! Real transcripts, round 5 (issue 58): what the hidden sets left, and the
//! IDE agents and newer command-line agents.

use serde_json::Value;

use crate::round4::{run, stats, unchanged, valid_as, validate};
use crate::util::{ctxclean, fixture};

/// The roles and first words of each message `convert --to openai` writes.
fn openai_messages(path: &str) -> Vec<(String, String)> {
    let (out, _) = run(&["convert", "--to", "openai", "-q"], path);
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

#[test]
fn a_letta_context_is_read_in_its_own_order_and_written_back_as_it_came() {
    // The system message was rebuilt (record 13, the newest) and leads the
    // context; two user messages stand in the context in the other order.
    let path = "letta/customer_service_reordered.af";
    let v = stats(path);
    assert_eq!(v["conversations"][0]["messages"], 13);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let msgs = openai_messages(path);
    assert_eq!(msgs[0].0, "system");
    assert!(
        msgs[0].1.contains("Order #8812"),
        "the rebuilt system message first: {}",
        msgs[0].1
    );
    assert!(
        msgs[3].1.contains("user_message") && msgs[4].1.contains("login"),
        "{msgs:?}"
    );
    // Summarized, the file keeps its records in the order they were made
    // (the summary last), and the context says the order the agent sends.
    let (out, _) = run(&["summarize", "--threshold", "500", "--keep", "4"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let records = after["messages"].as_array().unwrap();
    let context: Vec<usize> = after["in_context_message_indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap() as usize)
        .collect();
    let first = &records[context[0]]["content"][0]["text"];
    assert!(first.as_str().unwrap().contains("Order #8812"), "{first}");
    let second = records[context[1]]["content"].to_string();
    assert!(second.contains("summary"), "{second}");
    assert_eq!(*context.iter().skip(1).max().unwrap(), records.len() - 1);
    valid_as("letta", out);
}

#[test]
fn roo_switch_mode_results_that_come_late_or_quote_many_lines_are_paired() {
    // A reason over two lines in the header; a switch the user held up
    // with a question, answered after a search.
    let path = "cline/roo-late-switch.json";
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let out = ctxclean()
        .args(["stats", "--tools", "-q"])
        .arg(fixture(path))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("#1 switch_mode"), "{text}");
    assert!(text.contains("→ #2,"), "{text}");
    assert!(text.contains("#4 switch_mode"), "{text}");
    assert!(text.contains("→ #8,"), "{text}");
    operations_keep("cline", path);
}

#[test]
fn an_amp_thread_of_id_title_and_messages_is_a_thread_not_a_request() {
    let path = "amp/exported-thread.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "anthropic");
    assert_eq!(c["tool_calls"], 1);
    assert_eq!(c["tool_results"], 1);
    let (ok, said) = validate(path);
    assert!(ok, "no max_tokens asked of a thread: {said}");
    unchanged(&[path]);
}

#[test]
fn a_branched_chat_export_reads_the_chain_of_its_last_message() {
    let path = "branched/sourdough.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "branched");
    // Eight messages, two branches: the edited question's branch is the one
    // the last message ends.
    assert_eq!(c["messages"], 6);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let msgs = openai_messages(path);
    assert_eq!(msgs.len(), 6);
    assert_eq!(msgs[0].0, "user");
    assert_eq!(msgs[1].0, "assistant");
    assert!(msgs[2].1.contains("overnight cold proof"), "{msgs:?}");
    // Trimmed, the other branch hangs on what is left of its ancestors.
    let (out, _) = run(&["trim", "--max-tokens", "120"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let ids: Vec<&str> = after["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"7f0c2a1e-0001"), "{ids:?}");
    assert_eq!(after["messages"][0]["parentMessageId"], Value::Null);
    valid_as("branched", out);
    // A summary has no place in its tree: said, the file as it came.
    let out = ctxclean()
        .args(["summarize", "--threshold", "50", "--keep", "2"])
        .arg(fixture(path))
        .assert()
        .success();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("cannot take a new message"), "{err}");
    assert_eq!(
        out.get_output().stdout,
        std::fs::read(fixture(path)).unwrap()
    );
}

#[test]
fn a_continue_session_reads_what_continue_sends() {
    let path = "continue/session.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "continue");
    // Three calls, each answered by its state (a cancelled one by
    // Continue's words); the stored `role: tool` copies are not sent.
    assert_eq!(c["tool_calls"], 3);
    assert_eq!(c["tool_results"], 3);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path, "continue/summarized.json"]);
    let msgs = openai_messages(path);
    // The attached file comes before the question, as Continue sends it.
    assert!(
        msgs[0].1.contains("src/dates.py") && msgs[0].1.contains("Why does"),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(r, t)| r == "tool" && t == "The user cancelled this tool call."),
        "{msgs:?}"
    );
    operations_keep("continue", path);
    // A result compacted goes back into its state's output.
    let (out, _) = run(
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ],
        path,
    );
    let after: Value = serde_json::from_slice(&out).unwrap();
    let output = after["history"][1]["toolCallStates"][0]["output"][0]["content"]
        .as_str()
        .unwrap();
    assert!(output.starts_with("[Tool: 27 lines"), "{output}");
    assert_eq!(
        after["history"][1]["toolCallStates"][0]["output"][0]["name"],
        "dates.py"
    );
    // Filtered, a previous cycle's call leaves with its state, and the
    // stored copy of its result with it: read again, nothing is orphaned.
    let (out, _) = run(&["filter", "--previous-cycles"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let history = after["history"].as_array().unwrap();
    assert!(
        !history
            .iter()
            .any(|h| h["message"]["toolCallId"] == "call_Qm2r"),
        "{after}"
    );
    valid_as("continue", out);
    // A summary is a history item of its own.
    let (out, _) = run(&["summarize", "--threshold", "100", "--keep", "3"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(after["history"][0]["contextItems"], serde_json::json!([]));
    assert!(after["history"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .contains("summary"));
    valid_as("continue", out);
}

#[test]
fn a_continue_summary_starts_what_continue_sends() {
    let path = "continue/summarized.json";
    let msgs = openai_messages(path);
    assert_eq!(msgs[0].0, "system");
    assert!(
        msgs[0].1.starts_with("Previous conversation summary:"),
        "{msgs:?}"
    );
    assert_eq!(
        msgs[1],
        ("user".to_string(), "Fix it and run the tests.".to_string())
    );
    // Before the summary's item nothing is sent: the first call is gone.
    assert!(
        !msgs
            .iter()
            .any(|(_, t)| t.contains("Let me read the parser.")),
        "{msgs:?}"
    );
}

/// Every operation's output is still the format's, valid.
fn operations_keep(format: &str, path: &str) {
    for op in [
        &["trim", "--max-tokens", "40"][..],
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
        valid_as(format, out);
    }
}

#[test]
fn droid_sessions_read_their_store_and_their_stream_and_keep_anthropic_blocks() {
    let store = [
        "droid/session_store_small.jsonl",
        "droid/session_store_large.jsonl",
        "droid/session_store_schema_drift.jsonl",
    ];
    let stream = [
        "droid/stream_json_small.jsonl",
        "droid/stream_json_large.jsonl",
        "droid/stream_json_schema_drift.jsonl",
    ];
    for path in store.iter().chain(&stream) {
        let v = stats(path);
        assert_eq!(v["conversations"][0]["format"], "droid", "{path}");
        let (ok, said) = validate(path);
        assert!(ok, "{path}: {said}");
        operations_keep("droid", path);
    }
    // Read as pi's, a plain convert rewrote Droid's `tool_use` as pi's
    // `toolCall`.
    unchanged(&store);
    unchanged(&stream);
    let v = stats("droid/session_store_small.jsonl");
    assert_eq!(v["conversations"][0]["tool_calls"], 1);
    assert_eq!(v["conversations"][0]["tool_results"], 1);
    // A stream's result compacted stays in `value`, said for what it was.
    let (out, _) = run(
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ],
        "droid/stream_json_large.jsonl",
    );
    let text = String::from_utf8(out).unwrap();
    let result: Value = serde_json::from_str(
        text.lines()
            .find(|l| l.contains("\"tool_result\""))
            .unwrap(),
    )
    .unwrap();
    assert!(
        result["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("[Tool: object {stdout, exitCode}")),
        "{result}"
    );
    let msgs = openai_messages("droid/stream_json_schema_drift.jsonl");
    assert_eq!(msgs.len(), 4, "{msgs:?}");
}

#[test]
fn a_copilot_cli_session_state_directory_reads_its_events() {
    let path = "copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "copilot");
    assert_eq!(c["tool_calls"], 1);
    assert_eq!(c["tool_results"], 1);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    operations_keep("copilot", path);
    // The session-state folder, walked, is its sessions.
    let out = ctxclean()
        .args(["stats", "--json", "-q"])
        .arg(fixture("copilot/session-state"))
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["conversations"].as_array().unwrap().len(), 1);
}

#[test]
fn cursor_agent_transcripts_read_their_calls_and_say_their_results_are_not_kept() {
    for (path, calls) in [
        ("cursor/test-session.jsonl", 2),
        ("cursor/subagent-session.jsonl", 1),
    ] {
        let v = stats(path);
        let c = &v["conversations"][0];
        assert_eq!(c["format"], "cursor", "{path}");
        assert_eq!(c["tool_calls"], calls, "{path}");
        let notes = c["notes"].to_string();
        assert!(
            notes.contains("a Cursor agent transcript keeps no tool results"),
            "{path}: {notes}"
        );
        unchanged(&[path]);
        // Without results the file is no request: validate says so.
        let (ok, said) = validate(path);
        assert!(!ok && said.contains("has no result"), "{path}: {said}");
    }
    let msgs = openai_messages("cursor/test-session.jsonl");
    assert!(msgs[0].1.contains("<user_query>"), "{msgs:?}");
    // Trimmed to its last turn, the transcript is still Cursor's.
    let (out, _) = run(&["trim", "--max-tokens", "60"], "cursor/test-session.jsonl");
    let text = String::from_utf8(out).unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let cursor_line = (v["role"].is_string() && v["message"].get("role").is_none())
            || v["type"] == "turn_ended";
        assert!(cursor_line, "{line}");
    }
    assert!(text.contains("git status"), "{text}");
}

#[test]
fn a_letta_file_with_nothing_in_context_reads_with_from_as_without() {
    // Found by fuzzing: detected, it read (nothing in context, said); named
    // with --from, "no record is a letta message", though every record is.
    let file = r#"{"agent_type": "memgpt_agent", "messages": [{"role": "system", "content": [{"type": "text", "text": "You are Letta."}]}], "in_context_message_indices": [3]}"#;
    for args in [
        &["stats", "--json", "-"][..],
        &["stats", "--json", "--from", "letta", "-"],
    ] {
        let out = ctxclean().args(args).write_stdin(file).assert().success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["conversations"][0]["messages"], 0, "{args:?}");
        let notes = v["conversations"][0]["notes"].to_string();
        assert!(notes.contains("not in the agent's context"), "{notes}");
    }
}

#[test]
fn a_saved_stream_read_with_from_is_its_answer() {
    // Found by fuzzing read_auto after the Letta fix: a stream's chunks make
    // their message in the format's last pass, and --from took that for "no
    // record is a message".
    for (path, format) in [
        ("answers/anthropic-stream.jsonl", "anthropic"),
        ("answers/openai-stream.jsonl", "openai"),
    ] {
        let out = ctxclean()
            .args(["stats", "--json", "-q", "--from", format])
            .arg(fixture(path))
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["conversations"][0]["messages"], 1, "{path}");
    }
}

#[test]
fn a_stream_whose_chunks_make_no_message_reads_the_same_with_from() {
    // Found by fuzzing read_auto: detected, it read (nothing, said); named,
    // "no record is a openai message".
    let chunk = |delta: &str| {
        format!(
            r#"{{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#
        )
    };
    let stream = [
        chunk(r#"{"role":"assistant","content":""}"#),
        chunk(r#"{"tool_calls":[{"index":1,"id":"t","type":"function","function":{"arguments":"{}"}}]}"#),
    ]
    .join("\n");
    for args in [
        &["stats", "--json", "-"][..],
        &["stats", "--json", "--from", "openai", "-"],
    ] {
        let out = ctxclean()
            .args(args)
            .write_stdin(stream.clone())
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let notes = v["conversations"][0]["notes"].to_string();
        assert!(
            notes.contains("the stream's chunks make no message"),
            "{args:?}: {notes}"
        );
    }
}

#[test]
fn an_amazon_q_conversation_reads_what_the_cli_sends() {
    let path = "amazon-q/saved.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "amazon-q");
    // Four uses, each answered (a cancelled one by the CLI's words).
    assert_eq!(c["tool_calls"], 4);
    assert_eq!(c["tool_results"], 4);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path, "amazon-q/compacted.json"]);
    let msgs = openai_messages(path);
    // Hooks' context comes before the prompt, as the CLI sends it; a JSON
    // result is its JSON.
    let asked = msgs
        .iter()
        .find(|(_, t)| t.contains("Add up March"))
        .unwrap();
    assert!(asked.1.contains("[git-status]"), "{msgs:?}");
    assert!(
        msgs.iter()
            .any(|(r, t)| r == "tool" && t.contains("\"exit_status\":\"0\"")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(r, t)| r == "tool" && t == "Tool use was cancelled by the user"),
        "{msgs:?}"
    );
    operations_keep("amazon-q", path);
    // A result compacted is one Text block (a JSON one too); the entry
    // keeps its status.
    let (out, _) = run(
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ],
        path,
    );
    let after: Value = serde_json::from_slice(&out).unwrap();
    let result = &after["history"][3]["user"]["content"]["ToolUseResults"]["tool_use_results"][1];
    assert!(
        result["content"][0]["Text"]
            .as_str()
            .unwrap()
            .starts_with("[Tool: object {exit_status, stdout, stderr}"),
        "{result}"
    );
    assert_eq!(result["status"], "Success");
    // Trimmed, the entries left are the range the CLI sends.
    let (out, _) = run(&["trim", "--max-tokens", "250"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let left = after["history"].as_array().unwrap().len();
    assert!(left < 5, "{after}");
    assert_eq!(after["valid_history_range"], serde_json::json!([0, left]));
    // Filtered, a previous cycle's use leaves its entry a `Response`, and
    // its result leaves the next entry's list.
    let (out, _) = run(&["filter", "--previous-cycles"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        after["history"][0]["assistant"]["Response"]["content"],
        "I'll list the folder."
    );
    assert_eq!(
        after["history"][1]["user"]["content"]["ToolUseResults"]["tool_use_results"],
        serde_json::json!([])
    );
    valid_as("amazon-q", out);
    // A summary is an entry of its own, the assistant's turn after it empty
    // (no message, read again).
    let (out, _) = run(&["summarize", "--threshold", "100", "--keep", "3"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let first = &after["history"][0];
    assert!(first["user"]["content"]["Prompt"]["prompt"]
        .as_str()
        .unwrap()
        .contains("summary"));
    assert_eq!(first["assistant"]["Response"]["content"], "");
    let len = after["history"].as_array().unwrap().len();
    assert_eq!(after["valid_history_range"], serde_json::json!([0, len]));
    valid_as("amazon-q", out);
}

#[test]
fn an_amazon_q_summary_and_range_are_what_the_cli_sends() {
    let path = "amazon-q/compacted.json";
    let msgs = openai_messages(path);
    // The last /compact's summary first, then only the entries in range.
    assert_eq!(msgs[0].0, "user");
    assert!(
        msgs[0]
            .1
            .contains("SUMMARY CONTENT:\n## CONVERSATION SUMMARY"),
        "{msgs:?}"
    );
    assert!(
        !msgs
            .iter()
            .any(|(_, t)| t.contains("What is in this folder?")),
        "{msgs:?}"
    );
    let (_, said) = run(&["stats"], path);
    assert!(
        said.contains("outside valid_history_range [2, 5)"),
        "{said}"
    );
    // Trimmed, the entries before the range stay, unread, before it.
    let (out, _) = run(&["trim", "--max-tokens", "300"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let history = after["history"].as_array().unwrap();
    assert_eq!(
        history[0]["user"]["content"]["Prompt"]["prompt"],
        "What is in this folder?"
    );
    assert_eq!(after["valid_history_range"][0], 2);
    assert_eq!(after["valid_history_range"][1], history.len());
    // Summarized, the CLI's summary goes into the new one, an entry at the
    // start of the range, which the entries before it still precede.
    let (out, _) = run(&["summarize", "--threshold", "50", "--keep", "2"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(after["latest_summary"], Value::Null);
    let history = after["history"].as_array().unwrap();
    assert!(history[2]["user"]["content"]["Prompt"]["prompt"]
        .as_str()
        .unwrap()
        .starts_with("[Previous conversation summary]"));
    assert_eq!(
        after["valid_history_range"],
        serde_json::json!([2, history.len()])
    );
    valid_as("amazon-q", out);
}

#[test]
fn an_amazon_q_conversation_of_pairs_is_refused_with_its_reason() {
    let out = ctxclean()
        .args(["stats", "-q"])
        .arg(fixture("malformed/amazon-q-pairs-before-1.13.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(said.contains("before version 1.13"), "{said}");
    assert!(
        said.contains("amazon-q-pairs-before-1.13.json:1:"),
        "{said}"
    );
}

#[test]
fn a_grok_build_session_reads_its_lines_and_keeps_their_shape() {
    let path = "grok-build/chat_history.jsonl";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "grok-build");
    // Four calls, answered by id (the first two in the other order).
    assert_eq!(c["tool_calls"], 4);
    assert_eq!(c["tool_results"], 4);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let msgs = openai_messages(path);
    assert_eq!(msgs[0].0, "system");
    // A line the agent added (a reminder) is sent like the others.
    assert!(
        msgs.iter()
            .any(|(r, t)| r == "user" && t.contains("<system-reminder>")),
        "{msgs:?}"
    );
    operations_keep("grok-build", path);
    // Filtered, a previous cycle's calls leave the assistant's line and
    // their results leave the file; the line keeps its model fields.
    let (out, _) = run(&["filter", "--previous-cycles"], path);
    let text = String::from_utf8(out.clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = lines
        .iter()
        .find(|l| l["content"] == "I'll read the totals module and its test.")
        .unwrap();
    assert!(first.get("tool_calls").is_none(), "{first}");
    assert_eq!(first["model_id"], "grok-4.6-build");
    assert!(!text.contains("call-7f3b"), "{text}");
    valid_as("grok-build", out);
    // A summary is a line of Grok Build's own shape.
    let (out, _) = run(&["summarize", "--threshold", "100", "--keep", "3"], path);
    let text = String::from_utf8(out.clone()).unwrap();
    let summary: Value = serde_json::from_str(
        text.lines()
            .find(|l| l.contains("Previous conversation summary"))
            .unwrap(),
    )
    .unwrap();
    assert!(summary["type"] == "user" || summary["type"] == "system");
    assert!(summary["content"].is_string());
    valid_as("grok-build", out);
}
