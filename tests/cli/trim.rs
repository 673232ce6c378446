//! `ctxclean trim`: properties over generated transcripts, and the CLI.

use ctxclean::format::{read_document, write_document, Format, ReadOptions};
use ctxclean::ops::trim::{trim, units, Strategy as Keep, TrimSpec};
use ctxclean::ops::Pipeline;
use ctxclean::pairs::pair_problems;
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::{Conversation, Message, Role};
use ctxclean::validate::{validate, Provider};
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
    openai_messages().prop_map(|msgs| {
        let text = serde_json::to_string(&json!({"messages": msgs})).unwrap();
        let opts = ReadOptions {
            from: Some(Format::OpenAi),
            ..ReadOptions::default()
        };
        read_document("gen", text.into_bytes(), &opts)
            .unwrap()
            .conversations
            .remove(0)
            .messages
    })
}

/// The messages of [`conversation`] as OpenAI Chat Completions JSON.
fn openai_messages() -> impl Strategy<Value = Vec<Value>> {
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
            msgs
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
                ..TrimSpec::default()
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

        // Never empty unless asked.
        let says = |m: &[Message]| m.iter().any(|m| !m.role.is_instruction());
        let asked = spec.max_messages == Some(0) || spec.max_turns == Some(0);
        prop_assert!(!says(&msgs) || asked || says(kept), "nothing left of {:?}", msgs);

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

/// Formats whose API wants the user first (issue 15).
const USER_FIRST: [Format; 6] = [
    Format::Anthropic,
    Format::ClaudeCode,
    Format::Cline,
    Format::Gemini,
    Format::ClaudeAi,
    Format::AiStudio,
];

/// A generated conversation as a file of `format`: request formats through
/// the library's conversion; the logs and exports (which the library writes
/// only from themselves) in the shape of the real files in `fixtures/`: a
/// Claude Code session as lines chained by `parentUuid`, a Cline task as the
/// bare list of Anthropic messages its `api_conversation_history.json` is, a
/// Claude.ai conversation as `chat_messages` of Anthropic blocks, an AI
/// Studio prompt as text chunks (it has no tool calls).
fn as_format(msgs: &[Value], format: Format) -> Vec<u8> {
    let text = serde_json::to_string(&json!({"messages": msgs})).unwrap();
    let opts = ReadOptions {
        from: Some(Format::OpenAi),
        ..ReadOptions::default()
    };
    let mut doc = read_document("gen", text.into_bytes(), &opts).unwrap();
    doc.format = if format == Format::Gemini {
        Format::Gemini
    } else {
        Format::Anthropic
    };
    let mut out = Vec::new();
    write_document(&doc, &mut out).unwrap();
    let request: Value = serde_json::from_slice(&out).unwrap();
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let uuid = |i: usize| format!("00000000-0000-4000-8000-{i:012}");
    match format {
        Format::Anthropic | Format::Gemini => out,
        Format::Cline => {
            // As Cline writes them: the task and environment details in the
            // first user turn, the model on every assistant turn.
            let mut messages = messages;
            for (i, m) in messages.iter_mut().enumerate() {
                if m["role"] == "assistant" {
                    m["modelInfo"] =
                        json!({"modelId": "claude-sonnet-4-5", "providerId": "anthropic"});
                } else if i == 0 {
                    m["content"] = json!([
                        {"type": "text", "text": "<task>\nFix the failing test.\n</task>"},
                        {"type": "text", "text": "<environment_details>\n# Current Working Directory (/work) Files\nsrc/\n</environment_details>"},
                    ]);
                }
            }
            serde_json::to_vec(&messages).unwrap()
        }
        Format::ClaudeCode => {
            let mut parent = Value::Null;
            let mut text = String::new();
            for (i, m) in messages.into_iter().enumerate() {
                let line = json!({
                    "parentUuid": parent, "isSidechain": false, "userType": "external",
                    "cwd": "/work", "sessionId": "s-1", "version": "2.0.0",
                    "type": m["role"], "message": m, "uuid": uuid(i),
                    "timestamp": "2025-01-01T00:00:00.000Z",
                });
                text += &serde_json::to_string(&line).unwrap();
                text.push('\n');
                parent = Value::from(uuid(i));
            }
            text.into_bytes()
        }
        Format::ClaudeAi => {
            let chat: Vec<Value> = messages
                .into_iter()
                .enumerate()
                .map(|(i, m)| {
                    let content = match &m["content"] {
                        Value::String(s) => json!([{"type": "text", "text": s}]),
                        c => c.clone(),
                    };
                    json!({
                        "uuid": uuid(i),
                        "sender": if m["role"] == "assistant" { "assistant" } else { "human" },
                        "created_at": "2025-01-01T00:00:00Z",
                        "text": "", "content": content, "attachments": [], "files": [],
                    })
                })
                .collect();
            serde_json::to_vec(&json!([{
                "uuid": uuid(999), "name": "generated", "created_at": "2025-01-01T00:00:00Z",
                "updated_at": "2025-01-01T00:00:00Z", "chat_messages": chat,
            }]))
            .unwrap()
        }
        Format::AiStudio => {
            let chunks: Vec<Value> = msgs
                .iter()
                .filter(|m| m["role"] == "user" || m["role"] == "assistant")
                .filter_map(|m| {
                    let text = match &m["content"] {
                        Value::String(s) if !s.trim().is_empty() => s.clone(),
                        Value::Array(parts) => {
                            parts.iter().filter_map(|p| p["text"].as_str()).collect()
                        }
                        _ => return None,
                    };
                    let role = if m["role"] == "user" { "user" } else { "model" };
                    Some(json!({"role": role, "text": text, "tokenCount": 10}))
                })
                .collect();
            serde_json::to_vec(&json!({
                "runSettings": {"temperature": 1.0, "model": "models/gemini-2.5-pro"},
                "systemInstruction": {},
                "chunkedPrompt": {"chunks": chunks},
            }))
            .unwrap()
        }
        f => panic!("{f} is not a user-first format"),
    }
}

fn user_first_spec() -> impl Strategy<Value = TrimSpec> {
    (
        prop::option::of(0..600usize),
        prop::sample::select(vec![Keep::Last, Keep::Last, Keep::Last, Keep::First]),
        roles(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0..8usize),
        prop::option::of(0..4usize),
        any::<bool>(),
    )
        .prop_map(
            |(
                max_tokens,
                strategy,
                end_on,
                no_system,
                allow_partial,
                max_messages,
                max_turns,
                no_placeholder,
            )| {
                TrimSpec {
                    max_tokens,
                    strategy,
                    end_on,
                    no_system,
                    allow_partial,
                    max_messages,
                    max_turns,
                    no_placeholder,
                    ..TrimSpec::default()
                }
            },
        )
}

/// Claude Code: every `parentUuid` names a line of the file, and every
/// message line is on the chain from the last message to the root, but for
/// results hung off their calls and lines that were off it in `input` (a
/// rewound branch, a subagent's lines).
pub(crate) fn chain_problems(input: &str, text: &str) -> Vec<String> {
    let off_in_input = off_chain(input);
    let mut out = Vec::new();
    let lines = session_lines(text);
    let uuids: std::collections::HashSet<&str> =
        lines.iter().filter_map(|l| l["uuid"].as_str()).collect();
    for (i, l) in lines.iter().enumerate() {
        if let Some(p) = l["parentUuid"].as_str() {
            if !uuids.contains(p) {
                out.push(format!("line {}: parentUuid {p} names no line", i + 1));
            }
        }
    }
    for u in off_chain(text) {
        if !off_in_input.contains(&u) {
            out.push(format!(
                "{u}: a message line off the chain to the last message"
            ));
        }
    }
    out
}

/// The lines of a Claude Code session: JSONL, or its `{"loglines": [...]}`
/// wrapper.
fn session_lines(text: &str) -> Vec<Value> {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) {
        if let Some(Value::Array(lines)) = o.get("loglines") {
            return lines.clone();
        }
    }
    text.lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The message lines (by uuid) not on the chain from the last message line
/// to the root, but for lines of tool results only.
fn off_chain(text: &str) -> Vec<String> {
    let lines = session_lines(text);
    let by_uuid: std::collections::HashMap<&str, &Value> = lines
        .iter()
        .filter_map(|l| Some((l["uuid"].as_str()?, l)))
        .collect();
    let is_message = |l: &Value| matches!(l["type"].as_str(), Some("user" | "assistant"));
    let mut on_chain = std::collections::HashSet::new();
    let mut cur = lines
        .iter()
        .rev()
        .find(|l| is_message(l) && l["isSidechain"] != json!(true));
    while let Some(l) = cur {
        let Some(u) = l["uuid"].as_str() else { break };
        if !on_chain.insert(u) {
            break; // a cycle
        }
        cur = l["parentUuid"]
            .as_str()
            .and_then(|p| by_uuid.get(p).copied());
    }
    lines
        .iter()
        .filter(|l| is_message(l))
        .filter(|l| {
            !l["message"]["content"]
                .as_array()
                .is_some_and(|c| !c.is_empty() && c.iter().all(|b| b["type"] == "tool_result"))
        })
        .filter_map(|l| l["uuid"].as_str())
        .filter(|u| !on_chain.contains(u))
        .map(str::to_string)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Issue 15: in every format whose API wants the user first, trim never
    /// empties a conversation unless asked, keeps it valid for its
    /// provider, stays within budget unless flagged, writes a file that
    /// reads back as the same format, and changes nothing the second time.
    #[test]
    fn trim_in_user_first_formats(
        msgs in openai_messages(),
        spec in user_first_spec(),
        format in prop::sample::select(USER_FIRST.to_vec()),
    ) {
        // The user speaks first, as these APIs want.
        let mut msgs = msgs;
        let at = usize::from(msgs.first().is_some_and(|m| m["role"] == "system"));
        if msgs.get(at).is_none_or(|m| m["role"] != "user") {
            msgs.insert(at, json!({"role": "user", "content": "start here"}));
        }
        let tok = tokenizer(Encoding::O200kBase);
        let input = as_format(&msgs, format);
        let mut doc = read_document("in", input.clone(), &ReadOptions::default()).unwrap();
        prop_assert_eq!(doc.source_format, format);
        let provider = Provider::for_format(format);
        let before = doc.conversations[0].clone();
        prop_assert!(validate(&before, format, provider).is_empty(), "{:?}", validate(&before, format, provider));

        let mut p = Pipeline::new();
        p.push(spec.clone());
        let reports = p.run(&mut doc, tok, true);
        let flagged = reports[0].flags.get("over_budget") == Some(&Value::Bool(true));
        let after = &doc.conversations[0];

        // Never empty unless asked.
        let says = |m: &[Message]| m.iter().any(|m| !m.role.is_instruction());
        let asked = spec.max_messages == Some(0) || spec.max_turns == Some(0);
        prop_assert!(asked || says(&after.messages), "nothing left in {}", format);

        // Within budget, unless flagged.
        if let Some(max) = spec.max_tokens {
            let total = tok.count_conversation(after);
            prop_assert!(total <= max || flagged, "{} tokens for a budget of {}", total, max);
        }

        // Written, it reads back as the same format and is valid for its provider.
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        // (A Cline task is told apart from an Anthropic list by its markers,
        // which the trimmed tail may not hold: read it as Cline.)
        let opts = ReadOptions {
            from: (format == Format::Cline).then_some(format),
            ..ReadOptions::default()
        };
        let back = read_document("out", out.clone(), &opts);
        prop_assert!(back.is_ok(), "{:?}", back.err());
        let back = back.unwrap();
        if !says(&after.messages) {
            // Asked for nothing: an empty body tells no format apart.
            return Ok(());
        }
        prop_assert_eq!(back.source_format, format);
        {
            let problems = validate(&back.conversations[0], format, provider);
            prop_assert!(problems.is_empty(), "{:?}\n{}", problems, String::from_utf8_lossy(&out));
        }
        if format == Format::ClaudeCode {
            let text = String::from_utf8(out.clone()).unwrap();
            let problems = chain_problems(&String::from_utf8(input.clone()).unwrap(), &text);
            prop_assert!(problems.is_empty(), "{:?}\n{}", problems, text);
        }

        // Idempotent: the second run writes the same bytes.
        let mut again = back;
        let reports = p.run(&mut again, tok, false);
        prop_assert!(reports[0].changes.is_empty(), "second run changed {:?}", reports[0].changes);
        let mut twice = Vec::new();
        write_document(&again, &mut twice).unwrap();
        prop_assert_eq!(String::from_utf8_lossy(&twice), String::from_utf8_lossy(&out));
    }
}

/// A conversation of only a system message, trimmed with --no-system
/// (LangChain's `include_system=False`), is never emptied in silence
/// (issue 39: `[system]` came back `[]`, exit 0, no warning).
#[test]
fn a_system_only_conversation_is_never_emptied() {
    let doc = r#"{"messages":[{"role":"system","content":"You are a helpful assistant who answers questions about the weather in great detail."}]}"#;
    for args in [
        &["trim", "--no-system", "--max-tokens", "10"][..],
        &[
            "trim",
            "--no-system",
            "--max-tokens",
            "1000",
            "--end-on",
            "assistant",
        ][..],
    ] {
        let out = ctxclean().args(args).write_stdin(doc).assert().success();
        let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(text.contains("helpful assistant"), "{args:?}: {text}");
        assert!(err.contains("warning"), "{args:?}: {err}");
    }
}
