//! `ctxclean validate`: each problem class per provider, the output
//! contract, and every other operation's output on the fixtures.

use serde_json::{json, Value};

use crate::util::{ctxclean, fixture};

/// Runs validate on a JSON value given on stdin; returns (exit code, stdout).
fn check(input: &Value, args: &[&str]) -> (i32, String) {
    let out = ctxclean()
        .arg("validate")
        .args(args)
        .write_stdin(input.to_string())
        .assert();
    let o = out.get_output();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stdout.clone()).unwrap(),
    )
}

fn codes(input: &Value, args: &[&str]) -> Vec<String> {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let (_, out) = check(input, &a);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["code"].as_str().unwrap().to_string())
        .collect()
}

fn openai(messages: Value) -> Value {
    json!({ "messages": messages })
}

fn call(id: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
}

fn result(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

fn user(t: &str) -> Value {
    json!({"role": "user", "content": t})
}

#[test]
fn openai_classes() {
    let p = ["--provider", "openai"];
    let ok = openai(
        json!([user("q"), call("a"), result("a"), {"role": "assistant", "content": "done"}]),
    );
    let (code, out) = check(&ok, &p);
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(
        codes(&openai(json!([user("q"), result("x")])), &p),
        ["orphan-result"]
    );
    assert_eq!(
        codes(&openai(json!([user("q"), call("a"), user("more")])), &p),
        ["unanswered-call"]
    );
    assert_eq!(
        codes(
            &openai(json!([
                user("q"),
                call("a"),
                result("a"),
                call("a"),
                result("a")
            ])),
            &p
        ),
        ["duplicate-id"]
    );
    assert_eq!(
        codes(
            &openai(json!([user("q"), call("a"), user("wait"), result("a")])),
            &p
        ),
        ["result-placement"]
    );
    assert_eq!(
        codes(&openai(json!([user("q"), {"role": "assistant"}])), &p),
        ["empty-content"]
    );
    let image =
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}});
    assert_eq!(
        codes(
            &openai(json!([user("q"), {"role": "assistant", "content": [image]}])),
            &p
        ),
        ["content-type"]
    );
    assert_eq!(
        codes(
            &openai(
                json!([user("q"), {"role": "assistant", "content": [{"type": "audio_blob", "x": 1}]}])
            ),
            &p
        ),
        ["content-type"]
    );
    assert_eq!(
        codes(
            &openai(
                json!([user("q"), {"role": "assistant", "content": null, "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}])
            ),
            &p
        ),
        ["missing-id"]
    );
    // OpenAI takes system messages anywhere and any first role.
    assert!(codes(&openai(json!([{"role": "assistant", "content": "hi"}, user("q"), {"role": "system", "content": "s"}])), &p).is_empty());
    // An active cycle at the end is fine.
    assert!(codes(&openai(json!([user("q"), call("a")])), &p).is_empty());
}

fn anthropic(system: Option<&str>, messages: Value) -> Value {
    let mut v = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages});
    if let Some(s) = system {
        v["system"] = json!(s);
    }
    v
}

fn tool_use(id: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "f", "input": {}}]})
}

fn tool_result(id: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]})
}

#[test]
fn anthropic_classes() {
    let ok = anthropic(
        Some("s"),
        json!([user("q"), tool_use("a"), tool_result("a"), {"role": "assistant", "content": "done"}]),
    );
    assert_eq!(check(&ok, &[]), (0, String::new()), "anthropic by default");
    assert_eq!(
        codes(
            &anthropic(
                None,
                json!([{"role": "assistant", "content": "hi"}, user("q")])
            ),
            &["--from", "anthropic"]
        ),
        ["role-order"]
    );
    assert_eq!(
        codes(
            &anthropic(
                None,
                json!([user("q"), tool_use("a"), user("wait"), tool_result("a")])
            ),
            &[]
        ),
        ["result-placement"]
    );
    assert_eq!(
        codes(
            &anthropic(
                None,
                json!([user("q"), tool_use("a"), {"role": "assistant", "content": "x"}])
            ),
            &[]
        ),
        ["unanswered-call"]
    );
    assert_eq!(
        codes(&anthropic(None, json!([user("q"), tool_result("zz")])), &[]),
        ["orphan-result"]
    );
    assert_eq!(
        codes(
            &anthropic(
                None,
                json!([user(""), {"role": "assistant", "content": "a"}])
            ),
            &["--from", "anthropic"]
        ),
        ["empty-content"]
    );
    assert_eq!(
        codes(
            &anthropic(
                None,
                json!([user("q"), {"role": "assistant", "content": [{"type": "hologram"}]}])
            ),
            &[]
        ),
        ["content-type"]
    );
    // Parallel calls logged as separate assistant messages, their results as
    // separate user messages: one turn each once merged, as the API does.
    let parallel = anthropic(
        None,
        json!([user("q"), tool_use("a"), tool_use("b"), tool_result("a"), tool_result("b"), {"role": "assistant", "content": "done"}]),
    );
    assert!(codes(&parallel, &[]).is_empty());
    // The same conversation as OpenAI sees it: a system message mid-way is
    // fine there, not for Anthropic.
    let late = openai(
        json!([user("q"), {"role": "assistant", "content": "a"}, {"role": "system", "content": "s"}, user("r")]),
    );
    assert!(codes(&late, &["--provider", "openai"]).is_empty());
    assert_eq!(codes(&late, &["--provider", "anthropic"]), ["role-order"]);
}

#[test]
fn gemini_classes() {
    let ok = json!({"contents": [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"ok": true}}}]},
        {"role": "model", "parts": [{"text": "done"}]}]});
    assert_eq!(check(&ok, &[]), (0, String::new()), "gemini by default");
    let model_first = json!({"contents": [
        {"role": "model", "parts": [{"text": "hi"}]},
        {"role": "user", "parts": [{"text": "q"}]}]});
    assert_eq!(codes(&model_first, &[]), ["role-order"]);
    let orphan = json!({"contents": [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]});
    assert_eq!(codes(&orphan, &[]), ["orphan-result"]);
    let empty = json!({"contents": [
        {"role": "user", "parts": [{"text": ""}]},
        {"role": "model", "parts": [{"text": "a"}]}]});
    assert_eq!(codes(&empty, &[]), ["empty-content"]);
}

#[test]
fn text_output_and_exit_codes() {
    let bad = openai(json!([user("q"), result("x")]));
    let out = ctxclean()
        .args(["validate"])
        .write_stdin(bad.to_string())
        .assert()
        .code(1)
        .stderr("ctxclean validate: 1 conversation of 1 invalid\n");
    assert_eq!(
        String::from_utf8(out.get_output().stdout.clone()).unwrap(),
        "-:conversation 0:message 1: tool result for \"x\" answers no earlier tool call\n"
    );
    // Files are named, conversations counted over the file.
    let out = ctxclean()
        .args(["validate", "--provider", "openai"])
        .arg(fixture("functionary/test_case.json"))
        .assert()
        .code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(
            "test_case.json:conversation 0:message 3: tool call 0 (get_car_price) has no id"
        ),
        "{text}"
    );
    // ShareGPT sets pair calls and results by order: no ids to miss.
    ctxclean()
        .args(["validate", "--provider", "openai"])
        .arg(fixture("sharegpt/glaive_toolcall_6.json"))
        .assert()
        .success();
    // Unreadable input is exit 1 with its location, as everywhere.
    ctxclean()
        .arg("validate")
        .write_stdin("{\"messages\": [")
        .assert()
        .code(1)
        .stderr(predicates::str::starts_with("ctxclean: -:1:"));
}

/// Valid fixtures stay valid through every operation.
#[test]
fn every_operation_keeps_valid_inputs_valid() {
    let runs: &[&[&str]] = &[
        &["filter", "--previous-cycles"],
        &["filter", "--exclude-tool-calls"],
        &[
            "filter",
            "--moved-past",
            "--retried-failures",
            "--read-again",
            "--supersede",
            "Read",
        ],
        &[
            "filter",
            "--dedupe-tool-results",
            "--strip-processed-images",
            "--drop-thinking",
        ],
        &["trim", "--max-tokens", "300"],
        &["trim", "--max-tokens", "150", "--start-on", "user"],
        &["trim", "--max-messages", "3", "--strategy", "first"],
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "0",
        ],
        &["summarize", "--threshold", "50", "--keep", "3"],
        &[
            "summarize",
            "--threshold",
            "50",
            "--keep",
            "2",
            "--placement",
            "user",
        ],
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for f in [
        "written/analyst_session.json",
        "written/two_queries.json",
        "written/anthropic_request.json",
        "written/gemini_contents.json",
        "written/open_webui_tool_calls.json",
        "written/script_rewrites.json",
        "written/langchain_messages.json",
        "written/responses_input.json",
        "claude-code/viewer-session.jsonl",
        "claude-code/loglines.json",
        "gemini/cli-session.json",
        "swe-agent/test-repo-i1.traj",
        "llama-factory/mllm_demo.json",
        "sharegpt/fastchat.json",
    ] {
        let input = fixture(f);
        let valid = ctxclean()
            .arg("validate")
            .arg(&input)
            .assert()
            .get_output()
            .status
            .success();
        assert!(valid, "{f} is a valid fixture");
        for args in runs {
            let out = ctxclean()
                .args(*args)
                .arg("-q")
                .arg(&input)
                .assert()
                .success();
            let output = out.get_output().stdout.clone();
            let v = ctxclean()
                .arg("validate")
                .write_stdin(output.clone())
                .assert();
            let o = v.get_output();
            if !o.status.success() {
                failures.push(format!(
                    "{f} after {args:?}:\n{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, 14 * 10);
}

/// `--request` checks what a request in flight must keep and a transcript
/// at rest need not (issue 39: the proxy forwarded each of these, and the
/// provider answered 400).
#[test]
fn request_rules_of_each_provider() {
    let cases = [
        (
            r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}]}"#,
            "openai",
            "must be followed by tool messages",
        ),
        (
            r#"{"model":"o3","input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"x"}]}"#,
            "responses",
            "without its required following item",
        ),
        (
            r#"{"model":"claude-sonnet-4-5","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}]}"#,
            "anthropic",
            "must start with its thinking block",
        ),
    ];
    for (body, format, says) in cases {
        ctxclean()
            .args(["validate", "-q", "--from", format])
            .write_stdin(body)
            .assert()
            .success();
        let out = ctxclean()
            .args(["validate", "-q", "--request", "--from", format])
            .write_stdin(body)
            .assert()
            .code(1);
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(text.contains(says), "{format}: {text}");
    }
}
