//! Real transcripts, round 5 (issue 58): what the hidden sets left, and the
//! IDE agents and newer command-line agents.

use serde_json::Value;

use crate::round4::{run, stats, unchanged, valid_as, validate};
use crate::util::{ctxclean, fixture};

/// The roles and first words of each message `convert --to openai` writes.
fn openai_messages(path: &str) -> Vec<(String, String)> {
    let (out, _) = run(&["convert", "--to", "openai", "-q"], path);
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

#[test]
fn a_letta_context_is_read_in_its_own_order_and_written_back_as_it_came() {
    // The system message was rebuilt (record 13, the newest) and leads the
    // context; two user messages stand in the context in the other order.
    let path = "letta/customer_service_reordered.af";
    let v = stats(path);
    assert_eq!(v["conversations"][0]["messages"], 13);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let msgs = openai_messages(path);
    assert_eq!(msgs[0].0, "system");
    assert!(
        msgs[0].1.contains("Order #8812"),
        "the rebuilt system message first: {}",
        msgs[0].1
    );
    assert!(
        msgs[3].1.contains("user_message") && msgs[4].1.contains("login"),
        "{msgs:?}"
    );
    // Summarized, the file keeps its records in the order they were made
    // (the summary last), and the context says the order the agent sends.
    let (out, _) = run(&["summarize", "--threshold", "500", "--keep", "4"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let records = after["messages"].as_array().unwrap();
    let context: Vec<usize> = after["in_context_message_indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap() as usize)
        .collect();
    let first = &records[context[0]]["content"][0]["text"];
    assert!(first.as_str().unwrap().contains("Order #8812"), "{first}");
    let second = records[context[1]]["content"].to_string();
    assert!(second.contains("summary"), "{second}");
    assert_eq!(*context.iter().skip(1).max().unwrap(), records.len() - 1);
    valid_as("letta", out);
}

#[test]
fn roo_switch_mode_results_that_come_late_or_quote_many_lines_are_paired() {
    // A reason over two lines in the header; a switch the user held up
    // with a question, answered after a search.
    let path = "cline/roo-late-switch.json";
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let out = ctxclean()
        .args(["stats", "--tools", "-q"])
        .arg(fixture(path))
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("#1 switch_mode"), "{text}");
    assert!(text.contains("→ #2,"), "{text}");
    assert!(text.contains("#4 switch_mode"), "{text}");
    assert!(text.contains("→ #8,"), "{text}");
    for op in [
        &["trim", "--max-tokens", "300"][..],
        &["filter", "--previous-cycles"],
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ],
    ] {
        let (out, _) = run(op, path);
        valid_as("cline", out);
    }
}

#[test]
fn an_amp_thread_of_id_title_and_messages_is_a_thread_not_a_request() {
    let path = "amp/exported-thread.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "anthropic");
    assert_eq!(c["tool_calls"], 1);
    assert_eq!(c["tool_results"], 1);
    let (ok, said) = validate(path);
    assert!(ok, "no max_tokens asked of a thread: {said}");
    unchanged(&[path]);
}

#[test]
fn a_branched_chat_export_reads_the_chain_of_its_last_message() {
    let path = "branched/sourdough.json";
    let v = stats(path);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "branched");
    // Eight messages, two branches: the edited question's branch is the one
    // the last message ends.
    assert_eq!(c["messages"], 6);
    let (ok, said) = validate(path);
    assert!(ok, "{said}");
    unchanged(&[path]);
    let msgs = openai_messages(path);
    assert_eq!(msgs.len(), 6);
    assert_eq!(msgs[0].0, "user");
    assert_eq!(msgs[1].0, "assistant");
    assert!(msgs[2].1.contains("overnight cold proof"), "{msgs:?}");
    // Trimmed, the other branch hangs on what is left of its ancestors.
    let (out, _) = run(&["trim", "--max-tokens", "120"], path);
    let after: Value = serde_json::from_slice(&out).unwrap();
    let ids: Vec<&str> = after["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"7f0c2a1e-0001"), "{ids:?}");
    assert_eq!(after["messages"][0]["parentMessageId"], Value::Null);
    valid_as("branched", out);
    // A summary has no place in its tree: said, the file as it came.
    let out = ctxclean()
        .args(["summarize", "--threshold", "50", "--keep", "2"])
        .arg(fixture(path))
        .assert()
        .success();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("cannot take a new message"), "{err}");
    assert_eq!(
        out.get_output().stdout,
        std::fs::read(fixture(path)).unwrap()
    );
}
