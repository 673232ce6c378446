//! The library's engine call is the CLI's: for every fixture, the bytes
//! `Engine::clean` returns for a whole input are the bytes the command
//! writes, and its reports hold the same counts as the command's
//! `--report`. The proxy and the Python package call the same function, so
//! what holds here holds for them.

use ctxclean::engine::{CleanError, Engine, Options};
use ctxclean::format::{Format, ReadOptions};
use ctxclean::ops::filter::FilterSpec;
use ctxclean::ops::trim::TrimSpec;
use ctxclean::ops::{Accounting, Pipeline};
use ctxclean::tokens::{Encoding, Tokenizer};

use crate::redetect::fixtures;
use crate::util::ctxclean;

/// A pipeline and the command line that builds the same one.
fn cases() -> Vec<(Vec<&'static str>, Options)> {
    let trim = |n| {
        let mut p = Pipeline::new();
        p.push(TrimSpec {
            max_tokens: Some(n),
            ..TrimSpec::default()
        });
        p
    };
    let filter = {
        let mut p = Pipeline::new();
        p.push(FilterSpec {
            previous_cycles: true,
            ..FilterSpec::default()
        });
        p
    };
    vec![
        (vec!["convert"], Options::default()),
        (vec!["trim", "--max-tokens", "40"], options(trim(40))),
        (vec!["filter", "--previous-cycles"], options(filter)),
        (
            vec!["convert", "--to", "openai"],
            Options {
                to: Some(Format::OpenAi),
                ..Options::default()
            },
        ),
    ]
}

fn options(pipeline: Pipeline) -> Options {
    Options {
        pipeline,
        accounting: Accounting::Full,
        ..Options::default()
    }
}

#[test]
fn the_engine_call_writes_what_the_command_writes() {
    // Both count with the rough tokenizer: what is compared is the engine
    // against the command, and each of the many processes skips building
    // the vocabulary (the exact counts are compared below, on one file).
    let tok = Tokenizer::new(Encoding::Approx).unwrap();
    let mut compared = 0;
    for (args, opts) in cases() {
        let engine = Engine::new(opts);
        for path in fixtures() {
            let bytes = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            let cli = ctxclean()
                .args(&args)
                .arg(&path)
                .args(["-q", "--tokenizer", "approx"])
                .output()
                .unwrap();
            match engine.clean(&name, bytes, &ReadOptions::default(), &tok) {
                Ok(cleaned) => {
                    assert!(
                        cli.status.success(),
                        "{args:?} {name}: the engine cleaned it, the command failed: {}",
                        String::from_utf8_lossy(&cli.stderr)
                    );
                    assert!(
                        cleaned.bytes() == cli.stdout,
                        "{args:?} {name}: the engine's bytes differ from the command's"
                    );
                    compared += 1;
                }
                Err(e) => {
                    assert!(!cli.status.success(), "{args:?} {name}: engine failed: {e}");
                    let code = cli.status.code();
                    let usage = matches!(e, CleanError::Usage(_));
                    assert_eq!(
                        code,
                        Some(if usage { 2 } else { 1 }),
                        "{args:?} {name}: {e}"
                    );
                }
            }
        }
    }
    assert!(compared > 100, "only {compared} outputs compared");
}

#[test]
fn the_engine_reports_what_the_command_reports() {
    let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
    let dir = crate::util::temp_dir("engine-report");
    let report = dir.join("r.json");
    let path = crate::util::fixture("claude-code/parallel-tasks.jsonl");
    let (args, opts) = cases().remove(1);
    let cleaned = Engine::new(opts)
        .clean(
            &path.display().to_string(),
            std::fs::read(&path).unwrap(),
            &ReadOptions::default(),
            &tok,
        )
        .unwrap();
    ctxclean()
        .args(&args)
        .arg(&path)
        .arg("--report")
        .arg(&report)
        .assert()
        .success();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let conv = &r["conversations"][0];
    let mine = &cleaned.reports[0];
    assert_eq!(conv["before"]["tokens"], mine.before.tokens);
    assert_eq!(conv["after"]["tokens"], mine.after.tokens);
    assert_eq!(conv["after"]["messages"], mine.after.messages);
    assert_eq!(
        conv["changes"].as_array().unwrap().len(),
        mine.changes.len()
    );
}

/// A document its caller holds parsed (the Python package's dicts) cleans
/// as its text does: for every fixture that is one conversation object,
/// `Prepared::apply_value` on its value gives the bytes, changes, records,
/// warnings and losses `Prepared::apply` gives on the same value written on
/// one line; and the value is refused (`None`) only where its text is not
/// one conversation object or cannot be read.
#[test]
fn a_parsed_value_cleans_as_its_text_does() {
    use ctxclean::format::{read_document, Layout};
    use ctxclean::recipe::{Applied, Recipe};
    let recipes: [&[&str]; 5] = [
        &["trim", "--max-tokens", "40"],
        &["trim", "--max-tokens", "300", "--allow-partial"],
        &["filter", "--previous-cycles", "--strip-processed-images"],
        &["compact-tools", "--max-result-tokens", "20"],
        &["convert", "--to", "anthropic"],
    ];
    let seen = |a: &Applied| {
        let changes: Vec<_> = a.report.conversations.iter().map(|c| &c.changes).collect();
        (
            serde_json::to_string(&changes).unwrap(),
            a.records.clone(),
            a.warnings.clone(),
            format!("{:?}", a.lost),
        )
    };
    let (mut compared, mut changed) = (0, 0);
    for steps in recipes {
        let words = vec![steps.iter().map(Into::into).collect()];
        let prepared = Recipe::from_steps(&words, None, None)
            .unwrap()
            .prepare(Accounting::None)
            .unwrap();
        for path in fixtures() {
            let bytes = std::fs::read(&path).unwrap();
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
                continue; // JSONL
            };
            let text = serde_json::to_vec(&value).unwrap();
            let by_text = prepared.apply("t", text.clone(), None);
            let name = format!("{steps:?} {}", path.display());
            match prepared.apply_value("t", value, None).unwrap() {
                Some(by_value) => {
                    let by_text = by_text.unwrap_or_else(|e| panic!("{name}: {e:#}"));
                    assert!(by_value.out == by_text.out, "{name}: the bytes differ");
                    assert_eq!(seen(&by_value), seen(&by_text), "{name}");
                    compared += 1;
                    changed += usize::from(by_value.out != text);
                }
                None => {
                    let layout =
                        read_document("t", text, &ReadOptions::default()).map(|d| d.layout);
                    assert!(
                        !matches!(layout, Ok(Layout::Object)) || by_text.is_err(),
                        "{name}: a conversation object, refused as a value"
                    );
                }
            }
        }
    }
    assert!(
        compared > 100 && changed > 40,
        "{compared} compared, {changed} changed"
    );
}

/// A recipe in flight (the LangChain middleware's) is the proxy's: its trim
/// cuts half the budget (at the chat's earlier requests, replayed first),
/// a conversation that comes back longer goes on as it went with the new
/// message appended, and a conversion is refused.
#[test]
fn a_recipe_in_flight_cuts_and_holds_as_the_proxy_does() {
    use ctxclean::inflight::Holds;
    use ctxclean::recipe::Recipe;
    use serde_json::{json, Value};
    let words = |w: &[&str]| vec![w.iter().map(Into::into).collect::<Vec<_>>()];
    let recipe =
        Recipe::from_steps_in_flight(&words(&["trim", "--max-tokens", "300"]), None, None).unwrap();
    assert_eq!(recipe.budget, Some(300));
    let holds = Holds::new(recipe.budget, Some(2), 16);
    let prepared = recipe.prepare(Accounting::Full).unwrap();
    let body = |n: usize| {
        let messages: Vec<Value> = (0..n)
            .map(|k| {
                let role = if k % 2 == 0 { "user" } else { "assistant" };
                json!({"role": role, "content": format!("message {k}: {}", "words ".repeat(30))})
            })
            .collect();
        serde_json::to_vec(&json!({ "messages": messages })).unwrap()
    };
    let messages = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap()["messages"].clone();
    let first = prepared
        .clean_request(Format::OpenAi, &body(15), Some(&holds))
        .unwrap();
    let sent = messages(first.body.as_deref().expect("cut"));
    // The chat's earlier requests (each before a turn of the model) are
    // replayed first: the cut made at one of them (half the budget) holds,
    // the later messages appended, within the budget.
    let kept = first.reports[0].after.tokens;
    assert!(kept <= 300, "{kept} tokens kept: within the budget");
    let note = first.cache.as_deref().unwrap_or_default();
    assert!(note.contains("7 earlier requests replayed first"), "{note}");
    let second = prepared
        .clean_request(Format::OpenAi, &body(16), Some(&holds))
        .unwrap();
    assert!(
        second.cache.as_deref().unwrap().starts_with("held"),
        "{:?}",
        second.cache
    );
    let mut want = sent.as_array().unwrap().clone();
    want.push(messages(&body(16))[15].clone());
    assert_eq!(
        messages(second.body.as_deref().unwrap()),
        Value::Array(want)
    );
    for w in [
        &["convert", "--to", "anthropic"][..],
        &["trim", "--max-tokens", "9", "--to", "gemini"],
    ] {
        assert!(
            Recipe::from_steps_in_flight(&words(w), None, None).is_err(),
            "{w:?}"
        );
    }
}
