//! `ctxclean trim`: properties over generated transcripts, and the CLI.

use ctxclean::format::{read_document, Format, ReadOptions};
use ctxclean::ops::trim::{trim, units, Strategy as Keep, TrimSpec};
use ctxclean::pairs::pair_problems;
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::{Conversation, Message, Role};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::util::ctxclean;

#[derive(Debug, Clone)]
enum Turn {
    User(String, bool),
    Assistant(String),
    Tools(String, usize, String),
    Open(usize),
}

pub(crate) fn words() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z]{1,8}( |\n)", 1..30).prop_map(|w| w.concat())
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        3 => (words(), any::<bool>()).prop_map(|(t, img)| Turn::User(t, img)),
        3 => words().prop_map(Turn::Assistant),
        2 => (words(), 1..4usize, words()).prop_map(|(t, n, r)| Turn::Tools(t, n, r)),
    ]
}

/// A valid conversation: optional system message, turns, and maybe an
/// active cycle (calls with some results missing) at the very end.
pub(crate) fn conversation() -> impl Strategy<Value = Vec<Message>> {
    (any::<bool>(), words(), prop::collection::vec(turn(), 0..12), prop::option::of(1..3usize)).prop_map(
        |(sys, system, mut turns, open)| {
            if let Some(n) = open {
                turns.push(Turn::Open(n));
            }
            let mut msgs = Vec::new();
            if sys {
                msgs.push(json!({"role": "system", "content": system}));
            }
            let mut id = 0;
            for t in turns {
                match t {
                    Turn::User(text, false) => msgs.push(json!({"role": "user", "content": text})),
                    Turn::User(text, true) => msgs.push(json!({"role": "user", "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]})),
                    Turn::Assistant(text) => msgs.push(json!({"role": "assistant", "content": text})),
                    Turn::Tools(..) | Turn::Open(_) => {
                        let (text, result, n, answered) = match t {
                            Turn::Tools(text, n, result) => (text, result, n, n),
                            Turn::Open(n) => (String::new(), "partial".to_string(), n, n - 1),
                            _ => unreachable!(),
                        };
                        let ids: Vec<String> = (0..n).map(|_| { id += 1; format!("c{id}") }).collect();
                        let calls: Vec<Value> = ids.iter().map(|i| json!({"id": i, "type": "function",
                            "function": {"name": "lookup", "arguments": format!("{{\"q\":\"{i}\"}}")}})).collect();
                        msgs.push(json!({"role": "assistant", "content": text, "tool_calls": calls}));
                        for i in ids.iter().take(answered) {
                            msgs.push(json!({"role": "tool", "tool_call_id": i, "content": result}));
                        }
                    }
                }
            }
            let text = serde_json::to_string(&json!({"messages": msgs})).unwrap();
            let opts = ReadOptions { from: Some(Format::OpenAi), ..ReadOptions::default() };
            read_document("gen", text.into_bytes(), &opts).unwrap().conversations.remove(0).messages
        },
    )
}

fn roles() -> impl Strategy<Value = Option<Vec<Role>>> {
    prop::option::of(prop::sample::subsequence(
        vec![Role::System, Role::User, Role::Assistant, Role::Tool],
        1..3,
    ))
}

fn spec() -> impl Strategy<Value = TrimSpec> {
    (
        prop::option::of(0..600usize),
        any::<bool>(),
        roles(),
        roles(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0..8usize),
        prop::option::of(0..4usize),
    )
        .prop_map(
            |(
                max_tokens,
                first,
                start_on,
                end_on,
                no_system,
                allow_partial,
                max_messages,
                max_turns,
            )| TrimSpec {
                max_tokens,
                strategy: if first { Keep::First } else { Keep::Last },
                start_on: if first { None } else { start_on },
                end_on,
                no_system,
                allow_partial,
                max_messages,
                max_turns,
            },
        )
}

/// Tokenizers are built once: building o200k_base takes a while.
fn tokenizer(e: Encoding) -> &'static Tokenizer {
    static APPROX: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    static O200K: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    let cell = if e == Encoding::Approx {
        &APPROX
    } else {
        &O200K
    };
    cell.get_or_init(|| Tokenizer::new(e).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn trim_keeps_whole_units_within_budget_and_is_idempotent(
        msgs in conversation(),
        spec in spec(),
        approx in any::<bool>(),
    ) {
        let tok = tokenizer(if approx { Encoding::Approx } else { Encoding::O200kBase });
        prop_assert!(pair_problems(&msgs).is_empty());
        let out = trim(Conversation::new(msgs.clone()), &spec, tok);
        let kept = &out.conversation.messages;

        // A subsequence of the input, at most one message cut.
        let indices: Vec<usize> = kept.iter().map(|m| m.input_index().unwrap()).collect();
        prop_assert!(indices.windows(2).all(|w| w[0] < w[1]));
        let cut: Vec<usize> = kept.iter().filter(|m| **m != msgs[m.input_index().unwrap()]).map(|m| m.input_index().unwrap()).collect();
        prop_assert!(cut.len() <= 1, "more than one message modified: {:?}", cut);

        // Whole units: a unit is kept entirely or not at all.
        for u in units(&msgs, 0) {
            let n = u.clone().filter(|i| indices.contains(i)).count();
            prop_assert!(n == 0 || n == u.len() || (u.len() == 1), "unit {:?} split", u);
            if n > 0 && n < u.len() {
                // A unit may lose its first message only when that is the system message.
                prop_assert!(false, "unit {:?} split: kept {:?}", u, indices);
            }
        }

        // API-valid.
        prop_assert!(pair_problems(kept).is_empty(), "{:?}", pair_problems(kept));

        // Within budget, unless flagged.
        let flagged = out.flags.get("over_budget") == Some(&Value::Bool(true));
        if let Some(max) = spec.max_tokens {
            let total = tok.count_conversation(&out.conversation);
            prop_assert!(total <= max || flagged, "{} tokens for a budget of {}", total, max);
        }

        // Idempotent.
        let again = trim(out.conversation.clone(), &spec, tok);
        prop_assert_eq!(&again.conversation.messages, kept);
        prop_assert!(again.changes.is_empty(), "second run changed {:?}", again.changes);
    }
}

#[test]
fn trim_cli_reports_what_it_removed() {
    let dir = crate::util::temp_dir("trim-cli");
    let report = dir.join("r.json");
    let out = ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "200",
            "--start-on",
            "user",
            "fixtures/functionary/test_case.json",
            "--report",
        ])
        .arg(&report)
        .assert()
        .success()
        .stderr("ctxclean trim: 1 conversation, 449 → 67 tokens, 17 messages removed\n");
    let trimmed = out.get_output().stdout.clone();
    // The budget holds by stats' own count.
    let stats: Value = serde_json::from_slice(
        &ctxclean()
            .args(["stats", "--json"])
            .write_stdin(trimmed)
            .assert()
            .success()
            .get_output()
            .stdout,
    )
    .unwrap();
    assert!(stats["total"]["tokens"].as_u64().unwrap() <= 200);
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    insta::assert_snapshot!(serde_json::to_string_pretty(&report["conversations"][0]).unwrap());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn trim_flags_an_active_cycle_over_budget() {
    let input = r#"{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a long result that does not fit in ten tokens at all, not even close"}]}"#;
    ctxclean()
        .args(["trim", "--max-tokens", "10", "--report", "/dev/null"])
        .write_stdin(input)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "1 conversation over budget (the active tool cycle exceeds the budget)",
        ));
}

#[test]
fn trim_usage_errors() {
    ctxclean()
        .args(["trim", "fixtures/functionary/test_case.json"])
        .assert()
        .code(2);
    ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "9",
            "--strategy",
            "first",
            "--start-on",
            "user",
        ])
        .arg("fixtures/functionary/test_case.json")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--start-on goes with --strategy last",
        ));
    ctxclean()
        .args(["trim", "--max-tokens", "9", "--end-on", "robot"])
        .assert()
        .code(2);
}
