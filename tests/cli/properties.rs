//! Properties across all operations: random pipelines of filter,
//! compact-tools, trim and summarize, with random flags, over generated
//! transcripts. The output is API-valid (by `validate`), deterministic,
//! changes only what the report says, and every message the report does not
//! name comes out exactly as it went in.

use std::collections::HashSet;

use ctxclean::format::{read_document, write_document, Format, ReadOptions};
use ctxclean::ops::compact_tools::CompactSpec;
use ctxclean::ops::filter::FilterSpec;
use ctxclean::ops::summarize::{Placement, Summarize, SummarizeSpec};
use ctxclean::ops::trim::{Strategy as Keep, TrimSpec};
use ctxclean::ops::Pipeline;
use ctxclean::report::Action;
use ctxclean::summary::extractive::Extractive;
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::Role;
use ctxclean::validate::{validate, Provider};
use proptest::prelude::*;
use serde_json::{json, Value};

/// One step of a generated pipeline.
#[derive(Clone, Debug)]
enum Step {
    Filter(u8, Option<String>),
    Compact(usize, usize, Option<usize>, bool),
    Trim(Option<usize>, bool, bool, Option<usize>),
    Summarize(usize, usize, bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            any::<u8>(),
            prop::option::of(prop::sample::select(vec![
                "lookup".to_string(),
                "*".to_string(),
                // No argument: every call of the tool keyed alike.
                String::new(),
            ]))
        )
            .prop_map(|(f, s)| Step::Filter(f, s)),
        (
            0..300usize,
            0..4usize,
            prop::option::of(0..400usize),
            any::<bool>()
        )
            .prop_map(|(m, k, t, c)| Step::Compact(m, k, t, c)),
        (
            prop::option::of(0..600usize),
            any::<bool>(),
            any::<bool>(),
            prop::option::of(0..8usize)
        )
            .prop_map(|(m, f, p, n)| Step::Trim(m, f, p, n)),
        (0..400usize, 1..8usize, any::<bool>()).prop_map(|(t, k, u)| Step::Summarize(t, k, u)),
    ]
}

fn pipeline(steps: &[Step]) -> Pipeline {
    let mut p = Pipeline::new();
    for s in steps {
        match s.clone() {
            Step::Filter(f, supersede) => {
                p.push(FilterSpec {
                    previous_cycles: f & 1 != 0,
                    strip_processed_images: f & 2 != 0,
                    dedupe_tool_results: f & 4 != 0,
                    drop_thinking: f & 8 != 0,
                    exclude_tool_calls: f & 16 != 0,
                    exclude_roles: if f & 32 != 0 {
                        vec![Role::System]
                    } else {
                        Vec::new()
                    },
                    exclude_tools: if f & 64 != 0 {
                        vec!["lookup".into()]
                    } else {
                        Vec::new()
                    },
                    supersede: supersede
                        .map(|a| vec![("lookup".to_string(), a)])
                        .unwrap_or_default(),
                    ..FilterSpec::default()
                });
            }
            Step::Compact(max, keep, total, clear) => {
                p.push(CompactSpec {
                    max_result_tokens: max,
                    keep_last: keep,
                    max_total_tokens: total,
                    clear_inputs: clear,
                    truncate_items: if clear { Some(20) } else { None },
                    ..CompactSpec::default()
                });
            }
            Step::Trim(max, first, partial, messages) => {
                p.push(TrimSpec {
                    max_tokens: max,
                    strategy: if first { Keep::First } else { Keep::Last },
                    allow_partial: partial,
                    max_messages: messages,
                    ..TrimSpec::default()
                });
            }
            Step::Summarize(threshold, keep, user) => {
                p.push(Summarize {
                    spec: SummarizeSpec {
                        threshold,
                        keep,
                        max_summary_tokens: 150,
                        placement: if user {
                            Placement::User
                        } else {
                            Placement::System
                        },
                        ..SummarizeSpec::default()
                    },
                    engine: Box::new(Extractive),
                    cache: None,
                });
            }
        }
    }
    p
}

fn tokenizer() -> &'static Tokenizer {
    static TOK: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
    TOK.get_or_init(|| Tokenizer::new(Encoding::O200kBase).unwrap())
}

/// Runs the steps over the input text; returns the output bytes and the
/// changes (removed, modified, added input indices).
fn run(
    text: &str,
    steps: &[Step],
) -> (
    Vec<u8>,
    ctxclean::format::Document,
    Vec<ctxclean::report::Change>,
) {
    let opts = ReadOptions {
        from: Some(Format::OpenAi),
        ..ReadOptions::default()
    };
    let mut doc = read_document("gen", text.as_bytes().to_vec(), &opts).unwrap();
    let reports = pipeline(steps).run(&mut doc, tokenizer(), true);
    let mut out = Vec::new();
    write_document(&doc, &mut out).unwrap();
    (
        out,
        doc,
        reports.into_iter().flat_map(|r| r.changes).collect(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_pipeline_keeps_transcripts_valid_and_reports_every_change(
        msgs in crate::trim::conversation(),
        steps in prop::collection::vec(step(), 1..4),
    ) {
        // Every message carries a number in a spelling the JSON parser
        // changes (`3E2` is parsed as `3e+2`): it must come back as written.
        let spelling = |i: usize| format!("{}E{}", i + 1, i % 7);
        let marked: Vec<Value> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut o = m.fields.clone().into_map();
                o.insert("n".into(), Value::from(format!("__N{i}__")));
                Value::Object(o)
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&json!({"model": "gpt-4o", "messages": marked})).unwrap();
        for i in 0..msgs.len() {
            text = text.replace(&format!("\"__N{i}__\""), &spelling(i));
        }
        let input: Vec<Value> = marked
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut m = m.clone();
                m["n"] = serde_json::from_str(&spelling(i)).unwrap();
                m
            })
            .collect();
        let (out, doc, changes) = run(&text, &steps);
        let out_text = String::from_utf8_lossy(&out).to_string();

        // Deterministic, byte for byte.
        let (again, _, _) = run(&text, &steps);
        prop_assert!(out == again, "not deterministic");

        // API-valid, by validate, once read back.
        let back = read_document(
            "out",
            out.clone(),
            &ReadOptions { from: Some(Format::OpenAi), ..ReadOptions::default() },
        )
        .unwrap();
        for conv in &back.conversations {
            let problems = validate(conv, Format::OpenAi, Provider::OpenAi);
            let real: Vec<_> = problems.iter().filter(|p| p.code != "empty").collect();
            prop_assert!(real.is_empty(), "{:?} after {:?}", real, steps);
        }

        // Every change is reported; every message not reported is unchanged.
        let removed: HashSet<usize> = changes.iter().filter(|c| c.action == Action::Removed).map(|c| c.index).collect();
        let modified: HashSet<usize> = changes.iter().filter(|c| c.action == Action::Modified).map(|c| c.index).collect();
        let out_value: Value = serde_json::from_slice(&out).unwrap();
        let out_msgs = out_value["messages"].as_array().cloned().unwrap_or_default();
        let kept = &doc.conversations[0].messages;
        prop_assert_eq!(out_msgs.len(), kept.len());
        let mut present = HashSet::new();
        for (k, m) in kept.iter().enumerate() {
            match m.input_index() {
                Some(i) => {
                    prop_assert!(!removed.contains(&i), "message {} reported removed but kept", i);
                    present.insert(i);
                    if !modified.contains(&i) {
                        // Not reported: exactly as it went in, numbers spelled
                        // as they were.
                        prop_assert_eq!(&out_msgs[k], &input[i], "message {} changed unreported after {:?}", i, steps);
                        let n = format!("\"n\": {}", spelling(i));
                        prop_assert!(out_text.contains(&n), "message {}: {} spelled otherwise", i, n);
                    }
                }
                None => {
                    // Only a summary is ever added, reported at its output
                    // position; a later operation's change to it (a partial
                    // cut) is told in that report.
                    let added = changes.iter().find(|c| c.action == Action::Added && c.index == k);
                    prop_assert!(added.is_some(), "message {} added unreported: {:?}", k, changes);
                    let t = out_msgs[k]["content"].as_str().unwrap_or("");
                    prop_assert!(
                        added.unwrap().detail.contains_key("then")
                            || t.starts_with("[Previous conversation summary]")
                            || t.starts_with("[Earlier conversation truncated"),
                        "unexpected new message {:?}", out_msgs[k]
                    );
                }
            }
        }
        let added = changes.iter().filter(|c| c.action == Action::Added).count();
        prop_assert_eq!(added, kept.iter().filter(|m| m.input_index().is_none()).count());
        for i in 0..input.len() {
            prop_assert!(present.contains(&i) || removed.contains(&i), "message {} vanished unreported after {:?}", i, steps);
        }
        // Unchanged JSON keeps its text: with no change at all, the document
        // comes back byte for byte.
        if changes.is_empty() {
            prop_assert!(out == text.as_bytes(), "unchanged input rewritten");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The default summary line counts only what changed: its difference is
    /// exactly what counting everything before and after gives.
    #[test]
    fn counting_what_changed_gives_the_full_difference(
        msgs in crate::trim::conversation(),
        steps in prop::collection::vec(step(), 1..4),
    ) {
        use ctxclean::ops::Accounting;
        let marked: Vec<Value> = msgs.iter().map(|m| Value::Object(m.fields.clone().into_map())).collect();
        let text = json!({"messages": marked}).to_string();
        let opts = ReadOptions {
            from: Some(Format::OpenAi),
            ..ReadOptions::default()
        };
        let mut full = read_document("gen", text.as_bytes().to_vec(), &opts).unwrap();
        let mut delta = full.clone();
        let p = pipeline(&steps);
        let f = p.run_with(&mut full, tokenizer(), Accounting::Full);
        let d = p.run_with(&mut delta, tokenizer(), Accounting::Delta);
        prop_assert_eq!(f.len(), d.len());
        for (f, d) in f.iter().zip(&d) {
            prop_assert_eq!(f.delta, None);
            prop_assert_eq!(
                d.delta,
                Some(f.after.tokens as i64 - f.before.tokens as i64),
                "{:?}",
                &f.changes
            );
        }
    }
}
