//! Machine-readable rows (issue 21): `stats --jsonl` against its committed
//! JSON Schema, and `--report-jsonl` of the transforming commands.

use std::path::Path;

use serde_json::Value;

use crate::redetect::fixtures;
use crate::util::{ctxclean, fixture, temp_dir};

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/stats-row.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Checks `v` against the part of JSON Schema the committed schemas use
/// (type, properties, required, additionalProperties: false, items, $ref
/// into $defs, minimum), collecting every problem with its path.
fn check(root: &Value, schema: &Value, v: &Value, at: &str, problems: &mut Vec<String>) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        return check(root, &root["$defs"][name], v, at, problems);
    }
    let ty = schema["type"].as_str().unwrap_or("any");
    let fits = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    };
    if !fits {
        problems.push(format!("{at}: {v} is not {ty}"));
        return;
    }
    if let (Some(min), Some(n)) = (schema["minimum"].as_f64(), v.as_f64()) {
        if n < min {
            problems.push(format!("{at}: {n} < {min}"));
        }
    }
    if let Some(obj) = v.as_object() {
        for key in schema["required"].as_array().into_iter().flatten() {
            if !obj.contains_key(key.as_str().unwrap()) {
                problems.push(format!("{at}: no {key}"));
            }
        }
        for (k, child) in obj {
            match schema["properties"].get(k) {
                Some(s) => check(root, s, child, &format!("{at}.{k}"), problems),
                None if schema["additionalProperties"] == Value::Bool(false) => {
                    problems.push(format!("{at}: unexpected key {k}"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, child) in arr.iter().enumerate() {
            check(root, items, child, &format!("{at}[{i}]"), problems);
        }
    }
}

fn rows(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_stats_row_of_every_fixture_fits_the_schema_with_the_same_keys() {
    let schema = schema();
    for model in [None, Some("gpt-4o")] {
        let mut cmd = ctxclean();
        cmd.args(["stats", "--jsonl", "-q", "--skip-invalid"]);
        if let Some(m) = model {
            cmd.args(["--model", m]);
        }
        let out = cmd.args(fixtures()).assert().success();
        let rows = rows(&out.get_output().stdout);
        assert!(rows.len() > 500, "{}", rows.len());
        let keys = |r: &Value| r.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        let first = keys(&rows[0]);
        let mut problems = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            check(&schema, &schema, r, &format!("row {i}"), &mut problems);
            assert_eq!(keys(r), first, "row {i} has other keys than row 0");
        }
        assert!(problems.is_empty(), "{problems:#?}");
        assert_eq!(first.contains(&"logged_usd".to_string()), model.is_some());
    }
}

#[test]
fn stats_rows_carry_the_figures_of_stats_json() {
    let paths = [
        fixture("claude-code/viewer-session.jsonl"),
        fixture("llama-factory/reason_tool_use_demo_8.jsonl"),
        fixture("codex/encrypted-reasoning.jsonl"),
    ];
    let jsonl = ctxclean()
        .args(["stats", "--jsonl"])
        .args(&paths)
        .assert()
        .success();
    let rows = rows(&jsonl.get_output().stdout);
    let json = ctxclean()
        .args(["stats", "--json"])
        .args(&paths)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let convs = doc["conversations"].as_array().unwrap();
    assert_eq!(rows.len(), convs.len());
    for (r, c) in rows.iter().zip(convs) {
        for k in [
            "source",
            "index",
            "format",
            "messages",
            "tokens",
            "tool_calls",
            "tool_results",
            "images",
            "opaque_bytes",
        ] {
            assert_eq!(r[k], c[k], "{k}");
        }
        assert_eq!(r["tokenizer"], doc["tokenizer"]);
        for (role, n) in c["by_role"].as_object().unwrap() {
            assert_eq!(&r["by_role"][role], n, "{role}");
        }
        let by_tool: u64 = r["by_tool"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["results"].as_u64().unwrap())
            .sum();
        assert_eq!(by_tool, c["tool_results"].as_u64().unwrap());
    }
    // The logged usage of the Claude Code session, billed apart.
    let cc = &rows[0];
    let logged = &convs[0]["as_logged"];
    assert_eq!(cc["logged_requests"], logged["requests"]);
    assert_eq!(
        cc["logged_cache_read_tokens"],
        logged["tokens"]["cache_read_input_tokens"]
    );
    // A dataset of one conversation per line: each row names its line.
    let per_line: Vec<&Value> = rows.iter().filter(|r| r["format"] == "openai").collect();
    assert_eq!(per_line.len(), 8);
    for r in per_line {
        assert_eq!(r["line"], r["index"].as_u64().unwrap() + 1);
    }
    // A log that records no usage: zeros, not nulls.
    let lf = &rows[1];
    assert_eq!(lf["logged_requests"], 0);
    assert_eq!(lf["logged_input_tokens"], 0);
    // The sum of the rows is the total.
    let sum: u64 = rows.iter().map(|r| r["tokens"].as_u64().unwrap()).sum();
    assert_eq!(sum, doc["total"]["tokens"].as_u64().unwrap());
}

#[test]
fn stats_jsonl_refuses_what_has_no_row() {
    for extra in [
        &["--by", "file"][..],
        &["--json"],
        &["--per-message"],
        &["--timeline"],
    ] {
        ctxclean()
            .args(["stats", "--jsonl"])
            .args(extra)
            .arg(fixture("claude-code/viewer-session.jsonl"))
            .assert()
            .code(2);
    }
}

#[test]
fn report_rows_are_the_reports_conversations_one_per_line() {
    let dir = temp_dir("report-jsonl");
    let (json, jsonl) = (dir.join("r.json"), dir.join("r.jsonl"));
    let inputs = [
        fixture("claude-code/viewer-session.jsonl"),
        fixture("llama-factory/reason_tool_use_demo_8.jsonl"),
    ];
    ctxclean()
        .args(["filter", "--previous-cycles", "then", "trim"])
        .args(["--max-tokens", "300", "--out-dir"])
        .arg(dir.join("out"))
        .arg("--report")
        .arg(&json)
        .arg("--report-jsonl")
        .arg(&jsonl)
        .args(&inputs)
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = rows(&std::fs::read(&jsonl).unwrap());
    let convs = report["conversations"].as_array().unwrap();
    assert_eq!(rows.len(), convs.len());
    assert_eq!(rows.len(), 9);
    for (r, c) in rows.iter().zip(convs) {
        assert_eq!(r["command"], "filter→trim");
        assert_eq!(r["tokenizer"], "o200k_base");
        for k in ["source", "index", "format", "before", "after", "changes"] {
            assert_eq!(r[k], c[k], "{k}");
        }
        let n = |a: &str| {
            c["changes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| x["action"] == a)
                .count() as u64
        };
        assert_eq!(r["removed"].as_u64().unwrap(), n("removed"));
        assert_eq!(r["added"].as_u64().unwrap(), n("added"));
        // The same keys whether or not there is anything to say.
        for k in ["notes", "lost", "steps"] {
            assert!(r[k].is_array(), "{k}");
        }
        assert_eq!(r["steps"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn report_rows_go_to_stderr_with_a_dash_and_skip_a_failed_file() {
    let dir = temp_dir("report-jsonl-stderr");
    let out = ctxclean()
        .args(["trim", "--max-tokens", "300", "--keep-going", "-q"])
        .args(["--report-jsonl", "-", "--out-dir"])
        .arg(&dir)
        .arg(fixture("malformed/truncated.json"))
        .arg(fixture("claude-code/viewer-session.jsonl"))
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let rows: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{stderr}");
    assert!(rows[0]["source"]
        .as_str()
        .unwrap()
        .ends_with("viewer-session.jsonl"));
    assert!(stderr.contains("truncated.json:1:46"), "{stderr}");
}

/// `--report -` is standard error, as `--report-jsonl -` is: no file
/// named `-` is written (one was, and was once committed by mistake).
#[test]
fn the_report_goes_to_stderr_with_a_dash() {
    let dir = temp_dir("report-stderr");
    let out = ctxclean()
        .current_dir(&dir)
        .args(["trim", "--max-tokens", "300", "-q", "--report", "-", "-o"])
        .arg(dir.join("out.jsonl"))
        .arg(fixture("claude-code/viewer-session.jsonl"))
        .assert()
        .success();
    assert!(!dir.join("-").exists());
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let report: Value = serde_json::from_str(stderr.trim()).unwrap();
    assert_eq!(report["command"], "trim");
    assert_eq!(report["conversations"].as_array().unwrap().len(), 1);
}

#[test]
fn report_rows_never_overwrite_an_input_or_the_other_report() {
    let dir = temp_dir("report-jsonl-guard");
    let input = dir.join("in.json");
    std::fs::copy(fixture("functionary/test_case.json"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let out = ctxclean()
        .args(["trim", "--max-tokens", "50", "--report-jsonl"])
        .arg(&input)
        .arg(&input)
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("--report-jsonl"), "{stderr}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let report = dir.join("r.json");
    std::fs::write(&report, "old").unwrap();
    ctxclean()
        .args(["trim", "--max-tokens", "50", "--report"])
        .arg(&report)
        .arg("--report-jsonl")
        .arg(&report)
        .arg(&input)
        .assert()
        .code(2);
    assert_eq!(std::fs::read(&report).unwrap(), b"old");
}
