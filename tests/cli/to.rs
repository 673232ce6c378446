//! `convert --to` (issue 14): every request-format target × every fixture
//! gives a body its provider accepts, read back as the target without
//! `--from`; log and export targets are refused from other formats.

use ctxclean::format::{read_document, write_document, Format, ReadOptions};
use ctxclean::validate::{validate, Provider};

use crate::redetect::fixtures;
use crate::util::{ctxclean, fixture};

/// The provider a request format's bodies are sent to.
fn provider(f: Format) -> Provider {
    match f {
        Format::Anthropic => Provider::Anthropic,
        Format::Gemini => Provider::Gemini,
        Format::Responses => Provider::Responses,
        _ => Provider::OpenAi,
    }
}

#[test]
fn every_fixture_converts_to_every_request_format() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in fixtures() {
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let Ok(doc) = read_document(&name, std::fs::read(&path).unwrap(), &opts) else {
            continue;
        };
        for target in Format::REQUEST {
            if target == doc.source_format {
                continue;
            }
            let mut d = doc.clone();
            d.format = target;
            let mut out = Vec::new();
            let written = match write_document(&d, &mut out) {
                Ok(w) => w,
                Err(e) => {
                    failures.push(format!("{name} → {target}: {e}"));
                    continue;
                }
            };
            if out.iter().all(u8::is_ascii_whitespace) {
                // No message to send: no body (and a note), nothing to read back.
                assert!(
                    written
                        .iter()
                        .all(|w| !w.notes.is_empty() || !w.losses.is_empty()),
                    "{name} → {target}"
                );
                continue;
            }
            checked += 1;
            let back = match read_document("out", out.clone(), &ReadOptions::default()) {
                Ok(back) => back,
                Err(e) => {
                    failures.push(format!("{name} → {target}: does not read back: {e}"));
                    continue;
                }
            };
            if back.source_format != target {
                failures.push(format!(
                    "{name} → {target}: reads back as {}",
                    back.source_format
                ));
                continue;
            }
            for (k, conv) in back.conversations.iter().enumerate() {
                if conv.messages.is_empty() {
                    continue; // an empty input conversation stays empty
                }
                // A saved answer too (the model's side alone): as a request
                // it is opened by the user where the target requires it.
                let problems = validate(conv, target, provider(target));
                // Calls the input never answered are the input's, not the
                // conversion's: only problems the input did not have count.
                let before =
                    validate(&doc.conversations[k], doc.source_format, provider(target)).len();
                if problems.len() > before {
                    failures.push(format!(
                        "{name} → {target}: conversation {k}: {} problems (input: {before}): {}",
                        problems.len(),
                        problems
                            .iter()
                            .take(2)
                            .map(|p| p.problem.clone())
                            .collect::<Vec<_>>()
                            .join("; ")
                    ));
                }
            }
            // Tool calls and results are carried, or their loss is reported.
            let calls = |d: &ctxclean::format::Document| -> usize {
                d.conversations
                    .iter()
                    .flat_map(|c| &c.messages)
                    .map(|m| m.calls().len())
                    .sum()
            };
            let lost = written.iter().flat_map(|w| &w.losses).count();
            if calls(&back) < calls(&doc) && lost == 0 {
                failures.push(format!("{name} → {target}: calls dropped without a loss"));
            }
        }
    }
    assert!(checked > 300, "only {checked} conversions");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn log_and_export_targets_are_refused_from_other_formats() {
    for target in [
        "claude-code",
        "codex",
        "chatgpt",
        "grok",
        "aistudio",
        "copilot",
        "open-webui",
        "cline",
    ] {
        let out = ctxclean()
            .args(["convert", "--to", target])
            .arg(fixture("functionary/test_case.json"))
            .assert()
            .code(2);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(err.contains("written only from"), "{target}: {err}");
        assert!(
            err.contains("openai, anthropic, responses, gemini, langchain, sharegpt, hf-chat"),
            "{err}"
        );
        assert!(out.get_output().stdout.is_empty());
    }
    // Its own format is no conversion at all.
    let p = fixture("claude-code/viewer-session.jsonl");
    let out = ctxclean()
        .args(["convert", "-q", "--to", "claude-code"])
        .arg(&p)
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, std::fs::read(&p).unwrap());
}

fn stdout(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

fn stderr(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(out.get_output().stderr.clone()).unwrap()
}

#[test]
fn a_session_log_becomes_one_request_body_with_parallel_calls_merged() {
    let log = fixture("claude-code/viewer-session.jsonl");
    // Before: Claude Code's one-block-per-line calls are split for OpenAI.
    let before = ctxclean()
        .args(["validate", "--provider", "openai"])
        .arg(&log)
        .assert()
        .code(1);
    assert!(stdout(&before).contains("not right after its call"));
    for (target, key) in [
        ("openai", "messages"),
        ("anthropic", "messages"),
        ("gemini", "contents"),
        ("responses", "input"),
    ] {
        let out = ctxclean()
            .args(["convert", "-q", "--to", target])
            .arg(&log)
            .assert()
            .success();
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{target}: one body");
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(body[key].is_array(), "{target}");
        let provider = if target == "openai" { "openai" } else { target };
        ctxclean()
            .args(["validate", "--provider", provider])
            .write_stdin(text)
            .assert()
            .success();
    }
    // Several conversations: one body per line.
    let out = ctxclean()
        .args(["convert", "-q", "--to", "anthropic"])
        .arg(fixture("sharegpt/fastchat.json"))
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.lines().count() > 1);
    for line in text.lines() {
        let body: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(body["max_tokens"], 4096);
    }
}

#[test]
fn request_fields_are_converted_and_checked() {
    let out = ctxclean()
        .args(["convert", "-q", "--to", "anthropic"])
        .arg(fixture("functionary/test_case.json"))
        .assert()
        .success();
    let body: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let tools = body["tools"].as_array().unwrap();
    assert!(tools
        .iter()
        .all(|t| t.get("input_schema").is_some() && t.get("function").is_none()));
    assert_eq!(tools[0]["name"], "get_car_price");
    ctxclean()
        .args(["validate", "--provider", "anthropic"])
        .write_stdin(out.get_output().stdout.clone())
        .assert()
        .success();
    // An Anthropic body with OpenAI's tools is not valid for Anthropic.
    let bad = r#"{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}"#;
    let out = ctxclean().arg("validate").write_stdin(bad).assert().code(1);
    assert!(
        stdout(&out).contains("tools[0] is in OpenAI's shape"),
        "{}",
        stdout(&out)
    );
    // To Gemini: function declarations, and the tool choice as toolConfig.
    let out = ctxclean()
        .args(["convert", "-q", "--to", "gemini"])
        .arg(fixture("functionary/test_case.json"))
        .assert()
        .success();
    let body: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(
        body["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );
}

#[test]
fn losses_are_counted_on_stderr_and_strict_refuses_them() {
    let p = fixture("written/anthropic_request.json");
    let out = ctxclean()
        .args(["convert", "--to", "openai"])
        .arg(&p)
        .assert()
        .success();
    let err = stderr(&out);
    assert!(err.contains("lost: 1 × field is_error (openai messages do not carry it), 1 × thinking part (openai cannot express it), 1 × model claude-sonnet-4-5 (not an openai model)"), "{err}");
    let out = ctxclean()
        .args(["convert", "--strict", "--to", "openai"])
        .arg(&p)
        .assert()
        .code(1);
    assert!(out.get_output().stdout.is_empty(), "nothing written");
    assert!(
        stderr(&out).contains("would lose 3 things (--strict)"),
        "{}",
        stderr(&out)
    );
    // Without a loss, --strict changes nothing.
    ctxclean()
        .args(["convert", "-q", "--strict", "--to", "anthropic"])
        .arg(fixture("written/two_queries.json"))
        .assert()
        .success();
}

#[test]
fn from_given_is_not_told_to_use_from() {
    let out = ctxclean()
        .args(["stats", "--from", "aistudio"])
        .arg(fixture("functionary/test_case.json"))
        .assert()
        .code(1);
    let err = stderr(&out);
    assert!(err.contains("because of --from"), "{err}");
    assert!(!err.contains("use --from"), "{err}");
}

#[test]
fn conversion_writes_no_empty_list_and_no_white_space_only_block() {
    // Issue 29: `--to openai` wrote `"content": []` and `--to anthropic` a
    // text block of white space for this Cline task; `validate` took both.
    let path = fixture("cline/xml-tools.json");
    let out = ctxclean()
        .args(["convert", "-q", "--to", "openai"])
        .arg(&path)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(!text.contains("\"content\": []"), "{text}");
    let out = ctxclean()
        .args(["convert", "--to", "anthropic"])
        .arg(&path)
        .assert()
        .success();
    let body: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    for m in body["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if let Some(t) = b["text"].as_str() {
                assert!(!t.trim().is_empty(), "white-space-only block in {m}");
            }
        }
    }
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("1 × white-space-only text"), "{err}");
}

#[test]
fn a_freeform_call_stays_freeform_or_is_wrapped_and_said() {
    // Issue 29: a Codex `custom_tool_call` (apply_patch) became a function
    // call whose arguments were not JSON.
    let path = fixture("codex/custom-tool-call.jsonl");
    let out = ctxclean()
        .args(["convert", "-q", "--to", "openai"])
        .arg(&path)
        .assert()
        .success();
    let body: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let call = &body["messages"][2]["tool_calls"][0];
    assert_eq!(call["type"], "custom", "{call}");
    assert!(call["custom"]["input"]
        .as_str()
        .unwrap()
        .starts_with("*** Begin Patch"));
    let out = ctxclean()
        .args(["convert", "-q", "--to", "responses"])
        .arg(&path)
        .assert()
        .success();
    let body: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let types: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "function_call",
            "function_call_output",
            "custom_tool_call",
            "custom_tool_call_output"
        ]
    );
    let out = ctxclean()
        .args(["convert", "--to", "anthropic"])
        .arg(&path)
        .assert()
        .success();
    let body: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    // The session opens with the model's call: Anthropic takes the user's
    // turn first, and one is put in front.
    assert_eq!(
        body["messages"][0]["content"][0]["text"],
        "[Start of conversation]"
    );
    let input = &body["messages"][3]["content"][0]["input"];
    assert!(
        input["input"]
            .as_str()
            .unwrap()
            .starts_with("*** Begin Patch"),
        "{body}"
    );
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("1 × shape of a freeform tool input"), "{err}");
}
