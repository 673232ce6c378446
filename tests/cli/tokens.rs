//! Token counts agree with Python tiktoken (fixtures/tokens/expected.json,
//! written by scripts/tiktoken_reference.py) on every plain-text message.

use serde_json::Value;

use crate::util::{ctxclean, fixture};

#[test]
fn per_message_counts_match_python_tiktoken() {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("tokens/expected.json")).unwrap())
            .unwrap();
    let mut checked = 0;
    for (path, by_encoding) in expected["transcripts"].as_object().unwrap() {
        for (encoding, counts) in by_encoding.as_object().unwrap() {
            let out = ctxclean()
                .args([
                    "stats",
                    "--json",
                    "--per-message",
                    "--tokenizer",
                    encoding,
                    path,
                ])
                .assert()
                .success();
            let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
            let per = report["conversations"][0]["per_message"]
                .as_array()
                .unwrap();
            for (index, tokens) in counts.as_object().unwrap() {
                let i: usize = index.parse().unwrap();
                assert_eq!(
                    per[i]["tokens"], *tokens,
                    "{path} message {i} with {encoding}: ctxclean {} vs tiktoken {tokens}",
                    per[i]["tokens"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 280, "only {checked} messages checked");
}

#[test]
fn conversation_total_adds_reply_priming() {
    let out = ctxclean()
        .args([
            "stats",
            "--json",
            "--per-message",
            "fixtures/tokens/plain_text.jsonl",
        ])
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let conv = &report["conversations"][0];
    let sum: u64 = conv["per_message"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(conv["tokens"].as_u64().unwrap(), sum + 3);
}

#[test]
fn approx_follows_langchain() {
    // "sys prompt " * 10 as a system message: ceil((110 + 6) / 4) + 3 = 32, no priming.
    let input = format!(
        r#"[{{"role":"system","content":"{}"}}]"#,
        "sys prompt ".repeat(10)
    );
    let out = ctxclean()
        .args(["stats", "--json", "--tokenizer", "approx"])
        .write_stdin(input)
        .assert()
        .success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report["total"]["tokens"], 32);
}

/// `--tokenizer hf:PATH` counts exactly what Python's `tokenizers` counts
/// with the same file (a small ChatML tokenizer trained on the fixtures by
/// scripts/hf_tokenizer.py), with ChatML's per-message tokens.
#[test]
#[cfg(feature = "hf")]
fn a_hugging_face_tokenizer_counts_what_the_tokenizers_package_counts() {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::util::fixture("tokens/hf-expected.json")).unwrap(),
    )
    .unwrap();
    let out = crate::util::ctxclean()
        .args([
            "stats",
            "--json",
            "--per-message",
            "--tokenizer",
            "hf:fixtures/tokens/hf-chatml.json",
            "fixtures/tokens/plain_text.jsonl",
        ])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["tokenizer"], "hf:fixtures/tokens/hf-chatml.json (chatml)");
    assert_eq!(v["total"]["tokens"], expected["total"]);
    let per: Vec<u64> = v["conversations"][0]["per_message"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .collect();
    let want: Vec<u64> = expected["per_message"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(per, want);
    // Not a tokenizer: exit 1, naming the file, before any input is read.
    crate::util::ctxclean()
        .args([
            "stats",
            "--tokenizer",
            "hf:fixtures/tokens/plain_text.jsonl",
            "no/such/input.json",
        ])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "fixtures/tokens/plain_text.jsonl: not a Hugging Face tokenizer.json",
        ));
    crate::util::ctxclean()
        .args(["stats", "--tokenizer", "hf:"])
        .assert()
        .code(2);
    // trim counts with it too.
    crate::util::ctxclean()
        .args([
            "trim",
            "-v",
            "--max-tokens",
            "500",
            "--tokenizer",
            "hf:fixtures/tokens/hf-chatml.json",
            "fixtures/tokens/plain_text.jsonl",
        ])
        .assert()
        .success()
        .stderr(predicates::str::contains(format!(
            "1 conversation, {} →",
            ctxclean::report::thousands(expected["total"].as_u64().unwrap() as usize)
        )));
}

/// Built without the `hf` feature, `--tokenizer hf:PATH` is a usage error
/// that says how to build it in.
#[test]
#[cfg(not(feature = "hf"))]
fn hugging_face_tokenizers_are_a_feature_and_say_so() {
    crate::util::ctxclean()
        .args([
            "stats",
            "--tokenizer",
            "hf:fixtures/tokens/hf-chatml.json",
            "fixtures/tokens/plain_text.jsonl",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--features hf"));
}
