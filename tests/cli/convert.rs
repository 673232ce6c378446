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
