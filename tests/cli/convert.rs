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
