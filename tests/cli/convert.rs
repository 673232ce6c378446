//! `ctxclean convert` and the report contract of transforming commands.

use serde_json::Value;

use crate::util::{ctxclean, fixture, temp_dir, OPENAI_FIXTURES};

#[test]
fn every_fixture_comes_back_byte_for_byte() {
    for name in OPENAI_FIXTURES {
        let path = fixture(name);
        let out = ctxclean()
            .arg("convert")
            .arg(&path)
            .arg("-q")
            .assert()
            .success();
        assert!(
            out.get_output().stdout == std::fs::read(&path).unwrap(),
            "{name} changed"
        );
    }
}

#[test]
fn to_openai_is_identity_and_stdin_works() {
    let input = std::fs::read(fixture("functionary/test_case_v2.json")).unwrap();
    ctxclean()
        .args(["convert", "--to", "openai", "-q"])
        .write_stdin(input.clone())
        .assert()
        .success()
        .stdout(input);
}

#[test]
fn summary_on_stderr_unless_quiet() {
    ctxclean()
        .args(["convert", "fixtures/functionary/test_case_v1.json"])
        .assert()
        .success()
        .stderr("ctxclean convert: 1 conversation written\n");
    ctxclean()
        .args(["convert", "-q", "fixtures/functionary/test_case_v1.json"])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn output_file_and_report() {
    let dir = temp_dir("convert-output");
    let out = dir.join("out.jsonl");
    let report = dir.join("report.json");
    ctxclean()
        .args([
            "convert",
            "-q",
            "fixtures/llama-factory/v1_multimodal_demo.jsonl",
            "-o",
        ])
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .assert()
        .success()
        .stdout("");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(fixture("llama-factory/v1_multimodal_demo.jsonl")).unwrap()
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    insta::assert_snapshot!(serde_json::to_string_pretty(&report["total"]).unwrap());
    assert_eq!(report["command"], "convert");
    let first = &report["conversations"][0];
    assert_eq!(first["before"], first["after"]);
    assert_eq!(first["changes"], serde_json::json!([]));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn jsonl_inputs_can_share_stdout_json_documents_cannot() {
    let a = "fixtures/llama-factory/v1_multimodal_demo.jsonl";
    let b = "fixtures/tokens/plain_text.jsonl";
    let out = ctxclean().args(["convert", "-q", a, b]).assert().success();
    let mut expected = std::fs::read(a).unwrap();
    expected.extend(std::fs::read(b).unwrap());
    assert!(out.get_output().stdout == expected);

    ctxclean()
        .args(["convert", a, "fixtures/functionary/test_case.json"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is a JSON document"));
}

#[test]
fn unknown_fields_and_key_order_survive() {
    let input = r#"{"sender":"alice","chatId":"c1","role":"user","createdAt":"2025-01-01T00:00:00Z","agentId":null,"content":"hi @bob","n":1.50,"big":123456789012345678901234567890}
"#;
    ctxclean()
        .args(["convert", "-q"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout(input);
}

/// Each line of a JSONL file keeps its own line end, in a file that has
/// both kinds (issue 38: the LF lines came back as CRLF).
#[test]
fn mixed_line_ends_are_kept_line_by_line() {
    let mixed = "{\"role\":\"user\",\"content\":\"a\"}\r\n{\"role\":\"assistant\",\"content\":\"b\"}\n{\"role\":\"user\",\"content\":\"c\"}\n";
    let out = ctxclean()
        .args(["convert", "-q"])
        .write_stdin(mixed)
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stdout), mixed);
    // The assistant's line goes: the others keep theirs.
    let out = ctxclean()
        .args(["filter", "-q", "--exclude-roles", "assistant"])
        .write_stdin(mixed)
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout),
        "{\"role\":\"user\",\"content\":\"a\"}\r\n{\"role\":\"user\",\"content\":\"c\"}\n"
    );
    // A changed line keeps its own end too.
    let long = "seven eight nine ".repeat(200);
    let calls = format!(
        "{}\n{}\n{{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"{long}\"}}\r\n{}\n",
        "{\"role\":\"user\",\"content\":\"a\"}",
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}",
        "{\"role\":\"user\",\"content\":\"c\"}"
    );
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "50",
        ])
        .write_stdin(calls)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("[Tool: 1 line"), "{text}");
    let ends: Vec<bool> = text
        .split_inclusive('\n')
        .map(|l| l.ends_with("\r\n"))
        .collect();
    assert_eq!(ends, [false, false, true, false], "{text}");
    // Conversations a line each (batch input): the same.
    let batch = "{\"custom_id\":\"1\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"a\"}]}}\n{\"custom_id\":\"2\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"b\"}]}}\r\n";
    let out = ctxclean()
        .args(["filter", "-q", "--exclude-roles", "system"])
        .write_stdin(batch)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let ends: Vec<bool> = text
        .split_inclusive('\n')
        .map(|l| l.ends_with("\r\n"))
        .collect();
    assert_eq!(ends, [false, true], "{text}");
}

/// A message no operation touched keeps its own bytes (spacing, escapes,
/// number spellings) even when its neighbours changed (issue 38: `{"role":
/// "user", …}` came back as `{"role":"user",…}` and `\u00e9\/` as `é/`).
#[test]
fn kept_messages_keep_their_bytes_beside_changed_ones() {
    let kept = [
        r#"{"role": "system", "content": "caf\u00e9 \/ x", "n": 1.50}"#,
        r#"{ "role" : "user" , "content" : "hi\u0021" }"#,
    ];
    let gone = r#"{"role": "assistant", "content": "yo"}"#;
    for (doc, crlf) in [
        (
            format!(
                "{{\"model\": \"gpt-4o\", \"messages\": [{}, {}, {gone}]}}",
                kept[0], kept[1]
            ),
            false,
        ),
        (
            format!(
                "{{\r\n  \"messages\": [\r\n    {},\r\n    {},\r\n    {gone}\r\n  ]\r\n}}\r\n",
                kept[0], kept[1]
            ),
            true,
        ),
    ] {
        let out = ctxclean()
            .args(["filter", "-q", "--exclude-roles", "assistant"])
            .write_stdin(doc.clone())
            .assert()
            .success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        for k in kept {
            assert!(text.contains(k), "{k} not in {text}");
        }
        assert!(!text.contains("\"yo\""), "{text}");
        assert!(!text.contains("\r\r"), "{text:?}");
        assert_eq!(text.matches("\r\n").count() > 0, crlf, "{text:?}");
    }
}

/// Asserts that `convert` gives `path` back byte for byte.
fn comes_back(path: &std::path::Path) {
    let out = ctxclean()
        .args(["convert", "-q"])
        .arg(path)
        .assert()
        .success();
    assert!(
        out.get_output().stdout == std::fs::read(path).unwrap(),
        "{}: convert changed it",
        path.display()
    );
}

/// `compact-tools` on every result of `path` (and `more` flags): its output.
fn compacted_all(path: &std::path::Path, more: &[&str]) -> Vec<u8> {
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "0",
        ])
        .args(more)
        .arg(path)
        .assert()
        .success();
    out.get_output().stdout.clone()
}

/// Two results answering one call id (a client's bug that `validate`
/// names) in one turn, with a result of another id between them: each
/// keeps its own block and place. The writer looked a result's block up by
/// its id: Anthropic's and Bedrock's moved the second before the result
/// between them even through `convert` with nothing changed; Crush's kept
/// one block for both, and `compact-tools` lost a result with exit 0.
#[test]
fn results_that_share_an_id_keep_their_blocks() {
    let dir = temp_dir("shared-result-ids");
    let anthropic = dir.join("anthropic.json");
    std::fs::write(
        &anthropic,
        r#"{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}, {"type": "tool_use", "id": "b", "name": "x", "input": {}}, {"type": "tool_use", "id": "a", "name": "x", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "one"}, {"type": "tool_result", "tool_use_id": "b", "content": "two"}, {"type": "tool_result", "tool_use_id": "a", "content": "three"}]}, {"role": "assistant", "content": "done"}]}"#,
    )
    .unwrap();
    // Bedrock: the fixture's one call and result, twice more, one of
    // them under another id.
    let mut bedrock: Value =
        serde_json::from_slice(&std::fs::read(fixture("bedrock/converse-request.json")).unwrap())
            .unwrap();
    let with_id = |v: &Value, key: &str, id: &str| {
        let mut v = v.clone();
        v[key]["toolUseId"] = Value::from(id);
        v
    };
    let using = bedrock["messages"][1]["content"][1].clone();
    let result = bedrock["messages"][2]["content"][0].clone();
    let id = using["toolUse"]["toolUseId"].as_str().unwrap().to_string();
    let mut third = with_id(&result, "toolResult", &id);
    third["toolResult"]["content"] = serde_json::json!([{"text": "third"}]);
    for (k, v) in [
        (1, with_id(&using, "toolUse", "other")),
        (1, using.clone()),
        (2, with_id(&result, "toolResult", "other")),
        (2, third),
    ] {
        bedrock["messages"][k]["content"]
            .as_array_mut()
            .unwrap()
            .push(v);
    }
    let bedrock_path = dir.join("bedrock.json");
    std::fs::write(
        &bedrock_path,
        serde_json::to_string_pretty(&bedrock).unwrap(),
    )
    .unwrap();
    // Crush: the fixture's two parallel calls and their results under one id.
    let mut crush: Value =
        serde_json::from_slice(&std::fs::read(fixture("crush/session.json")).unwrap()).unwrap();
    let id = crush["messages"][3]["parts"][2]["data"]["id"].clone();
    for p in crush["messages"][3]["parts"].as_array_mut().unwrap() {
        if p["type"] == "tool_call" {
            p["data"]["id"] = id.clone();
        }
    }
    for p in crush["messages"][4]["parts"].as_array_mut().unwrap() {
        p["data"]["tool_call_id"] = id.clone();
    }
    let crush_path = dir.join("crush.json");
    std::fs::write(&crush_path, serde_json::to_string_pretty(&crush).unwrap()).unwrap();
    for path in [&anthropic, &bedrock_path, &crush_path] {
        comes_back(path);
    }
    let out = compacted_all(&crush_path, &[]);
    let v: Value = serde_json::from_slice(&out).unwrap();
    let parts = v["messages"][4]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "a result lost: {parts:?}");
    assert!(parts[0]["data"]["content"]
        .as_str()
        .unwrap()
        .starts_with("[Tool: "));
}

/// The agents' formats whose turns hold several results: two results of
/// one call id each keep their own part, through `convert` (byte for byte)
/// and `compact-tools` (every result still there, and each compacted in
/// its own part). Goose and Grok CLI gave both results the first part and
/// dropped the second; OpenCode wrote both into the last, the first part
/// left as it came though said compacted; Gemini CLI wrote the first
/// call's arguments and result into both.
#[test]
fn agents_results_that_share_an_id_keep_their_parts() {
    let dir = temp_dir("agents-shared-result-ids");
    let load = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
    };
    let first = Value::from("the first result ".repeat(40));
    let second = Value::from("the second result ".repeat(40));
    // Each fixture with a turn's call and result given again under the
    // same id, the two results long texts of their own.
    let mut goose = load("goose/export.json");
    let msgs = goose["conversation"].as_array_mut().unwrap();
    let request = msgs[1]["content"][1].clone();
    msgs[1]["content"].as_array_mut().unwrap().push(request);
    let mut response = msgs[2]["content"][0].clone();
    msgs[2]["content"][0]["toolResult"]["value"][0]["text"] = first.clone();
    response["toolResult"]["value"][0]["text"] = second.clone();
    msgs[2]["content"].as_array_mut().unwrap().push(response);
    let mut grok = load("grok-cli/session.json");
    let msgs = grok["messages"].as_array_mut().unwrap();
    let call = msgs[1]["message_json"]["content"][2].clone();
    msgs[1]["message_json"]["content"]
        .as_array_mut()
        .unwrap()
        .push(call);
    let mut result = msgs[2]["message_json"]["content"][0].clone();
    msgs[2]["message_json"]["content"][0]["output"] =
        serde_json::json!({"type": "text", "value": first});
    result["output"] = serde_json::json!({"type": "text", "value": second});
    msgs[2]["message_json"]["content"]
        .as_array_mut()
        .unwrap()
        .push(result);
    let mut opencode = load("opencode/export.json");
    let parts = opencode["messages"][3]["parts"].as_array_mut().unwrap();
    parts[2]["callID"] = parts[1]["callID"].clone();
    parts[1]["state"]["output"] = first.clone();
    parts[2]["state"]["output"] = second.clone();
    let mut gemini = load("gemini/cli-session.json");
    let calls = gemini["messages"][1]["toolCalls"].as_array_mut().unwrap();
    let mut again = calls[0].clone();
    calls[0]["result"][0]["functionResponse"]["response"] = serde_json::json!({"output": first});
    again["args"] = serde_json::json!({"command": "ls -la"});
    again["result"][0]["functionResponse"]["response"] = serde_json::json!({"output": second});
    calls.push(again);
    let results = |bytes: &[u8]| -> u64 {
        let p = dir.join("counted.json");
        std::fs::write(&p, bytes).unwrap();
        let out = ctxclean()
            .args(["stats", "--json"])
            .arg(&p)
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        v["conversations"][0]["tool_results"].as_u64().unwrap()
    };
    for (name, doc) in [
        ("goose", goose),
        ("grok", grok),
        ("opencode", opencode),
        ("gemini", gemini),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        comes_back(&path);
        let compacted = compacted_all(&path, &[]);
        assert_eq!(
            results(&compacted),
            results(&std::fs::read(&path).unwrap()),
            "{name}: a result lost"
        );
        let text = String::from_utf8(compacted).unwrap();
        // Longer than a description's preview: the result as it came.
        for whole in ["the first result ", "the second result "] {
            assert!(
                !text.contains(&whole.repeat(20)),
                "{name}: a result not compacted in its part"
            );
        }
        assert!(
            text.contains("ls -la") || name != "gemini",
            "gemini: the second call's arguments"
        );
        kept_is_read_back(&path, &["filter", "--drop-thinking"], name);
    }
}

/// What the report says `args` kept of `path` is what its output reads back
/// as. With two calls of one id, the pairs' repair strips the first (the
/// conversation pairs the first result with the second call) and removes
/// the second result: OpenCode's writer put the first result back into the
/// stripped call's part, and read again the file had both.
fn kept_is_read_back(path: &std::path::Path, args: &[&str], name: &str) {
    let report = path.with_extension("report.json");
    let out = ctxclean()
        .args(args)
        .arg(path)
        .arg("--report")
        .arg(&report)
        .assert()
        .success();
    let written = path.with_extension("out.json");
    std::fs::write(&written, &out.get_output().stdout).unwrap();
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let stats = ctxclean()
        .args(["stats", "--json"])
        .arg(&written)
        .assert()
        .success();
    let stats: Value = serde_json::from_slice(&stats.get_output().stdout).unwrap();
    assert_eq!(
        report["conversations"][0]["after"]["messages"], stats["conversations"][0]["messages"],
        "{name}: what the report kept is not what reads back"
    );
}

/// Two calls of one id in one message, the second with a long argument:
/// `compact-tools --clear-inputs` clears the second's and leaves the
/// first's. LangChain's and Copilot CLI's writers found an original call's
/// new arguments by its id, and wrote the first call's arguments into the
/// second (exit 0).
#[test]
fn calls_that_share_an_id_keep_their_own_arguments() {
    let dir = temp_dir("calls-shared-ids");
    let long = serde_json::json!({"command": "x".repeat(120)});
    let mut langchain: Value =
        serde_json::from_slice(&std::fs::read(fixture("written/langchain_messages.json")).unwrap())
            .unwrap();
    let mut again = langchain[2]["data"]["tool_calls"][0].clone();
    again["args"] = long.clone();
    langchain[2]["data"]["tool_calls"]
        .as_array_mut()
        .unwrap()
        .push(again);
    langchain[3]["data"]["content"] = Value::from("the first result ".repeat(40));
    let mut result = langchain[3].clone();
    result["data"]["content"] = Value::from("the second result ".repeat(40));
    langchain.as_array_mut().unwrap().insert(4, result);
    let path = dir.join("langchain.json");
    std::fs::write(&path, serde_json::to_string_pretty(&langchain).unwrap()).unwrap();
    let args = |path: &std::path::Path, pick: &dyn Fn(&[u8]) -> Value| -> Vec<Value> {
        let out = compacted_all(path, &["--clear-inputs"]);
        pick(&out).as_array().unwrap().clone()
    };
    let calls = args(&path, &|out| {
        let v: Value = serde_json::from_slice(out).unwrap();
        let calls = v[2]["data"]["tool_calls"].as_array().unwrap();
        calls.iter().map(|c| c["args"].clone()).collect()
    });
    assert_eq!(calls[0], serde_json::json!({"city": "Vienna"}));
    assert_eq!(calls[1], serde_json::json!({"command": "[cleared]"}));
    // Copilot CLI: the same in its events, the result given again.
    let text = std::fs::read_to_string(fixture("copilot/events.jsonl")).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut again = lines[8]["data"]["toolRequests"][0].clone();
    again["arguments"] = long;
    lines[8]["data"]["toolRequests"]
        .as_array_mut()
        .unwrap()
        .push(again);
    lines[10]["data"]["result"]["content"] = Value::from("the first result ".repeat(40));
    let mut result = lines[10].clone();
    result["data"]["result"]["content"] = Value::from("the second result ".repeat(40));
    result["id"] = Value::from("e11b");
    result["parentId"] = Value::from("e11");
    lines.insert(11, result);
    let path = dir.join("events.jsonl");
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, jsonl).unwrap();
    let calls = args(&path, &|out| {
        let line = std::str::from_utf8(out).unwrap().lines().nth(8).unwrap();
        let v: Value = serde_json::from_str(line).unwrap();
        let reqs = v["data"]["toolRequests"].as_array().unwrap();
        reqs.iter().map(|r| r["arguments"].clone()).collect()
    });
    assert_eq!(calls[0], Value::from(r#"{"command":"ls"}"#));
    assert_eq!(calls[1], serde_json::json!({"command": "[cleared]"}));
}
