//! Every format: detection, reading, lossless writing, conversion.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use crate::util::{ctxclean, fixture};

/// Fixtures that are deliberately malformed: they fail as they are and
/// succeed with --skip-invalid.
const MALFORMED: &[&str] = &[
    "claude-code/edge_cases.jsonl",
    "claude-code/comment-header.jsonl",
];

fn transcripts(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "malformed") {
                transcripts(&path, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl" || e == "traj" || e == "af")
            && !path.ends_with("tokens/expected.json")
            && !path.ends_with("tokens/hf-expected.json")
            && !path.ends_with("tokens/hf-chatml.json")
        {
            out.push(path);
        }
    }
}

fn all_fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    transcripts(&fixture(""), &mut out);
    out.sort();
    out
}

fn rel(path: &Path) -> String {
    path.strip_prefix(fixture(""))
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn every_fixture_is_read_and_written_back_byte_for_byte() {
    for path in all_fixtures() {
        let name = rel(&path);
        let malformed = MALFORMED.contains(&name.as_str());
        if malformed {
            ctxclean().arg("stats").arg(&path).assert().code(1).stderr(
                predicate::str::contains(":").and(predicate::str::contains("--skip-invalid")),
            );
        }
        let mut stats = ctxclean();
        stats.arg("stats").arg(&path);
        let mut convert = ctxclean();
        convert.args(["convert", "-q"]).arg(&path);
        if malformed {
            stats.arg("--skip-invalid");
            convert.arg("--skip-invalid");
        }
        stats.assert().success();
        let out = convert.assert().success();
        assert!(
            out.get_output().stdout == std::fs::read(&path).unwrap(),
            "{name} did not come back byte for byte"
        );
    }
}

/// Which format each fixture is detected as, and what it holds.
#[test]
fn detected_formats() {
    let mut table = String::new();
    for path in all_fixtures() {
        let name = rel(&path);
        let out = ctxclean()
            .args(["stats", "--json", "--skip-invalid"])
            .arg(&path)
            .assert()
            .success();
        let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let format = report["conversations"][0]["format"]
            .as_str()
            .unwrap_or("-")
            .to_string();
        let t = &report["total"];
        table += &format!(
            "{name:<48} {format:<12} {:>4} conv {:>5} msgs {:>7} tokens {:>3} calls {:>3} results {:>2} images\n",
            t["conversations"], t["messages"], t["tokens"], t["tool_calls"], t["tool_results"], t["images"]
        );
    }
    insta::assert_snapshot!(table);
}

#[test]
fn tables_per_format() {
    for name in [
        "written/anthropic_request.json",
        "claude-code/viewer-session.jsonl",
        "written/open_webui_tool_calls.json",
        "written/langchain_messages.json",
        "written/responses_input.json",
        "codex/rollout.jsonl",
        "written/gemini_contents.json",
        "gemini/cli-session.json",
        "sharegpt/glaive_toolcall_6.json",
    ] {
        let out = ctxclean()
            .arg("stats")
            .arg(format!("fixtures/{name}"))
            .assert()
            .success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        insta::assert_snapshot!(name.replace(['/', '.'], "_"), text);
    }
}

#[test]
fn usage_as_logged() {
    let report: Value = serde_json::from_slice(
        &ctxclean()
            .args([
                "stats",
                "--json",
                "fixtures/claude-code/viewer-session.jsonl",
            ])
            .assert()
            .success()
            .get_output()
            .stdout,
    )
    .unwrap();
    let logged = &report["conversations"][0]["as_logged"];
    assert!(logged["source"].as_str().unwrap().contains("deduplicated"));
    assert!(logged["tokens"]["output_tokens"].as_u64().unwrap() > 0);
    let report: Value = serde_json::from_slice(
        &ctxclean()
            .args(["stats", "--json", "fixtures/codex/usage-only.jsonl"])
            .assert()
            .success()
            .get_output()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        report["conversations"][0]["as_logged"]["tokens"]["input_tokens"],
        12091
    );
}

/// Every file of the shared corpus, when it is there (CI has it beside the
/// clone; a fresh clone elsewhere may not).
#[test]
fn every_corpus_file_reads() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !corpus.is_dir() {
        eprintln!("skipped: {} is not here", corpus.display());
        return;
    }
    let mut files = Vec::new();
    transcripts(&corpus, &mut files);
    assert!(files.len() > 60, "only {} corpus files", files.len());
    for path in files {
        let plain = ctxclean().arg("stats").arg(&path).output().unwrap();
        if !plain.status.success() {
            // Deliberately malformed files: a located error, then success
            // with --skip-invalid.
            let stderr = String::from_utf8_lossy(&plain.stderr);
            assert!(
                stderr.contains("--skip-invalid"),
                "{}: {stderr}",
                path.display()
            );
            ctxclean()
                .args(["stats", "--skip-invalid"])
                .arg(&path)
                .assert()
                .success();
        }
    }
}

#[test]
fn detection_asks_for_from_when_unsure() {
    ctxclean()
        .args(["stats"])
        .write_stdin(r#"[{"speaker": "x", "words": "y"}]"#)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("cannot tell the format")
                .and(predicate::str::contains("--from")),
        );
}

#[test]
fn conversion_reports_what_the_target_cannot_express() {
    let dir = crate::util::temp_dir("formats-convert");
    let report = dir.join("r.json");
    let out = ctxclean()
        .args([
            "convert",
            "--to",
            "openai",
            "fixtures/written/anthropic_request.json",
            "--report",
        ])
        .arg(&report)
        .assert()
        .success();
    let converted: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let msgs = converted["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    // One text block is written as OpenAI's plain string (issue 29: a list
    // of text blocks with `max_tokens` read back as Anthropic).
    assert_eq!(msgs[0]["content"], "You are a careful data analyst.");
    // The image is still there, as a data URL.
    assert!(msgs[1]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .starts_with("data:image/png;base64,"));
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "toolu_01A");
    assert_eq!(msgs[3]["role"], "tool");
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let reasons: Vec<&str> = report["conversations"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("thinking part lost")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("is_error")),
        "{reasons:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
