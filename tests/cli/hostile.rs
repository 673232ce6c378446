//! Transcripts of hostile shape in the IDE agents' and newer agents'
//! formats, each a case `scripts/invariants.py` found on random ones
//! (`scripts/random_transcripts.py`): a run that exits 0 with the file
//! not given back as it came, or the report saying it kept messages the
//! output does not hold.

use serde_json::{json, Value};

use crate::util::ctxclean;

/// What a command writes for `input` given on standard input, and its
/// report.
fn run(args: &[&str], input: &Value) -> (Vec<u8>, Value) {
    run_text(args, input.to_string())
}

/// What a command writes for `text` given on standard input, and its
/// report.
fn run_text(args: &[&str], text: String) -> (Vec<u8>, Value) {
    let dir = crate::util::temp_dir("hostile");
    let report = dir.join("report.json");
    let out = ctxclean()
        .args(args)
        .arg("-q")
        .arg("--report")
        .arg(&report)
        .arg("-")
        .write_stdin(text)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    (out.stdout, report)
}

/// `stats --json` of a document.
fn stats_of(doc: &[u8]) -> Value {
    let out = ctxclean()
        .args(["stats", "--json", "-"])
        .write_stdin(doc.to_vec())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// How many messages a document reads as.
fn messages(doc: &[u8]) -> u64 {
    stats_of(doc)["conversations"][0]["messages"]
        .as_u64()
        .unwrap()
}

/// A Continue session of these history items.
fn continue_session(history: Value) -> Value {
    json!({"sessionId": "s", "title": "t", "workspaceDirectory": "file:///w", "history": history})
}

/// A Continue history item of text.
fn said(role: &str, text: &str) -> Value {
    json!({"message": {"role": role, "content": text}, "contextItems": []})
}

/// A stored `role: tool` message answering `id`.
fn stored(id: &str, text: &str) -> Value {
    json!({"message": {"role": "tool", "content": text, "toolCallId": id}, "contextItems": []})
}

/// An assistant's item calling `bash` as `id`, the call's state `status`
/// with `output` (none when `None`).
fn calling(id: &str, status: &str, output: Option<&str>) -> Value {
    let mut state = json!({"toolCallId": id, "status": status});
    if let Some(o) = output {
        state["output"] = json!([{"content": o}]);
    }
    json!({"message": {"role": "assistant", "content": "", "toolCalls": [
            {"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
           "contextItems": [], "toolCallStates": [state]})
}

/// The report's messages kept, and what the output reads back as.
fn kept_and_read(report: &Value, out: &[u8]) -> (u64, u64) {
    let kept = report["conversations"][0]["after"]["messages"]
        .as_u64()
        .unwrap();
    (kept, messages(out))
}

#[test]
fn a_continue_result_of_no_call_comes_back_as_it_came() {
    // A stored tool message whose call is nowhere in the session: Continue
    // sends it (no state answers it). Its item left the file with exit 0,
    // under `convert` itself, while the report said it was kept.
    let session = continue_session(json!([
        said("user", "hi"),
        stored("call_9", "stray output"),
        said("assistant", "ok")
    ]));
    let (out, report) = run(&["convert"], &session);
    assert_eq!(out, session.to_string().into_bytes());
    let (kept, read) = kept_and_read(&report, &out);
    assert_eq!((kept, read), (3, 3));
    // A call removed (a previous cycle's) still takes its stored copy with
    // it (and the result of no call goes as a result whose call went, said
    // in the report): read again, the file holds what the report kept.
    let session = continue_session(json!([
        said("user", "hi"),
        calling("call_1", "done", Some("out")),
        stored("call_1", "out"),
        said("user", "next"),
        stored("call_9", "stray output"),
        said("assistant", "ok")
    ]));
    let (out, report) = run(&["filter", "--previous-cycles"], &session);
    let after: Value = serde_json::from_slice(&out).unwrap();
    assert!(
        after["history"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["message"]["toolCallId"].is_null()),
        "{after}"
    );
    let reasons: Vec<&Value> = report["conversations"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["what"])
        .collect();
    assert!(
        reasons.contains(&&json!("results whose call went")),
        "{reasons:?}"
    );
    let (kept, read) = kept_and_read(&report, &out);
    assert_eq!((kept, read), (3, 3));
}

#[test]
fn the_continue_item_with_the_summary_keeps_its_calls_and_states() {
    // Continue sends only the summary of the item it cuts at: its call's
    // state (never read) was dropped from the file by `convert` itself.
    let mut cut = calling("call_1", "done", Some("out"));
    cut["message"]["content"] = json!("reading");
    cut["conversationSummary"] = json!("The user said hi; bash ran.");
    let session = continue_session(json!([
        said("user", "hi"),
        cut,
        said("user", "next"),
        said("assistant", "ok")
    ]));
    let (out, report) = run(&["convert"], &session);
    assert_eq!(out, session.to_string().into_bytes());
    assert_eq!(kept_and_read(&report, &out), (3, 3));
    // Summarized again, the item keeps its state; the summary goes.
    let (out, report) = run(&["filter", "--exclude-roles", "system"], &session);
    let after: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        after["history"][1]["toolCallStates"],
        session["history"][1]["toolCallStates"]
    );
    let (kept, read) = kept_and_read(&report, &out);
    assert_eq!(kept, read, "{after}");
}

#[test]
fn copilot_chat_calls_of_one_id_in_a_round_keep_their_own_arguments() {
    // Two calls of one id in a round: each was written back with the first
    // one's arguments, by `convert` itself.
    let call = |id: &str, path: &str| json!({"name": "read_file", "arguments": format!("{{\"path\": \"{path}\"}}"), "id": id});
    let session = json!({
        "version": 3, "requesterUsername": "dev", "responderUsername": "GitHub Copilot",
        "requests": [{
            "requestId": "r0",
            "message": {"parts": [], "text": "read them"},
            "response": [],
            "result": {"metadata": {
                "toolCallRounds": [
                    {"response": "", "toolCalls": [call("x", "a.rs"), call("y", "b.rs"), call("x", "c.rs")], "id": "r1"},
                    {"response": "done", "toolCalls": [], "id": "r2"}
                ],
                "toolCallResults": {
                    "x": {"content": [{"value": "text of a"}]},
                    "y": {"content": [{"value": "text of b"}]}
                }
            }}
        }]
    });
    let (out, _) = run(&["convert"], &session);
    assert_eq!(out, session.to_string().into_bytes());
    // The older read of a path superseded: the call that goes is the one
    // removed, and the report's count is what the output holds.
    let mut twice = session.clone();
    twice["requests"][0]["result"]["metadata"]["toolCallRounds"][0]["toolCalls"][2] =
        call("x", "a.rs");
    let (out, report) = run(&["filter", "--supersede", "read_file=path"], &twice);
    let (kept, read) = kept_and_read(&report, &out);
    assert_eq!(kept, read, "{}", String::from_utf8_lossy(&out));
}

#[test]
fn copilot_chat_results_that_share_an_id_keep_the_result_as_it_came() {
    // A request keeps one result per call id: two calls of one id read the
    // same stored result. `--dedupe-tool-results` replaced the second with
    // a note pointing at the first, and the note was written into the one
    // result both share: read again, the first pointed at itself and the
    // result's text was gone, exit 0.
    let text = "line 1 of src/ledger.rs: the March expenses, line by line ".repeat(8);
    let call = |path: &str| json!({"name": "bash", "arguments": format!("{{\"command\": \"cat {path}\"}}"), "id": "x"});
    let session = json!({
        "version": 3, "requesterUsername": "dev", "responderUsername": "GitHub Copilot",
        "requests": [{
            "requestId": "r0",
            "message": {"parts": [], "text": "read it twice"},
            "response": [],
            "result": {"metadata": {
                "toolCallRounds": [
                    {"response": "", "toolCalls": [call("a.rs")], "id": "r1"},
                    {"response": "again", "toolCalls": [call("a.rs")], "id": "r2"},
                    {"response": "done", "toolCalls": [], "id": "r3"}
                ],
                "toolCallResults": {"x": {"content": [{"value": text}]}}
            }}
        }]
    });
    let (out, _) = run(&["filter", "--dedupe-tool-results"], &session);
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        out["requests"][0]["result"]["metadata"]["toolCallResults"]["x"]["content"][0]["value"],
        json!(text)
    );
}

#[test]
fn a_letta_summary_is_in_the_context_of_an_agent_file_by_ids() {
    // The newer agent files list the context by message ids: a summary
    // added had no id, so it was out of the context, read again, and the
    // file read as one message fewer than the report said it kept.
    let msg = |id: &str, role: &str, text: &str| {
        json!({"type": "message", "role": role, "id": id,
               "content": [{"type": "text", "text": text}], "tool_calls": null, "tool_call_id": null})
    };
    let long = "the ledger holds the March expenses line by line ".repeat(20);
    let agent = json!({
        "agents": [{
            "name": "a", "id": "agent-0",
            "in_context_message_ids": ["message-0", "message-1", "message-2", "message-3", "message-4"],
            "messages": [
                msg("message-0", "system", "You help."),
                msg("message-1", "user", &long),
                msg("message-2", "assistant", &long),
                msg("message-3", "user", "And the total?"),
                msg("message-4", "assistant", "It is 412.")
            ]
        }],
        "groups": [], "blocks": [], "tools": []
    });
    let (out, report) = run(&["summarize", "--threshold", "200", "--keep", "2"], &agent);
    let (kept, read) = kept_and_read(&report, &out);
    assert_eq!(kept, read, "{}", String::from_utf8_lossy(&out));
    let after: Value = serde_json::from_slice(&out).unwrap();
    let a = &after["agents"][0];
    let ids: Vec<&str> = a["in_context_message_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    let summary = a["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            !m["id"].as_str().unwrap().starts_with("message-") || m["id"] == "message-ctxclean-1"
        })
        .expect("the summary's record, with an id");
    assert!(ids.contains(&summary["id"].as_str().unwrap()), "{ids:?}");
    assert_eq!(ids.last(), Some(&"message-4"), "{ids:?}");
}

#[test]
fn a_conversation_the_assistant_opens_converts_to_valid_user_first_bodies() {
    // A Continue session cut at its summary, or an agent that speaks first:
    // valid for OpenAI, and written for Anthropic or Gemini as an invalid
    // body (the user's turn first), with exit 0.
    let body = json!({"model": "gpt-4o", "messages": [
        {"role": "system", "content": "Summary of the conversation so far."},
        {"role": "assistant", "content": "I read the file."},
        {"role": "user", "content": "Go on."}
    ]});
    for to in ["anthropic", "gemini"] {
        let out = ctxclean()
            .args(["convert", "--to", to, "-"])
            .write_stdin(body.to_string())
            .output()
            .unwrap();
        assert!(out.status.success());
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("\"[Start of conversation]\" put first"),
            "{said}"
        );
        ctxclean()
            .args(["validate", "-q", "-"])
            .write_stdin(out.stdout.clone())
            .assert()
            .success();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.find("[Start of conversation]") < text.find("I read the file."),
            "{text}"
        );
    }
    // A Continue session cut at its last item is its summary alone.
    let only_system = json!({"messages": [{"role": "system", "content": "Summary so far."}]});
    for to in ["anthropic", "gemini"] {
        let out = ctxclean()
            .args(["convert", "-q", "--to", to, "-"])
            .write_stdin(only_system.to_string())
            .output()
            .unwrap();
        assert!(out.status.success());
        ctxclean()
            .args(["validate", "-q", "-"])
            .write_stdin(out.stdout)
            .assert()
            .success();
    }
    // OpenAI takes it as it is.
    let out = ctxclean()
        .args(["convert", "--to", "openai", "-q", "-"])
        .write_stdin(body.to_string())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("[Start of conversation]"));
}

#[test]
fn a_kimi_code_summary_is_not_put_where_a_compaction_wipes_it() {
    // The user's own turns outlive a compaction in Kimi Code's context; a
    // summary of them, written right before the compaction, was wiped by
    // it when the log was read again: one message fewer than the report
    // kept.
    let long = "the ledger holds the March expenses line by line ".repeat(12);
    let user = |text: &str, time: u64| {
        json!({"type": "context.append_message", "message": {"role": "user",
            "content": [{"type": "text", "text": text}], "toolCalls": [], "origin": {"kind": "user"}},
            "time": time})
    };
    let part = |step: &str, text: &str| {
        json!({"type": "context.append_loop_event", "event": {"type": "content.part",
            "uuid": format!("{step}-0"), "stepUuid": step, "part": {"type": "text", "text": text}}})
    };
    let event = |kind: &str, step: &str| json!({"type": "context.append_loop_event", "event": {"type": kind, "uuid": step}});
    let lines = [
        json!({"type": "metadata", "protocol_version": "1.5", "created_at": 1}),
        user(&long, 2),
        event("step.begin", "s1"),
        part("s1", &long),
        event("step.end", "s1"),
        user(&long, 6),
        json!({"type": "context.apply_compaction", "summary": "They talked about the ledger.",
               "compactedCount": 3, "keptUserMessageCount": 2}),
        user("And the total?", 8),
        event("step.begin", "s2"),
        part("s2", "It is 412."),
        event("step.end", "s2"),
    ];
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    // What summarizing keeps and reads back as, and whether the summary
    // stands after the last compaction.
    let summarized = |log: String| {
        let args = [
            "summarize",
            "--threshold",
            "200",
            "--keep",
            "3",
            "--from",
            "kimi-code",
        ];
        let (out, report) = run_text(&args, log);
        let (kept, read) = kept_and_read(&report, &out);
        let body = String::from_utf8(out).unwrap();
        let summary = body.find("[Previous conversation summary]");
        let last = body.rfind("context.apply_compaction").unwrap();
        assert!(summary.is_some_and(|s| last < s), "{body}");
        (kept, read)
    };
    assert_eq!(summarized(log.clone()), (4, 4));
    // A later compaction wipes it too: it goes after the last one.
    let later = [
        json!({"type": "context.apply_compaction", "summary": "The total is 412.",
               "compactedCount": 2, "keptUserMessageCount": 3}),
        user("Thanks.", 12),
    ];
    let log = log + &later.iter().map(|l| format!("{l}\n")).collect::<String>();
    let (kept, read) = summarized(log);
    assert_eq!(kept, read);
}

#[test]
fn a_continue_cancelled_call_s_result_changed_is_sent_as_changed() {
    // Continue sends its own words for a cancelled call, whatever the
    // state's output: a note put in its output was never sent, and a second
    // run replaced it again.
    let session = continue_session(json!([
        said("user", "run it"),
        calling("call_1", "canceled", None),
        calling("call_2", "canceled", None),
        said("assistant", "Both were cancelled.")
    ]));
    let (once, _) = run(&["filter", "--dedupe-tool-results"], &session);
    let after: Value = serde_json::from_slice(&once).unwrap();
    let state = &after["history"][2]["toolCallStates"][0];
    assert_eq!(state["status"], "done", "{after}");
    assert!(state["output"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("[same result as"));
    let (twice, _) = run(&["filter", "--dedupe-tool-results"], &after);
    assert_eq!(
        serde_json::from_slice::<Value>(&twice).unwrap(),
        after,
        "a second run changed nothing"
    );
}

#[test]
fn a_continue_result_removed_leaves_with_its_stored_copy() {
    // A state answers the call, so its stored `role: tool` copy is not sent.
    // The result removed took its state only: read again, the copy was the
    // result, back.
    let session = continue_session(json!([
        said("user", "run it"),
        calling("call_1", "done", Some("out")),
        stored("call_1", "out")
    ]));
    // The call, the last of the cycle in progress, stays without its result.
    let (out, report) = run(&["filter", "--exclude-roles", "tool"], &session);
    let (kept, read) = kept_and_read(&report, &out);
    assert_eq!((kept, read), (2, 2), "{}", String::from_utf8_lossy(&out));
}

#[test]
fn an_amp_result_without_its_run_s_output_comes_back_as_it_came() {
    // A run that failed keeps no `result` or `progress`: the block was
    // written back with a `tool_use_id` beside its `toolUseID`, by
    // `convert` itself.
    let thread = json!({
        "v": 3, "id": "T-aaaaaaaa-aaaa", "created": 1, "title": "t", "env": {},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "run it"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"cmd": "make"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "toolUseID": "toolu_1",
                 "run": {"status": "error", "error": {"message": "make: no rule"}}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "It failed."}]}
        ]
    });
    let (out, _) = run(&["convert"], &thread);
    assert_eq!(out, thread.to_string().into_bytes());
}

#[test]
fn a_grok_build_session_trimmed_to_its_system_prompt_and_a_result_reads_back() {
    // `trim` kept the system prompt and the last line, a result of no call:
    // read again, the two lines were taken for LangChain messages and
    // refused (`unknown LangChain message type "tool_result"`).
    let lines = [
        json!({"type": "system", "content": "You are Grok."}),
        json!({"type": "tool_result", "tool_call_id": "", "content": "stray output"}),
    ];
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let v = stats_of(log.as_bytes());
    assert_eq!(v["conversations"][0]["format"], "grok-build");
    assert_eq!(v["conversations"][0]["messages"], 2);
}

/// A Zed thread of `messages`.
fn zed_thread(messages: Value) -> Value {
    json!({"title": "t", "messages": messages, "updated_at": "2026-12-01T00:00:00Z", "version": "0.3.0"})
}

#[test]
fn a_zed_image_stripped_leaves_its_note_in_the_file() {
    // `--strip-processed-images` replaced the image with a note, and the
    // report said so, but Zed's writer wrote a text only where text was:
    // the image stayed in the file, its tokens counted as saved.
    let png = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAICAYAAAAfFcSJAAAADUlEQVR42mP4z8DwHwAF/gL+LZ+MbgAAAABJRU5ErkJggg==";
    let thread = zed_thread(json!([
        {"User": {"id": "u0", "content": [{"Text": "what is on it?"}, {"Image": {"source": png, "size": null}}]}},
        {"Agent": {"content": [{"Text": "A red square."}], "tool_results": {}}},
        {"User": {"id": "u1", "content": [{"Text": "thanks"}]}},
        {"Agent": {"content": [{"Text": "You are welcome."}], "tool_results": {}}}
    ]));
    let (out, report) = run(&["filter", "--strip-processed-images"], &thread);
    let changes = &report["conversations"][0]["changes"];
    assert_eq!(changes[0]["reason"], "processed images", "{report}");
    let out: Value = serde_json::from_slice(&out).unwrap();
    let items = &out["messages"][0]["User"]["content"];
    assert!(!items.to_string().contains(png), "{items}");
    assert!(
        items[1]["Text"].as_str().unwrap().starts_with("[image"),
        "{items}"
    );
}

#[test]
fn zed_results_that_share_an_id_keep_the_result_as_it_came() {
    // A turn keeps one result per call id: two calls of one id read the
    // same result. `--moved-past` replaced the first with a note (its
    // strings are all in the second), and the note went into the result
    // both share: read again, the second (named in no change) was the note
    // too, the result's text gone.
    let text = "src/ledger.rs holds 4812 rows of March expenses; the totals by category are at line 120, and nothing else of note was found in the files searched";
    let call = |name: &str, cmd: &str| json!({"ToolUse": {"id": "x", "name": name, "raw_input": format!("{{\"command\": \"{cmd}\"}}"), "input": {"command": cmd}, "is_input_complete": true}});
    let thread = zed_thread(json!([
        {"User": {"id": "u0", "content": [{"Text": "look at the ledger"}]}},
        {"Agent": {"content": [call("bash", "cat src/ledger.rs"), call("read_file", "src/ledger.rs")],
                   "tool_results": {"x": {"tool_use_id": "x", "tool_name": "bash", "is_error": false, "content": {"Text": text}, "output": null}}}},
        {"User": {"id": "u1", "content": [{"Text": "thanks"}]}},
        {"Agent": {"content": [{"Text": "You are welcome."}], "tool_results": {}}}
    ]));
    let (out, report) = run(&["filter", "--moved-past"], &thread);
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        out["messages"][1]["Agent"]["tool_results"]["x"]["content"]["Text"],
        json!(text),
        "{report}"
    );
}

#[test]
fn a_loss_in_a_message_an_operation_added_names_no_message_of_the_input() {
    // A Bedrock Converse body takes instructions only in `system`: the
    // summary `summarize` adds (a system message) is written as a user
    // turn, said as a loss. The loss was put on the input's message 0 (the
    // position of the summary among the new messages), so the report said
    // the user's system prompt had been changed.
    let turn = |role: &str, text: String| json!({"role": role, "content": [{"text": text}]});
    let mut messages = Vec::new();
    for k in 0..6 {
        messages.push(turn(
            "user",
            format!(
                "question {k} about the March ledger, line by line, {}",
                "row ".repeat(30)
            ),
        ));
        messages.push(turn(
            "assistant",
            format!("answer {k}: {}", "total ".repeat(30)),
        ));
    }
    messages.push(turn("user", "and the sum?".into()));
    let body = json!({"modelId": "anthropic.claude-3-haiku", "system": [{"text": "You keep the books."}], "messages": messages});
    let (out, report) = run(&["summarize", "--threshold", "200", "--keep", "3"], &body);
    let conv = &report["conversations"][0];
    let named: Vec<&Value> = conv["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("lost").is_some())
        .collect();
    assert!(named.is_empty(), "{named:?}");
    assert!(
        conv["lost"].to_string().contains("system message"),
        "{conv}"
    );
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["system"], json!([{"text": "You keep the books."}]));
}

#[test]
fn a_result_of_an_id_given_twice_stays_in_its_own_block() {
    // Two calls of one id in a turn, their results in one user turn with a
    // text between them. `--supersede` took the first call and its result:
    // the second result was written into the first one's block, before the
    // text, a change the report did not name.
    let body = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "read a.rs twice"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "x", "name": "read_file", "input": {"path": "a.rs"}},
                {"type": "tool_use", "id": "x", "name": "read_file", "input": {"path": "a.rs"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "x", "content": "fn main() { first }"},
                {"type": "text", "text": "the second read came late"},
                {"type": "tool_result", "tool_use_id": "x", "content": "fn main() { second }"}]},
            {"role": "assistant", "content": "Both read."}
        ]
    });
    let (out, report) = run(&["filter", "--supersede", "read_file=path"], &body);
    let out: Value = serde_json::from_slice(&out).unwrap();
    let blocks = &out["messages"][2]["content"];
    assert_eq!(blocks[0]["type"], "text", "{blocks} {report}");
    assert_eq!(blocks[1]["content"], "fn main() { second }", "{blocks}");
}

#[test]
fn a_librechat_result_stays_with_the_call_that_holds_it_when_an_id_is_given_twice() {
    // Two calls of one id, the result inside the second's item: it was
    // paired with the first (the first open call of the id), so the
    // pairs' repair took the second call, its arguments gone, and wrote its
    // result into the first, which had none, exit 0.
    let msg = |id: &str, parent: &str, user: bool, extra: Value| {
        let mut m = json!({"messageId": id, "conversationId": "c1", "parentMessageId": parent,
                           "isCreatedByUser": user, "sender": if user { "User" } else { "GPT-4" },
                           "createdAt": "2026-01-01T00:00:01.000Z", "text": ""});
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        m
    };
    let root = "00000000-0000-0000-0000-000000000000";
    let export = json!({
        "conversationId": "c1", "endpoint": "agents", "title": "t", "exportAt": "2026-01-01T01:00:00.000Z",
        "branches": true, "recursive": false, "options": {"model": "gpt-4o"},
        "messages": [
            msg("m-1", root, true, json!({"text": "read the ledger"})),
            msg("m-2", "m-1", false, json!({"content": [
                {"type": "tool_call", "tool_call": {"name": "bash", "args": "{\"command\": \"ls\"}", "id": "x"}},
                {"type": "tool_call", "tool_call": {"name": "read_file", "args": "{\"path\": \"ledger.rs\"}", "id": "x", "output": "4812 rows of March expenses"}}]})),
            msg("m-3", "m-2", true, json!({"text": "thanks"})),
            msg("m-4", "m-3", false, json!({"content": [{"type": "text", "text": "You are welcome."}]}))
        ]
    });
    let (out, _) = run(&["convert"], &export);
    assert_eq!(out, export.to_string().into_bytes());
    let (out, report) = run(&["filter", "--drop-thinking"], &export);
    let out: Value = serde_json::from_slice(&out).unwrap();
    let items = &out["messages"][1]["content"];
    assert_eq!(items.as_array().unwrap().len(), 1, "{items} {report}");
    assert_eq!(items[0]["tool_call"]["name"], "read_file", "{items}");
    assert_eq!(
        items[0]["tool_call"]["output"],
        "4812 rows of March expenses"
    );
}
