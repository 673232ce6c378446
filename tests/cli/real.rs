//! Real transcripts (issue 13): what people have is read, counted as the
//! provider counts it, and given back exactly as it came.

use serde_json::Value;

use crate::util::{ctxclean, fixture, temp_dir};

fn json(out: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn stderr(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(out.get_output().stderr.clone()).unwrap()
}

#[test]
fn a_byte_order_mark_comes_back_and_opens_only_the_first_shared_output() {
    let dir = temp_dir("bom");
    let doc = dir.join("export.json");
    let body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\r\n";
    std::fs::write(&doc, format!("\u{feff}{body}")).unwrap();
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(&doc)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&doc).unwrap());
    // Two JSONL inputs with a BOM on one output stream: one BOM, at the start.
    let a = dir.join("a.jsonl");
    let b = dir.join("b.jsonl");
    let line = "{\"role\":\"user\",\"content\":\"x\"}\n";
    std::fs::write(&a, format!("\u{feff}{line}")).unwrap();
    std::fs::write(&b, format!("\u{feff}{line}")).unwrap();
    let out = ctxclean()
        .args(["convert", "-q"])
        .args([&a, &b])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(text, format!("\u{feff}{line}{line}"));
    // A conversion writes a new file: no BOM.
    let out = ctxclean()
        .args(["convert", "-q", "--to", "anthropic"])
        .arg(&doc)
        .assert()
        .success();
    assert!(!out.get_output().stdout.starts_with(b"\xEF\xBB\xBF"));
}

#[test]
fn a_dangling_current_node_is_kept_followed_and_told() {
    let dir = temp_dir("chatgpt-dangling");
    let text = std::fs::read_to_string(fixture("exports/chatgpt-modern.json")).unwrap();
    let dangling = text.replace(
        "\"current_node\": \"assistant-2\"",
        "\"current_node\": \"trimmed-away\"",
    );
    assert_ne!(dangling, text);
    let path = dir.join("conversations.json");
    std::fs::write(&path, &dangling).unwrap();
    // stats: the messages of the newest branch, and a note on stderr and in JSON.
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    let v = json(&out);
    let first = &v["conversations"][0];
    assert_eq!(first["messages"], 5);
    assert!(first["notes"][0]
        .as_str()
        .unwrap()
        .contains("\"trimmed-away\" is not in the message tree"));
    assert!(
        stderr(&out).contains("ctxclean stats: note: "),
        "{}",
        stderr(&out)
    );
    // The entry that lost its mapping is an empty conversation with a note.
    assert_eq!(v["conversations"][1]["messages"], 0);
    assert!(v["conversations"][1]["notes"][0]
        .as_str()
        .unwrap()
        .contains("no \"mapping\""));
    // convert gives the id back as it was; a change elsewhere keeps it too.
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, dangling.as_bytes());
    let out = ctxclean()
        .args(["filter", "-q", "--exclude-roles", "system"])
        .arg(&path)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v[0]["current_node"], "trimmed-away");
}

#[test]
fn encrypted_reasoning_is_reported_in_bytes_never_as_tokens() {
    let out = ctxclean()
        .args(["stats", "--json", "--per-message"])
        .arg(fixture("codex/encrypted-reasoning.jsonl"))
        .assert()
        .success();
    let v = json(&out);
    let c = &v["conversations"][0];
    assert_eq!(c["opaque_bytes"], 4108);
    assert_eq!(c["opaque"]["encrypted_reasoning"]["payloads"], 2);
    assert_eq!(v["total"]["opaque_bytes"], 4108);
    // Each reasoning item costs its summary, not its 2 KB blob.
    let per: Vec<u64> = c["per_message"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .collect();
    assert!(per.iter().all(|&n| n < 120), "{per:?}");
    let table = ctxclean()
        .arg("stats")
        .arg(fixture("codex/encrypted-reasoning.jsonl"))
        .assert()
        .success();
    let text = String::from_utf8(table.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("opaque (not tokens): 2 encrypted reasoning, 4,108 bytes"),
        "{text}"
    );
    // Anthropic thinking signatures too.
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(fixture("written/anthropic_request.json"))
        .assert()
        .success();
    assert_eq!(
        json(&out)["conversations"][0]["opaque"]["signature"]["payloads"],
        1
    );
}

#[test]
fn parallel_calls_in_responses_order_are_valid_for_responses_only() {
    ctxclean()
        .arg("validate")
        .arg(fixture("codex/encrypted-reasoning.jsonl"))
        .assert()
        .success();
    let out = ctxclean()
        .args(["validate", "--provider", "openai"])
        .arg(fixture("codex/encrypted-reasoning.jsonl"))
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    // A user message between a call and its output is wrong for Responses too.
    let bad = r#"{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"role":"user","content":"wait"},{"type":"function_call_output","call_id":"a","output":"x"}]}"#;
    let out = ctxclean().arg("validate").write_stdin(bad).assert().code(1);
    assert!(String::from_utf8(out.get_output().stdout.clone())
        .unwrap()
        .contains("function_call_output"));
}

#[test]
fn history_only_open_webui_chats_are_read_and_written_in_their_shape() {
    let path = fixture("open-webui/history-only.json");
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    let v = json(&out);
    assert_eq!(v["total"]["conversations"], 3);
    assert_eq!(v["total"]["messages"], 8);
    assert_eq!(v["total"]["tool_calls"], 1);
    // The call's name and arguments come from the message's `output` items.
    let out = ctxclean()
        .args(["stats", "--json", "--tools"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(
        json(&out)["conversations"][1]["tools"][0]["name"],
        "get_weather"
    );
    // A removal rewrites the tree, and adds no `messages` list.
    let out = ctxclean()
        .args(["filter", "-q", "--exclude-roles", "assistant"])
        .arg(&path)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let chat = &v[2]["chat"];
    assert!(chat.get("messages").is_none());
    assert!(chat["history"]["messages"].get("sa2").is_none());
    assert_eq!(
        chat["history"]["messages"]["sa1"]["childrenIds"],
        serde_json::json!([])
    );
    assert_eq!(chat["history"]["currentId"], "sa1");
}

#[test]
fn what_does_not_fit_is_refused_naming_the_key() {
    let out = ctxclean()
        .arg("stats")
        .write_stdin(r#"{"messages": [{"role": "user", "text": "hello"}]}"#)
        .assert()
        .code(1);
    let err = stderr(&out);
    assert!(err.contains("no message has \"content\""), "{err}");
    assert!(err.contains("role, text"), "{err}");
    let out = ctxclean()
        .arg("stats")
        .write_stdin(r#"{"messages": [{"speaker": "user", "text": "hello"}]}"#)
        .assert()
        .code(1);
    // No format's defining key is there: no format is named, the keys are
    // listed (issue 42: "closest is langchain" for an OpenCode export).
    let err = stderr(&out);
    assert!(
        err.contains(
            "no format ctxclean reads has these keys (messages; its records' keys: speaker, text)"
        ),
        "{err}"
    );
    let out = ctxclean()
        .arg("stats")
        .write_stdin(
            r#"{"messages": [{"role": "user", "text": "hi"}, {"speaker": "x"}, {"speaker": "y"}]}"#,
        )
        .assert()
        .code(1);
    let err = stderr(&out);
    assert!(
        err.contains("the closest is openai, but record 1 has no \"role\""),
        "{err}"
    );
}

#[test]
fn llama_factory_tool_call_parts_pair_with_their_results() {
    let path = fixture("llama-factory/reason_tool_use_demo_8.jsonl");
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    let v = json(&out);
    for c in v["conversations"].as_array().unwrap() {
        assert!(
            c["tool_results_by_tool"].get("?").is_none(),
            "a result answers no call: {c}"
        );
    }
    assert_eq!(v["total"]["tool_calls"], 12);
    assert_eq!(v["total"]["tool_results"], 10);
    // Compacting the split results writes each back into its list item.
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "0",
        ])
        .arg(&path)
        .assert()
        .success();
    let back = ctxclean()
        .args(["stats", "--json"])
        .write_stdin(out.get_output().stdout.clone())
        .assert()
        .success();
    assert_eq!(json(&back)["total"]["tool_results"], 10);
    // Images as `<image>` tokens with an `images` list.
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(fixture("llama-factory/mllm_demo.json"))
        .assert()
        .success();
    assert_eq!(json(&out)["total"]["images"], 8);
}

#[test]
fn new_formats_read_write_back_and_convert_to_openai() {
    for (path, format) in [
        ("cline/api_conversation_history.json", "cline"),
        ("cline/xml-tools.json", "cline"),
        ("cline/ui_messages.json", "cline"),
        ("hf-chat/minimind-sft.jsonl", "hf-chat"),
        ("hf-chat/minimind-dpo.jsonl", "hf-chat"),
        ("openhands/trajectory.json", "openhands"),
        ("openhands/output.jsonl", "openhands"),
        ("librechat/branches.json", "librechat"),
        ("librechat/export-tree.json", "librechat"),
    ] {
        let p = fixture(path);
        let out = ctxclean()
            .args(["stats", "--json"])
            .arg(&p)
            .assert()
            .success();
        let v = json(&out);
        assert_eq!(v["conversations"][0]["format"], format, "{path}");
        assert!(v["total"]["messages"].as_u64().unwrap() > 0, "{path}");
        let out = ctxclean()
            .args(["convert", "-q"])
            .arg(&p)
            .assert()
            .success();
        assert_eq!(
            out.get_output().stdout,
            std::fs::read(&p).unwrap(),
            "{path}"
        );
        let dir = temp_dir(&format!("conv-{}", path.replace('/', "-")));
        let report = dir.join("r.json");
        let out = ctxclean()
            .args(["convert", "-q", "--to", "openai", "--report"])
            .arg(&report)
            .arg(&p)
            .assert()
            .success();
        let back = ctxclean()
            .args(["stats", "--json"])
            .write_stdin(out.get_output().stdout.clone())
            .assert()
            .success();
        let b = json(&back);
        assert_eq!(b["conversations"][0]["format"], "openai", "{path}");
        assert_eq!(b["total"]["tool_calls"], v["total"]["tool_calls"], "{path}");
    }
}

#[test]
fn a_cline_task_reads_as_cline_and_its_results_compact() {
    let path = fixture("cline/api_conversation_history.json");
    let dir = temp_dir("cline-compact");
    let report = dir.join("r.json");
    let out = ctxclean()
        .args([
            "compact-tools",
            "--keep-last",
            "1",
            "--max-result-tokens",
            "20",
            "--report",
        ])
        .arg(&report)
        .arg(&path)
        .assert()
        .success();
    assert!(
        stderr(&out).contains("3 results compacted"),
        "{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let first = v[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        first.starts_with(
            "[read_file for 'src/cart.py'] Result:\n[Tool: 10 lines, 278 chars | class Cart:"
        ),
        "{first}"
    );
    // The environment details stay the user's, untouched.
    assert!(v[2]["content"][2]["text"]
        .as_str()
        .unwrap()
        .starts_with("<environment_details>"));
    ctxclean()
        .arg("validate")
        .write_stdin(out.get_output().stdout.clone())
        .assert()
        .success();
}

#[test]
fn an_anthropic_request_stays_anthropic_when_only_text_is_left() {
    for body in [
        r#"{"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": []}"#,
        r#"{"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}"#,
    ] {
        let out = ctxclean()
            .args(["stats", "--json"])
            .write_stdin(body)
            .assert()
            .success();
        assert_eq!(
            json(&out)["conversations"][0]["format"],
            "anthropic",
            "{body}"
        );
    }
    // OpenRouter routes Claude through OpenAI's API: its bodies are OpenAI's.
    let out = ctxclean()
        .args(["stats", "--json"])
        .write_stdin(r#"{"model": "anthropic/claude-3.5-sonnet", "messages": [{"role": "user", "content": "hi"}]}"#)
        .assert()
        .success();
    assert_eq!(json(&out)["conversations"][0]["format"], "openai");
}

#[test]
fn a_chatgpt_export_without_current_node_or_message_ids_keeps_every_message() {
    // Issue 29: exports written by other tools give no `current_node` and
    // no message ids; every operation wrote `"mapping"` without them.
    let path = fixture("exports/chatgpt-other-tool.json");
    let text = std::fs::read(&path).unwrap();
    let nodes = |bytes: &[u8]| {
        let v: Value = serde_json::from_slice(bytes).unwrap();
        v[0]["mapping"].as_object().unwrap().len()
    };
    let out = ctxclean()
        .args(["filter", "--exclude-tools", "none"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, text, "an unchanged run rewrote it");
    assert!(stderr(&out).contains("current_node is missing"));
    let out = ctxclean()
        .args(["trim", "-q", "--max-tokens", "200"])
        .arg(&path)
        .assert()
        .success();
    let trimmed = &out.get_output().stdout;
    let removed = nodes(&text) - nodes(trimmed);
    assert!(removed > 0 && removed < 8, "{removed} nodes removed");
    let back = ctxclean()
        .args(["stats", "--json"])
        .arg("-")
        .write_stdin(trimmed.clone())
        .assert()
        .success();
    let before = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(
        json(&before)["conversations"][0]["messages"]
            .as_u64()
            .unwrap()
            - removed as u64,
        json(&back)["conversations"][0]["messages"]
            .as_u64()
            .unwrap()
    );
}

#[test]
fn a_librechat_tree_kept_under_messages_is_read_along_its_newest_branch() {
    // Issue 29: `"recursive": true` exports may nest replies in `children`
    // under `messages` (not `messagesTree`); only the root was read.
    let path = fixture("librechat/tree-in-messages.json");
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    // The system prompt, then the branch to the newest leaf.
    assert_eq!(json(&out)["conversations"][0]["messages"], 5);
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&path).unwrap());
    // Trimmed, the tree keeps its other branches and reads back as kept.
    let out = ctxclean()
        .args(["trim", "-q", "--max-tokens", "200"])
        .arg(&path)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let text = v.to_string();
    assert!(
        text.contains("does coding make you happy"),
        "another branch lost"
    );
    let back = ctxclean()
        .args(["stats", "--json", "-"])
        .write_stdin(out.get_output().stdout.clone())
        .assert()
        .success();
    assert_eq!(json(&back)["conversations"][0]["messages"], 3);
}

#[test]
fn a_compacted_codex_session_is_read_from_its_compaction_and_says_so() {
    // Issue 29: the next call carries the compacted history and what
    // follows, not the items before; they stay in the file untouched.
    let path = fixture("codex/compacted.jsonl");
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    let conv = &json(&out)["conversations"][0];
    let note = conv["notes"][0].as_str().unwrap();
    assert!(
        note.starts_with("19 item lines precede a compaction (line 111)"),
        "{note}"
    );
    let read = conv["messages"].as_u64().unwrap();
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&path).unwrap());
    // Trimmed, the lines before the compaction come back as they were.
    let out = ctxclean()
        .args(["trim", "-q", "--max-tokens", "100"])
        .arg(&path)
        .assert()
        .success();
    let trimmed = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let original = std::fs::read_to_string(&path).unwrap();
    let at = original
        .lines()
        .position(|l| l.contains(r#""type":"compacted""#))
        .unwrap();
    assert!(at > 5);
    let head: Vec<&str> = original.lines().take(at).collect();
    assert!(
        trimmed.lines().take(at).eq(head.iter().copied()),
        "the history before changed"
    );
    let back = ctxclean()
        .args(["stats", "--json", "-"])
        .write_stdin(trimmed)
        .assert()
        .success();
    let kept = json(&back)["conversations"][0]["messages"]
        .as_u64()
        .unwrap();
    assert!(kept > 0 && kept < read, "{kept} of {read}");
}

/// Runs `ctxclean ARGS` on `input` (standard input) and gives its stdout.
fn run_on(args: &[&str], input: &str) -> String {
    let out = ctxclean().args(args).write_stdin(input).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn batch_files_are_cleaned_inside_their_envelopes_byte_for_byte() {
    // Issue 29: OpenAI Batch API input (LiteLLM's test file), and the
    // shapes Anthropic's and Gemini's batch documentation give.
    let path = fixture("batch/openai-input.jsonl");
    let input = std::fs::read_to_string(&path).unwrap();
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(&path)
        .assert()
        .success();
    let v = json(&out);
    assert_eq!(v["conversations"][0]["format"], "openai");
    assert_eq!(v["conversations"][0]["messages"], 2);
    assert_eq!(run_on(&["convert", "-q"], &input), input);
    let cleaned = run_on(&["filter", "-q", "--exclude-roles", "system"], &input);
    assert_eq!(
        cleaned.lines().next().unwrap(),
        r#"{"custom_id": "request-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "my-custom-name", "messages": [{"role":"user","content":"Hello world!"}],"max_tokens": 10}}"#
    );
    let anthropic = r#"{"custom_id": "first-prompt-in-my-batch", "params": {"model": "claude-haiku-4-5-20251001", "max_tokens": 100, "system": "Be brief.", "messages": [{"role": "user", "content": "Hey Claude, tell me a short fun fact about video games!"}]}}"#;
    let cleaned = run_on(&["filter", "-q", "--exclude-roles", "system"], anthropic);
    assert_eq!(
        cleaned,
        // The message kept keeps its own bytes (issue 38).
        r#"{"custom_id": "first-prompt-in-my-batch", "params": {"model":"claude-haiku-4-5-20251001","max_tokens":100,"messages":[{"role": "user", "content": "Hey Claude, tell me a short fun fact about video games!"}]}}"#
    );
    let gemini = "{\"key\": \"request-1\", \"request\": {\"contents\": [{\"parts\": [{\"text\": \"Describe the process of photosynthesis.\"}]}], \"generation_config\": {\"temperature\": 0.7}}}\n{\"key\": \"request-2\", \"request\": {\"contents\": [{\"parts\": [{\"text\": \"What are the main ingredients in a Margherita pizza?\"}]}]}}\n";
    let out = run_on(&["stats", "--json"], gemini);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["conversations"][1]["format"], "gemini");
    assert_eq!(v["total"]["messages"], 2);
    assert_eq!(run_on(&["convert", "-q"], gemini), gemini);
    // Output lines: the choices' messages, the rest kept.
    let output = r#"{"id": "batch_req_123", "custom_id": "request-2", "response": {"status_code": 200, "request_id": "req_123", "body": {"id": "chatcmpl-123", "object": "chat.completion", "created": 1711652795, "model": "gpt-3.5-turbo-0125", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."}, "logprobs": null, "finish_reason": "stop"}], "usage": {"prompt_tokens": 22, "completion_tokens": 2, "total_tokens": 24}, "system_fingerprint": "fp_123"}}, "error": null}"#;
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], output)).unwrap();
    assert_eq!(v["conversations"][0]["by_role"]["assistant"]["messages"], 1);
    assert_eq!(run_on(&["convert", "-q"], output), output);
}

#[test]
fn proxy_captures_are_read_as_their_request_and_keep_the_rest() {
    // Issue 29: request/response logs of proxies; headers are never tokens.
    let capture = r#"{"ts_ms": 1719038400000, "direction": "request", "method": "POST", "path": "/v1/messages", "headers": {"content-type": "application/json", "x-api-key": "sk-ant-not-a-key"}, "body": {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "Be brief.", "messages": [{"role": "user", "content": [{"type": "text", "text": "List the files"}]}]}}"#;
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], capture)).unwrap();
    let conv = &v["conversations"][0];
    assert_eq!(conv["format"], "anthropic");
    assert_eq!(conv["messages"], 2);
    let cleaned = run_on(&["filter", "-q", "--exclude-roles", "system"], capture);
    assert!(cleaned.starts_with(r#"{"ts_ms": 1719038400000, "direction": "request", "method": "POST", "path": "/v1/messages", "headers": {"content-type": "application/json", "x-api-key": "sk-ant-not-a-key"}, "body": {"#), "{cleaned}");
    assert!(!cleaned.contains("Be brief."));
    let nested = r#"{"request_id": "req_2", "turn": 2, "request": {"method": "POST", "path": "/v1/chat/completions", "headers": {"authorization": "Bearer not-a-key"}, "body": {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]}}, "response": {"status": 200, "headers": {}, "body": {"id": "x"}}}"#;
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], nested)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "openai");
    assert_eq!(v["conversations"][0]["messages"], 2);
    assert_eq!(run_on(&["convert", "-q"], nested), nested);
}

#[test]
fn wrapped_exports_keep_every_conversation_when_one_changes() {
    // Issue 29: an export that keeps its conversations under a key (Grok's
    // `conversations`, Chatbot UI's `history`) came back as its first
    // conversation alone once anything changed.
    for (path, count) in [("exports/chatbot-ui.json", 2), ("exports/grok.json", 1)] {
        let path = fixture(path);
        let out = ctxclean()
            .args(["trim", "-q", "--max-tokens", "20"])
            .arg(&path)
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let key = if count == 2 {
            "history"
        } else {
            "conversations"
        };
        assert_eq!(
            v[key].as_array().map(Vec::len),
            Some(count),
            "{}",
            path.display()
        );
    }
    // Chatbot UI's system prompt is the conversation's first message.
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(fixture("exports/chatbot-ui.json"))
        .assert()
        .success();
    let v = json(&out);
    assert_eq!(v["conversations"][0]["by_role"]["system"]["messages"], 1);
    assert_eq!(v["total"]["messages"], 8);
}

#[test]
fn claude_code_lines_without_type_are_read_as_their_role() {
    // Issue 29: viewers and converters keep uuid/parentUuid/message and
    // drop `type` (and `sessionId`); the session is the same session.
    let path = fixture("claude-code/viewer-session.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let stripped: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
            if matches!(
                v.get("type").and_then(Value::as_str),
                Some("user" | "assistant")
            ) {
                v.shift_remove("type");
                v.shift_remove("sessionId");
            }
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    let stripped = stripped.join("\n") + "\n";
    let count = |input: &str| {
        let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], input)).unwrap();
        (
            v["conversations"][0]["format"].clone(),
            v["total"]["messages"].clone(),
        )
    };
    assert_eq!(count(&stripped), count(&text));
    assert_eq!(count(&stripped).0, "claude-code");
    assert_eq!(run_on(&["convert", "-q"], &stripped), stripped);
}

#[test]
fn trl_rows_of_strings_are_preference_rows() {
    // Issue 29: TRL's standard preference rows, as its documentation gives
    // them: `prompt`, `chosen` and `rejected` as strings.
    let rows = "{\"prompt\": \"The sky is\", \"chosen\": \" blue.\", \"rejected\": \" green.\"}\n";
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], rows)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "hf-chat");
    assert_eq!(v["conversations"][0]["messages"], 3);
    assert_eq!(run_on(&["convert", "-q"], rows), rows);
    let body: Value =
        serde_json::from_str(&run_on(&["convert", "-q", "--to", "openai"], rows)).unwrap();
    assert_eq!(
        body["messages"],
        serde_json::json!([{"role": "user", "content": "The sky is"}, {"role": "assistant", "content": " blue."}])
    );
}

#[test]
fn mini_swe_agent_trajectories_and_continue_sessions_are_read() {
    // Issue 29: mini-swe-agent's `save_traj` writes `info`, `messages`
    // (ending with `{"role": "exit"}`, never sent) and `trajectory_format`.
    let traj = r#"{"info": {"exit_status": "Submitted", "submission": "", "model_stats": {"instance_cost": 0.0, "api_calls": 1}, "mini_version": "1.0.0"}, "messages": [{"role": "system", "content": "You are a helpful assistant that can interact with a computer."}, {"role": "user", "content": "Fix the bug"}, {"role": "assistant", "content": "THOUGHT: look\n\n```bash\ncat a.py\n```", "extra": {"actions": ["cat a.py"]}}, {"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}}], "trajectory_format": "mini-swe-agent-1"}"#;
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], traj)).unwrap();
    assert_eq!(v["conversations"][0]["messages"], 3);
    assert_eq!(run_on(&["convert", "-q"], traj), traj);
    let cleaned = run_on(&["filter", "-q", "--exclude-roles", "system"], traj);
    // The records kept keep their own bytes (issue 38).
    assert!(cleaned.ends_with(r#"{"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}}], "trajectory_format": "mini-swe-agent-1"}"#), "{cleaned}");
    // Continue keeps each message inside a history item.
    let session = r#"{"sessionId": "2c6d5b1e", "title": "Explain the cart", "workspaceDirectory": "file:///repo", "history": [{"message": {"role": "user", "content": "What does Cart.total do?"}, "contextItems": []}, {"message": {"role": "assistant", "content": "It sums the items."}, "contextItems": []}]}"#;
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], session)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "continue");
    assert_eq!(v["conversations"][0]["messages"], 2);
    assert_eq!(run_on(&["convert", "-q"], session), session);
    let cleaned = run_on(&["filter", "-q", "--exclude-roles", "user"], session);
    assert!(cleaned.contains(r#""history": [{"message": {"role": "assistant", "content": "It sums the items."}, "contextItems": []}]"#), "{cleaned}");
}

#[test]
fn the_gemini_cli_prompt_log_is_read() {
    // Issue 29: Gemini CLI's `logs.json`: the prompts of its sessions, the
    // text in `message`.
    let log = r#"[
  {
    "sessionId": "6e0a1f4c-2b1d-4a77-9c55-0f1e2d3c4b5a",
    "messageId": 0,
    "type": "user",
    "message": "explain this repository",
    "timestamp": "2025-07-01T10:00:00.000Z"
  }
]"#;
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], log)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "gemini");
    assert_eq!(v["conversations"][0]["by_role"]["user"]["messages"], 1);
    assert_eq!(run_on(&["convert", "-q"], log), log);
}

#[test]
fn claude_code_lines_cut_to_one_or_to_a_user_turn_read_back_as_claude_code() {
    // Found by holding the real corpus to scripts/invariants.py's promises
    // (2026-12-01). Lines shaped as ccusage's test sessions
    // (ccusage/project-alpha/chat.jsonl: assistant records of usage, no
    // `type`), with this test's own text: cut to one line, the file was
    // taken for a document and refused ("no list of messages").
    let usage = |n: u32| {
        format!(
            r#"{{"timestamp":"2026-01-0{n}T10:00:00.000Z","sessionId":"s","message":{{"role":"assistant","id":"m{n}","model":"claude-sonnet-4-20250514","usage":{{"input_tokens":{n}00,"output_tokens":50}}}},"requestId":"r{n}"}}"#
        )
    };
    let lines: String = (1..=3).map(|n| usage(n) + "\n").collect();
    let cut = run_on(
        &["trim", "-q", "--max-messages", "1", "--no-placeholder"],
        &lines,
    );
    assert_eq!(cut, usage(3) + "\n");
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], &cut)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "claude-code");
    assert_eq!(v["conversations"][0]["messages"], 1);
    // Lines shaped as agent-sessions' Claude Code subagent fixture
    // (agent-sessions/claude/subagent/<session>.jsonl): a system record, the
    // user's turn and the assistant's. With the assistant's gone, the two
    // left fit Qwen Code's chain too, and the file was refused as
    // ambiguous; a message of `content` is no Gemini turn.
    let line = |uuid: &str, parent: &str, rest: &str| {
        format!(
            r#"{{"parentUuid":{parent},"isSidechain":false,"sessionId":"s","version":"2.1.0","uuid":"{uuid}",{rest}}}"#
        ) + "\n"
    };
    let session = line("a", "null", r#""type":"system","subtype":"session_start""#)
        + &line(
            "b",
            r#""a""#,
            r#""type":"user","message":{"role":"user","content":"Search the repo"}"#,
        )
        + &line(
            "c",
            r#""b""#,
            r#""type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"On it."}]}"#,
        );
    let cut = run_on(&["filter", "-q", "--exclude-roles", "assistant"], &session);
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], &cut)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "claude-code");
    assert_eq!(v["conversations"][0]["messages"], 1);
}

#[test]
fn a_goose_run_stream_a_selection_empties_reads_back_as_goose() {
    // Found by holding fixtures/ to scripts/invariants.py's promises
    // (2026-12-01): a `goose run --output-format stream-json` output whose
    // messages a selection all took out kept its notification and complete
    // lines, and was then refused ("cannot tell the format").
    let stream = std::fs::read_to_string(fixture("goose/run-stream.jsonl")).unwrap();
    let emptied = run_on(&["filter", "-q", "--exclude-roles", "assistant"], &stream);
    assert!(emptied.contains(r#""type":"complete""#), "{emptied}");
    let v: Value = serde_json::from_str(&run_on(&["stats", "--json"], &emptied)).unwrap();
    assert_eq!(v["conversations"][0]["format"], "goose");
    assert_eq!(v["conversations"][0]["messages"], 0);
    // And a selection run on it again changes nothing.
    let again = run_on(&["filter", "-q", "--exclude-roles", "assistant"], &emptied);
    assert_eq!(again, emptied);
}
