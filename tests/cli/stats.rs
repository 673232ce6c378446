//! `ctxclean stats`: tables, JSON report, tools listing, routing hints.

use serde_json::Value;

use crate::util::ctxclean;

fn stdout(args: &[&str]) -> String {
    let out = ctxclean().args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn table_for_people() {
    insta::assert_snapshot!(stdout(&["stats", "fixtures/functionary/test_case.json"]));
}

#[test]
fn table_with_tools_and_per_message() {
    insta::assert_snapshot!(stdout(&[
        "stats",
        "--tools",
        "--per-message",
        "fixtures/functionary/test_case_v1.json"
    ]));
}

#[test]
fn json_report() {
    let report: Value = serde_json::from_str(&stdout(&[
        "stats",
        "--json",
        "--per-message",
        "fixtures/functionary/test_case_vision.json",
    ]))
    .unwrap();
    insta::assert_snapshot!(serde_json::to_string_pretty(&report).unwrap());
}

#[test]
fn json_report_keeps_the_contract_field_names() {
    let report: Value = serde_json::from_str(&stdout(&[
        "stats",
        "--json",
        "fixtures/functionary/test_case.json",
    ]))
    .unwrap();
    assert_eq!(report["tokenizer"], "o200k_base");
    let c = &report["conversations"][0];
    for key in [
        "source",
        "index",
        "format",
        "messages",
        "tokens",
        "by_role",
        "tool_calls",
        "tool_results",
        "images",
    ] {
        assert!(c.get(key).is_some(), "missing {key}");
    }
    assert!(
        c.get("per_message").is_none(),
        "per_message only with --per-message"
    );
    assert_eq!(c["format"], "openai");
    assert_eq!(c["tool_calls"], 6);
    assert_eq!(c["tool_results"], 6);
    assert_eq!(c["tool_results_by_tool"]["get_weather"]["messages"], 2);
    for key in ["conversations", "messages", "tokens"] {
        assert!(report["total"].get(key).is_some(), "missing total.{key}");
    }
}

#[test]
fn several_inputs_and_stdin_add_up() {
    let v1 = std::fs::read("fixtures/functionary/test_case_v1.json").unwrap();
    let report: Value = serde_json::from_slice(
        &ctxclean()
            .args([
                "stats",
                "--json",
                "fixtures/llama-factory/mllm_demo.json",
                "-",
            ])
            .write_stdin(v1)
            .assert()
            .success()
            .get_output()
            .stdout,
    )
    .unwrap();
    assert_eq!(report["total"]["conversations"], 7);
    assert_eq!(report["conversations"][6]["source"], "-");
    let sum: u64 = report["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(report["total"]["tokens"].as_u64().unwrap(), sum);
}

#[test]
fn tools_listing_pairs_calls_with_results() {
    let report: Value = serde_json::from_str(&stdout(&[
        "stats",
        "--json",
        "--tools",
        "fixtures/functionary/test_case.json",
    ]))
    .unwrap();
    let tools = report["conversations"][0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6);
    assert_eq!(tools[0]["name"], "get_car_price");
    assert_eq!(tools[0]["result_index"], 4);
    assert_eq!(tools[1]["result_index"], 5);
}

#[test]
fn routing_hints() {
    let report: Value = serde_json::from_str(&stdout(&[
        "stats",
        "--json",
        "--large-context",
        "100",
        "fixtures/functionary/test_case_vision.json",
    ]))
    .unwrap();
    let routing = &report["conversations"][0]["routing"];
    assert_eq!(routing["needs_vision"], true);
    assert_eq!(routing["needs_large_context"], true);
    let report: Value = serde_json::from_str(&stdout(&[
        "stats",
        "--json",
        "fixtures/functionary/test_case.json",
    ]))
    .unwrap();
    assert_eq!(report["conversations"][0]["routing"]["needs_vision"], false);
    assert_eq!(
        report["conversations"][0]["routing"]["needs_large_context"],
        false
    );
}

#[test]
fn empty_input_is_zero_conversations() {
    let out = ctxclean()
        .args(["stats", "--json"])
        .write_stdin("  \n")
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report["total"]["conversations"], 0);
}
