//! `--model`: context windows, prices and tokenizers from the LiteLLM
//! snapshot in `data/`, dollars in `stats` and in summary lines.

use serde_json::Value;

use crate::util::{ctxclean, fixture, temp_dir};

const SESSION: &str = "claude-code/viewer-session.jsonl";

fn stats_json(args: &[&str], path: &str) -> Value {
    let out = ctxclean()
        .args(["stats", "--json"])
        .args(args)
        .arg(fixture(path))
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn stats_prices_a_conversation_and_its_logged_usage() {
    let v = stats_json(&["--model", "claude-sonnet-4-5-20250929"], SESSION);
    let c = &v["conversations"][0];
    let tokens = c["tokens"].as_u64().unwrap() as f64;
    let input = c["cost"]["input_usd"].as_f64().unwrap();
    assert!((input - tokens * 3e-6).abs() < 1e-12, "{input}");
    // Claude Code's usage: input, cache writes, cache reads and output at
    // their own rates.
    let u = &c["as_logged"]["tokens"];
    let n = |k: &str| u[k].as_f64().unwrap();
    let want = n("input_tokens") * 3e-6
        + n("cache_creation_input_tokens") * 3.75e-6
        + n("cache_read_input_tokens") * 3e-7
        + n("output_tokens") * 1.5e-5;
    assert!((c["cost"]["logged_usd"].as_f64().unwrap() - want).abs() < 1e-9);
    assert_eq!(c["routing"]["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(c["routing"]["large_context"], 200_000);
    assert_eq!(v["total"]["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(v["total"]["prices"][0]["date"], "2026-11-28");
    assert!(v["total"]["input_usd"].as_f64().unwrap() > 0.0);
    // The table says it in dollars.
    let out = ctxclean()
        .args(["stats", "--model", "claude-sonnet-4-5"])
        .arg(fixture(SESSION))
        .assert()
        .success();
    let table = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(table.contains("  cost: $0.0052 to send it as input to claude-sonnet-4-5; the logged usage cost $0.0932"), "{table}");
    assert!(
        table.contains("$0.0052 as input to claude-sonnet-4-5 ($0.0932 as logged)"),
        "{table}"
    );
    assert!(
        table.contains("prices: LiteLLM model_prices_and_context_window_backup.json"),
        "{table}"
    );
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("these are o200k_base counts"), "{stderr}");
}

#[test]
fn an_openai_model_picks_its_tokenizer_unless_one_is_given() {
    let v = stats_json(&["--model", "gpt-4"], "written/analyst_session.json");
    assert_eq!(v["tokenizer"], "cl100k_base");
    let v = stats_json(&["--model", "gpt-4o"], "written/analyst_session.json");
    assert_eq!(v["tokenizer"], "o200k_base");
    let v = stats_json(
        &["--model", "gpt-4", "--tokenizer", "o200k_base"],
        "written/analyst_session.json",
    );
    assert_eq!(v["tokenizer"], "o200k_base");
}

#[test]
fn an_unknown_model_is_a_usage_error_with_close_names() {
    ctxclean()
        .args(["stats", "--model", "claude-sonet-4-5"])
        .arg(fixture(SESSION))
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicates::str::contains(
            "--model claude-sonet-4-5: not in the model table (LiteLLM snapshot of 2026-11-28); close names: claude-sonnet-4-5",
        ));
}

#[test]
fn summary_lines_price_what_changed() {
    let out = ctxclean()
        .args(["trim", "--max-tokens", "500", "--model", "gpt-4o"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stderr),
        "ctxclean trim: 1 conversation, −1,189 tokens, 27 messages removed, −$0.0030 per call at gpt-4o\n"
    );
    let out = ctxclean()
        .args(["trim", "-v", "--max-tokens", "500", "--model", "gpt-4o"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stderr),
        "ctxclean trim: 1 conversation, 1,643 → 454 tokens, 27 messages removed, $0.0041 → $0.0011 per call at gpt-4o\n"
    );
}

#[test]
fn prices_files_add_and_override_models() {
    let dir = temp_dir("prices");
    let file = dir.join("local.toml");
    std::fs::write(
        &file,
        "[models.qwen2-local]\nprovider = \"ollama\"\nmax_input_tokens = 32768\ninput = 0.0000001\n",
    )
    .unwrap();
    let out = ctxclean()
        .args(["stats", "--json", "--model", "qwen2-local", "--prices"])
        .arg(&file)
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let c = &v["conversations"][0];
    assert_eq!(c["routing"]["large_context"], 32768);
    let tokens = c["tokens"].as_f64().unwrap();
    assert!((c["cost"]["input_usd"].as_f64().unwrap() - tokens * 1e-7).abs() < 1e-12);
    assert!(v["total"]["prices"][1]["source"]
        .as_str()
        .unwrap()
        .starts_with("--prices "));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn trim_budgets_can_be_the_context_window_of_the_model() {
    let dir = temp_dir("window");
    let file = dir.join("small.toml");
    std::fs::write(
        &file,
        "[models.tiny]\nprovider = \"ollama\"\nmax_input_tokens = 1000\n",
    )
    .unwrap();
    let run = |budget: &str, model: bool| {
        let mut cmd = ctxclean();
        cmd.args(["trim", "-q", "--max-tokens", budget]);
        if model {
            cmd.args(["--model", "tiny", "--prices"]).arg(&file);
        }
        let out = cmd
            .arg(fixture("written/analyst_session.json"))
            .assert()
            .success();
        out.get_output().stdout.clone()
    };
    assert!(run("50%", true) == run("500", false), "50% of 1,000 is 500");
    assert!(run("context", true) == run("1000", false));
    ctxclean()
        .args(["trim", "--max-tokens", "context"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--max-tokens context (or a share such as 80%) needs --model",
        ));
    ctxclean()
        .args(["trim", "--max-tokens", "120%"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .code(2);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A real Claude Code session with a 512×512 PNG screenshot: its tokens come
/// from its dimensions, by the rule of the model's provider.
#[test]
fn images_cost_what_their_provider_charges_for_their_size() {
    let image_tokens = |model: Option<&str>| {
        let mut args = vec![];
        if let Some(m) = model {
            args.extend(["--model", m]);
        }
        let v = stats_json(&args, "claude-code/screenshot-session.jsonl");
        let c = &v["conversations"][0];
        assert_eq!(c["images"], 1);
        assert!(c.get("images_estimated").is_none());
        c["image_tokens"].as_u64().unwrap()
    };
    assert_eq!(
        image_tokens(None),
        350,
        "no model: the rule of the format's provider (Anthropic)"
    );
    assert_eq!(
        image_tokens(Some("claude-sonnet-4-5")),
        350,
        "512 × 512 / 750"
    );
    assert_eq!(
        image_tokens(Some("gpt-4o")),
        255,
        "one 512-px tile: 170 + 85"
    );
    assert_eq!(image_tokens(Some("gemini-2.5-pro")), 258, "one 768-px tile");
    // The conversation's tokens carry them.
    let v = stats_json(
        &["--model", "gpt-4o"],
        "claude-code/screenshot-session.jsonl",
    );
    let w = stats_json(
        &["--model", "claude-sonnet-4-5"],
        "claude-code/screenshot-session.jsonl",
    );
    assert_eq!(
        w["conversations"][0]["tokens"].as_u64().unwrap()
            - v["conversations"][0]["tokens"].as_u64().unwrap(),
        350 - 255
    );
    // A remote image's size is unknown: the provider's most, marked.
    let v = stats_json(&["--model", "gpt-4o"], "functionary/test_case_vision.json");
    let c = &v["conversations"][0];
    assert_eq!(c["images_estimated"], 3);
    assert_eq!(c["image_tokens"], 3 * 1445);
}

/// `--timeline` draws the cumulative tokens with the budget and the cut;
/// `--svg` writes the same as a chart, which parses as SVG.
#[test]
fn the_timeline_and_its_svg() {
    let dir = temp_dir("svg");
    let svg = dir.join("chart.svg");
    let out = ctxclean()
        .args(["stats", "--timeline", "--max-tokens", "1000", "--svg"])
        .arg(&svg)
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    let table = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(table.contains("  timeline (tokens so far):"), "{table}");
    assert!(table.contains("── budget 1,000 ──"), "{table}");
    assert!(
        table.contains("✂ trim --max-tokens 1,000 keeps #14 onward"),
        "{table}"
    );
    // Where it says trim cuts is where trim cuts.
    let trimmed = ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "1000",
            "--report",
            "/dev/stdout",
            "-q",
        ])
        .arg(fixture("written/analyst_session.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&trimmed.stdout);
    let report: Value =
        serde_json::from_str(&text[text.rfind("\n{\n").map_or(0, |i| i + 1)..]).unwrap();
    let removed: Vec<u64> = report["conversations"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] == "removed")
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(removed, (1..14).collect::<Vec<u64>>());
    // The chart.
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let line = root
        .descendants()
        .find(|n| n.attribute("class") == Some("tokens"))
        .unwrap();
    assert_eq!(
        line.attribute("points").unwrap().split(' ').count(),
        41,
        "a point per message"
    );
    assert!(root
        .descendants()
        .any(|n| n.attribute("class") == Some("budget")));
    assert!(root
        .descendants()
        .any(|n| n.attribute("class") == Some("cut")));
    // --svg alone draws no timeline in the table.
    let out = ctxclean()
        .args(["stats", "--svg"])
        .arg(&svg)
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    assert!(!String::from_utf8_lossy(&out.get_output().stdout).contains("timeline"));
    ctxclean()
        .args(["stats", "--max-tokens", "10"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .code(2);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Ollama's own model names, as Open WebUI users type them (`llama3.1`,
/// `llama3.1:8b`), are found as the table's `ollama/…` (issue 39: only
/// `ollama/llama3.1` was).
#[test]
fn ollama_names_are_found() {
    for name in ["llama3.1", "llama3.1:8b", "LLAMA3.1"] {
        ctxclean()
            .args(["stats", "--model", name])
            .write_stdin(r#"{"messages":[{"role":"user","content":"hi"}]}"#)
            .assert()
            .success()
            .stderr(predicates::str::contains("priced as ollama/llama3.1"));
    }
}
