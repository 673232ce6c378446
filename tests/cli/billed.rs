//! Issue 41, at rest: the usage a log recorded per call fitted against
//! ctxclean's count (`stats`), and budgets in the provider's tokens
//! (`trim --budget-in billed`).

use std::collections::HashSet;
use std::fs;

use serde_json::{json, Value};

use crate::util::{ctxclean, fixture, temp_dir};

fn stats(path: &std::path::Path) -> Value {
    let out = ctxclean()
        .args(["stats", "--json", "--per-message"])
        .arg(path)
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// A Claude Code session of `calls` calls; each assistant line records
/// `usage(k)` as its input tokens.
fn session(calls: usize, usage: impl Fn(usize) -> u64) -> String {
    let mut out = String::new();
    let mut parent = Value::Null;
    for k in 0..calls {
        let words: String = (0..(20 + 37 * k)).map(|i| format!("w{i} ")).collect();
        let user = format!("u{k}");
        out += &json!({"type": "user", "uuid": user, "parentUuid": parent, "sessionId": "s",
            "message": {"role": "user", "content": words}})
        .to_string();
        out.push('\n');
        let a = format!("a{k}");
        out += &json!({"type": "assistant", "uuid": a, "parentUuid": user, "sessionId": "s",
            "message": {"id": format!("msg_{k}"), "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": format!("answer {k}")}],
                "usage": {"input_tokens": usage(k), "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 3}}})
        .to_string();
        out.push('\n');
        parent = Value::from(a);
    }
    out
}

#[test]
fn a_logs_usage_is_fitted_against_the_count_of_what_each_call_sent() {
    let dir = temp_dir("billed-fit");
    let path = dir.join("s.jsonl");
    // The counts first (usage is not counted as a message's tokens), then
    // the usage a provider with a fixed part of 1,000 tokens and twice
    // ctxclean's count would have billed.
    fs::write(&path, session(6, |_| 1)).unwrap();
    let per: Vec<u64> = stats(&path)["conversations"][0]["per_message"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(per.len(), 12);
    let before = |k: usize| per[..2 * k + 1].iter().sum::<u64>();
    fs::write(&path, session(6, |k| 1000 + 2 * before(k))).unwrap();
    let v = stats(&path);
    let f = &v["conversations"][0]["billed_fit"];
    assert_eq!(f["calls"], 6, "{f}");
    assert!((f["fixed"].as_f64().unwrap() - 1000.0).abs() < 1e-6, "{f}");
    assert!((f["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{f}");
    assert!((f["r2"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{f}");
    // Shown beside "as logged".
    let out = ctxclean().arg("stats").arg(&path).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("billed per call: 1,000 + 2.00 × counted (fitted on 6 calls, R² 1.00"),
        "{text}"
    );
}

#[test]
fn real_claude_code_logs_bill_a_fixed_part_and_more_than_o200k_counts() {
    // The system prompt and tools (about 15k–25k tokens) go with every call
    // and are not in the log; Claude bills more tokens than o200k counts.
    for name in [
        "claude-code/parallel-tasks.jsonl",
        "claude-code/sidechains.jsonl",
        "claude-code/viewer-session.jsonl",
    ] {
        let path = fixture(name);
        let text = fs::read_to_string(&path).unwrap();
        // The calls: distinct message ids of main-line assistant lines with usage.
        let ids: HashSet<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["isSidechain"] != true && l["message"]["usage"].is_object())
            .filter_map(|l| l["message"]["id"].as_str().map(str::to_string))
            .collect();
        let f = stats(&path)["conversations"][0]["billed_fit"].clone();
        assert_eq!(
            f["calls"].as_u64().unwrap() as usize,
            ids.len(),
            "{name}: {f}"
        );
        let (fixed, ratio) = (f["fixed"].as_f64().unwrap(), f["ratio"].as_f64().unwrap());
        assert!((10_000.0..30_000.0).contains(&fixed), "{name}: {f}");
        assert!((1.0..1.6).contains(&ratio), "{name}: {f}");
        assert!(f["r2"].as_f64().unwrap() > 0.9, "{name}: {f}");
    }
}

#[test]
fn a_budget_in_billed_tokens_is_turned_into_counted_ones_and_said() {
    let dir = temp_dir("billed-trim");
    let report = dir.join("r.json");
    let path = fixture("claude-code/parallel-tasks.jsonl");
    let f = stats(&path)["conversations"][0]["billed_fit"].clone();
    let (fixed, ratio) = (f["fixed"].as_f64().unwrap(), f["ratio"].as_f64().unwrap());
    let out = ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "22000",
            "--budget-in",
            "billed",
            "--report",
        ])
        .arg(&report)
        .arg(&path)
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    let c = &r["conversations"][0];
    let counted = ((22_000.0 - fixed) / ratio).floor() as u64;
    assert_eq!(c["budget_counted"], counted, "{c}");
    assert!(c["after"]["tokens"].as_u64().unwrap() <= counted, "{c}");
    assert!(c["budget_scale"].as_str().unwrap().contains("fitted on"));
    // A fitted scale is no fallback: no warning.
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(!stderr.contains("warning"), "{stderr}");
    // The same budget counted: far more is kept.
    let plain = ctxclean()
        .args(["trim", "--max-tokens", "22000", "-q"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(plain.get_output().stdout, fs::read(&path).unwrap());

    // A log without usage: the default, said on stderr and in the report.
    let out = ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "600",
            "--budget-in",
            "billed",
            "--report",
        ])
        .arg(&report)
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("warning") && stderr.contains("the default for openai"),
        "{stderr}"
    );
    let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["conversations"][0]["budget_counted"], 600);
}

#[test]
fn a_summarize_threshold_in_billed_tokens_is_read_the_same_way() {
    let dir = temp_dir("billed-summarize");
    let report = dir.join("r.json");
    let path = fixture("claude-code/parallel-tasks.jsonl");
    let run = |extra: &[&str]| {
        ctxclean()
            .args([
                "summarize",
                "--threshold",
                "22000",
                "--keep",
                "4",
                "--report",
            ])
            .arg(&report)
            .args(extra)
            .arg(&path)
            .assert()
            .success();
        let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
        r["conversations"][0].clone()
    };
    // 22,000 counted tokens: the session (about 5,000) is under it.
    let counted = run(&[]);
    assert_eq!(counted["after"], counted["before"], "{counted}");
    // 22,000 billed: its fixed part (about 18,600) leaves about 3,100.
    let billed = run(&["--budget-in", "billed"]);
    let threshold = billed["budget_counted"].as_u64().unwrap();
    assert!(
        threshold < billed["before"]["tokens"].as_u64().unwrap(),
        "{billed}"
    );
    assert!(
        billed["after"]["messages"].as_u64() < billed["before"]["messages"].as_u64(),
        "{billed}"
    );
}

/// `bill` never shows unpriced traffic as $0, prices it with `--model`,
/// and says a proxy that cost more in the same line a saving takes
/// (issue 56).
#[test]
fn bill_says_unpriced_prices_with_model_and_says_when_it_cost_more() {
    let dir = crate::util::temp_dir("bill-prices");
    let line = |model: &str, extra: Value| {
        let mut v = serde_json::json!({"route": "anthropic-messages", "time": 1_764_000_000.0,
            "model": model, "status": 200,
            "billed": {"input": 1000, "cache_read": 9000, "cache_write": 500, "output": 200}});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v.to_string() + "\n"
    };
    let unpriced = dir.join("unpriced.jsonl");
    std::fs::write(&unpriced, line("house-model-7", json!({})).repeat(2)).unwrap();
    let out = ctxclean().arg("bill").arg(&unpriced).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("unpriced") && text.contains("house-model-7"),
        "{text}"
    );
    assert!(
        !text.contains("$0.0000") && !text.contains("saved"),
        "{text}"
    );
    // --model prices the billed tokens at the table's prices.
    let out = ctxclean()
        .args(["bill", "--json", "--model", "claude-sonnet-4-5"])
        .arg(&unpriced)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string("core/data/models.json").unwrap()).unwrap();
    let m = &table["models"]["claude-sonnet-4-5"];
    let p = |k: &str| m[k].as_f64().unwrap();
    let want = 2.0
        * (1000.0 * p("input")
            + 9000.0 * p("cache_read")
            + 500.0 * p("cache_write")
            + 200.0 * p("output"));
    let got = v["total"]["dollars"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
    assert_eq!(v["total"]["priced"], 2);
    // A line that carries its request as it came (`as_came`, in
    // ctxclean's count, with that count of the body sent) has it priced at
    // those prices, scaled by billed over counted: here 10,500 billed for
    // 5,250 counted, so twice its figures.
    let metered = dir.join("metered.jsonl");
    let came = json!({"came": {"input": 1000, "cache_read": 20000, "cache_write": 3000, "output": 0}, "sent": 5250});
    std::fs::write(&metered, line("house-model-7", json!({"as_came": came}))).unwrap();
    let out = ctxclean()
        .args(["bill", "--json", "--model", "claude-sonnet-4-5"])
        .arg(&metered)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let want = 2.0 * (1000.0 * p("input") + 20000.0 * p("cache_read") + 3000.0 * p("cache_write"))
        + 200.0 * p("output");
    let got = v["total"]["dollars_as_came"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
    // A proxy that cost more than the requests as they came: said so.
    let dearer = dir.join("dearer.jsonl");
    std::fs::write(
        &dearer,
        line(
            "claude-sonnet-4-5",
            json!({"dollars": 1.0, "dollars_as_came": 0.8}),
        ),
    )
    .unwrap();
    let out = ctxclean().arg("bill").arg(&dearer).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("cost more (estimate): $0.2000 more than the $0.8000"),
        "{text}"
    );
    assert!(!text.contains("saved"), "{text}");
}
