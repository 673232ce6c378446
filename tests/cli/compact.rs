//! `ctxclean compact-tools`: descriptions on real shapes, budget rules, and
//! properties over generated transcripts.

use ctxclean::ops::compact_tools::{compact_tools, describe, CompactSpec};
use ctxclean::pairs::pair_problems;
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::Conversation;
use proptest::prelude::*;
use serde_json::Value;

use crate::util::ctxclean;

fn run(args: &[&str]) -> (String, String) {
    let out = ctxclean().args(args).assert().success();
    let o = out.get_output();
    (
        String::from_utf8(o.stdout.clone()).unwrap(),
        String::from_utf8(o.stderr.clone()).unwrap(),
    )
}

#[test]
fn open_webui_embedded_results() {
    let (stdout, stderr) = run(&[
        "compact-tools",
        "--keep-last",
        "0",
        "--max-result-tokens",
        "0",
        "fixtures/written/open_webui_tool_calls.json",
    ]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let msgs = v[0]["chat"]["messages"].as_array().unwrap();
    let a1 = msgs[1]["content"].as_str().unwrap();
    assert!(a1.contains("result=\"&quot;[Tool: 61 rows | {\\&quot;diagnosis\\&quot;: \\&quot;Malignant neoplasm of bronchus and lung, unspecified\\&quot;, \\&quot;count\\&quot;: 5}]&quot;\""), "{a1}");
    assert!(
        a1.ends_with("The most frequent diagnosis is Diagnosis 59."),
        "commentary kept"
    );
    let a2 = msgs[3]["content"].as_str().unwrap();
    assert_eq!(a2.matches("[Tool: 2 failed queries]").count(), 2, "{a2}");
    assert!(a2.ends_with("Both queries failed."));
    // The history tree says the same.
    assert_eq!(
        v[0]["chat"]["history"]["messages"]["a1"]["content"],
        msgs[1]["content"]
    );
    assert!(
        stderr.starts_with("ctxclean compact-tools: 3 results compacted, "),
        "{stderr}"
    );
}

#[test]
fn anthropic_rows_errors_and_report() {
    let dir = crate::util::temp_dir("compact-report");
    let report = dir.join("r.json");
    let (stdout, _) = run(&[
        "compact-tools",
        "--keep-last",
        "0",
        "--max-result-tokens",
        "0",
        "--clear-inputs",
        "fixtures/written/anthropic_request.json",
        "--report",
        report.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["messages"][2]["content"][0]["content"],
        r#"[Tool: 2 rows | {"diagnosis": "Influenza", "count": 412}]"#
    );
    // This error is shorter than its description would be: it stays.
    assert_eq!(
        v["messages"][4]["content"][0]["content"][0]["text"],
        "Error: relation \"visit\" does not exist"
    );
    assert_eq!(
        v["messages"][1]["content"][2]["input"]["query"],
        "[cleared]"
    );
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    insta::assert_snapshot!(
        serde_json::to_string_pretty(&r["conversations"][0]["changes"]).unwrap()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn claude_code_images_in_results() {
    // Priced as gpt-4o would charge its one-tile image (255 tokens), the
    // result is worth compacting (as Anthropic would, a 1×1 image is 1).
    let (stdout, _) = run(&[
        "compact-tools",
        "--keep-last",
        "0",
        "--max-result-tokens",
        "0",
        "--model",
        "gpt-4o",
        "fixtures/written/claude_code_image_result.jsonl",
    ]);
    let line: Value = serde_json::from_str(stdout.lines().nth(2).unwrap()).unwrap();
    assert_eq!(
        line["message"]["content"][0]["content"][0]["text"],
        "[Tool: 3 lines, 75 chars | ### Result\n- [Screenshot of viewport](page.png)\n- Header: Welcome back, Ada] [image: image/png, 70 bytes]"
    );
    // The structured copy no longer matches the result: it goes.
    assert!(line.get("toolUseResult").is_none());
    // Other lines are untouched.
    let input = std::fs::read_to_string("fixtures/written/claude_code_image_result.jsonl").unwrap();
    assert_eq!(stdout.lines().next(), input.lines().next());
}

#[test]
fn gates_and_limits() {
    let path = "fixtures/written/open_webui_tool_calls.json";
    let input = std::fs::read_to_string(path).unwrap();
    // Nothing happens under the trigger, or when the savings are too small.
    for args in [
        ["--trigger-tokens", "100000"],
        ["--clear-at-least", "100000"],
    ] {
        let (stdout, _) = run(&["compact-tools", "--keep-last", "0", args[0], args[1], path]);
        assert_eq!(stdout, input);
    }
    // The last K results are never touched.
    let (stdout, _) = run(&[
        "compact-tools",
        "--keep-last",
        "3",
        "--max-result-tokens",
        "0",
        path,
    ]);
    assert_eq!(stdout, input);
    // --only-tools / --exclude-tools.
    let (stdout, _) = run(&[
        "compact-tools",
        "--keep-last",
        "0",
        "--max-result-tokens",
        "0",
        "--exclude-tools",
        "query_database",
        path,
    ]);
    assert_eq!(stdout, input);
    // --truncate-items cuts long strings in every result, recent ones too.
    let (stdout, stderr) = run(&["compact-tools", "--truncate-items", "20", path]);
    assert!(stdout.contains("…[52 chars]"), "{stderr}");
}

fn tokenizer() -> &'static Tokenizer {
    static TOK: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    TOK.get_or_init(|| Tokenizer::new(Encoding::Approx).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn results_are_replaced_never_removed(
        msgs in crate::trim::conversation(),
        keep_last in 0..4usize,
        max_result in 0..80usize,
        max_total in prop::option::of(0..400usize),
        truncate in prop::option::of(1..30usize),
        clear_inputs in any::<bool>(),
    ) {
        let tok = tokenizer();
        let spec = CompactSpec {
            keep_last,
            max_result_tokens: max_result,
            max_total_tokens: max_total,
            truncate_items: truncate,
            clear_inputs,
            ..CompactSpec::default()
        };
        let out = compact_tools(Conversation::new(msgs.clone()), &spec, tok);
        let kept = &out.conversation.messages;
        prop_assert_eq!(kept.len(), msgs.len(), "messages removed");
        prop_assert!(pair_problems(kept).is_empty());
        for (a, b) in kept.iter().zip(&msgs) {
            prop_assert_eq!(a.role, b.role);
            prop_assert_eq!(a.input_index(), b.input_index());
            prop_assert_eq!(&a.tool_call_id, &b.tool_call_id);
        }
        let results: Vec<usize> = (0..msgs.len()).filter(|&i| msgs[i].role.is_result()).collect();
        let protected = &results[results.len().saturating_sub(keep_last)..];
        if truncate.is_none() {
            for &i in protected {
                prop_assert_eq!(&kept[i], &msgs[i], "a protected result changed");
            }
        }
        if let (Some(max), None) = (max_total, truncate) {
            let total: usize = results.iter().map(|&i| tok.count_message(&kept[i])).sum();
            // Over the limit only when every candidate was compacted, or
            // would not get smaller by it.
            let compactable = results[..results.len().saturating_sub(keep_last)].iter().all(|&i| {
                let described = msgs[i].with_content(ctxclean::transcript::Content::Text(describe(&msgs[i], 200, 1)));
                kept[i].content.text().starts_with("[Tool: ") || tok.count_message(&described) >= tok.count_message(&msgs[i])
            });
            prop_assert!(total <= max || compactable, "{} tool tokens over {}", total, max);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A second run changes nothing: a description is not described again,
    /// nor a cut string cut again (each had made a description of a
    /// description, or a cut string's length its own).
    #[test]
    fn compacting_twice_is_compacting_once(
        msgs in crate::trim::conversation(),
        keep_last in 0..4usize,
        max_result in 0..80usize,
        max_total in prop::option::of(0..400usize),
        truncate in prop::option::of(1..30usize),
        clear_inputs in any::<bool>(),
        preview_chars in 0..40usize,
    ) {
        let tok = tokenizer();
        let spec = CompactSpec {
            keep_last,
            max_result_tokens: max_result,
            max_total_tokens: max_total,
            truncate_items: truncate,
            clear_inputs,
            preview_chars,
            ..CompactSpec::default()
        };
        let once = compact_tools(Conversation::new(msgs), &spec, tok).conversation;
        let twice = compact_tools(once.clone(), &spec, tok);
        prop_assert!(twice.changes.is_empty(), "changed again: {:?}", twice.changes);
        prop_assert_eq!(&twice.conversation.messages, &once.messages);
    }
}

#[test]
fn swe_agent_trajectory() {
    let (stdout, stderr) = run(&[
        "compact-tools",
        "fixtures/swe-agent/marshmallow-1867-function-calling.traj",
    ]);
    assert_eq!(
        stderr,
        "ctxclean compact-tools: 4 results compacted, 6,158 → 1,179 tool tokens\n"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let history = v["history"].as_array().unwrap();
    let tools: Vec<&Value> = history.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 13, "results replaced, never removed");
    // SWE-agent's plural ids survive.
    assert!(tools.iter().all(|t| t["tool_call_ids"].is_array()));
    assert!(tools[1]["content"]
        .as_str()
        .unwrap()
        .starts_with("[Tool: 98 lines, 3301 chars | [File: setup.py"));
    // The trajectory around the history is untouched.
    let input: Value = serde_json::from_slice(
        &std::fs::read("fixtures/swe-agent/marshmallow-1867-function-calling.traj").unwrap(),
    )
    .unwrap();
    assert_eq!(v["trajectory"], input["trajectory"]);
    assert_eq!(v["info"], input["info"]);
}

/// Every result described or cut, with short previews: what the two
/// second-run tests below run twice.
const CUT_EVERY_RESULT: [&str; 10] = [
    "compact-tools",
    "-q",
    "--keep-last",
    "0",
    "--max-result-tokens",
    "0",
    "--truncate-items",
    "10",
    "--preview-chars",
    "20",
];

/// A result whose description was no smaller, then cut by
/// `--truncate-items`: a second run leaves it cut, not described now that
/// it is shorter (found by scripts/invariants.py).
#[test]
fn a_result_cut_is_not_described_by_a_second_run() {
    let dir = crate::util::temp_dir("compact-cut-twice");
    let path = dir.join("in.json");
    std::fs::write(
        &path,
        r#"{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "a", "content": "error:\nfailed SELECT ok"}, {"role": "assistant", "content": "done"}]}"#,
    )
    .unwrap();
    let args = CUT_EVERY_RESULT;
    let once = ctxclean().args(args).arg(&path).assert().success();
    let once = once.get_output().stdout.clone();
    let v: Value = serde_json::from_slice(&once).unwrap();
    assert_eq!(v["messages"][2]["content"], "error:\nfai…[23 chars]");
    let out = dir.join("once.json");
    std::fs::write(&out, &once).unwrap();
    let twice = ctxclean().args(args).arg(&out).assert().success();
    assert!(twice.get_output().stdout == once, "a second run changed it");
    // The same for a string cut inside a JSON result (an error, here).
    let path = dir.join("json.json");
    std::fs::write(
        &path,
        r#"{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "[{\"id\": 0, \"name\": \"/etc/hosts OK\"}]", "is_error": true}]}, {"role": "assistant", "content": "done"}]}"#,
    )
    .unwrap();
    let once = ctxclean().args(args).arg(&path).assert().success();
    let once = once.get_output().stdout.clone();
    let v: Value = serde_json::from_slice(&once).unwrap();
    assert_eq!(
        v["messages"][2]["content"][0]["content"],
        r#"[{"id":0,"name":"/etc/hosts…[13 chars]"}]"#
    );
    std::fs::write(&out, &once).unwrap();
    let twice = ctxclean().args(args).arg(&out).assert().success();
    assert!(twice.get_output().stdout == once, "a second run changed it");
}

/// Cline's "Tool [x] was not executed" notice is its own header: compacted
/// or cut, it is written with its first words as one, and read back as
/// the same call's result (it read as the user's text, the call left
/// unanswered).
#[test]
fn a_cline_notice_compacted_is_still_its_calls_result() {
    let path = "fixtures/cline/xml-tools.json";
    let results = |bytes: &[u8]| -> u64 {
        let out = ctxclean()
            .args(["stats", "--json", "-q", "--from", "cline", "-"])
            .write_stdin(bytes.to_vec())
            .assert()
            .success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        v["conversations"][0]["tool_results"].as_u64().unwrap()
    };
    let before = results(&std::fs::read(path).unwrap());
    let args = CUT_EVERY_RESULT;
    let out = ctxclean().args(args).arg(path).assert().success();
    let once = out.get_output().stdout.clone();
    assert_eq!(results(&once), before, "a result lost on reading it again");
    let v: Value = serde_json::from_slice(&once).unwrap();
    assert_eq!(
        v[2]["content"][2]["text"],
        "Tool [execute_command] was not executed:\n[Tool: 1 line, 212 chars | Tool [execute_comman…]"
    );
    let twice = ctxclean()
        .args(args)
        .args(["--from", "cline", "-"])
        .write_stdin(once.clone())
        .assert()
        .success();
    assert!(twice.get_output().stdout == once, "a second run changed it");
}
