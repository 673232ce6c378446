//! Evidence: what the model took from its context, read off what it did
//! next.
//!
//! At a model call, the model's next output (its text and its tool calls'
//! arguments) names things: paths, identifiers, URLs, numbers, quoted
//! strings. Those it can only have found in its context are the evidence
//! of that call: the distinctive strings of the output that appear in the
//! request as it came, less those found in what no recipe cleans away (the
//! tool definitions, the system prompt and the latest user message: tool
//! names and argument keys would otherwise be a good part of the evidence,
//! and kept by every recipe). A recipe keeps a string when the cleaned
//! request still holds it, byte for byte, as it is escaped there: once in
//! a JSON string, twice inside a tool call's arguments sent as a string.
//!
//! This measures presence, not understanding: a string kept may still go
//! unread, and a summary that rewords a path loses it though the model may
//! need it no longer.

use crate::transcript::{Conversation, Message};

/// Evidence strings taken from one output, at most.
const MAX_STRINGS: usize = 64;

/// The distinctive strings of `text`, in order of first appearance
/// (duplicates once; at most [`MAX_STRINGS`]).
pub fn strings(text: &str) -> Vec<String> {
    crate::ops::strings::distinctive(text, MAX_STRINGS)
}

/// What a message says, as evidence is looked for in it: its text, and
/// its calls' names and arguments (the strings of arguments that are
/// JSON, decoded: a request may carry them as an object).
pub fn message_text(m: &Message, out: &mut String) {
    out.push_str(&m.content.text());
    for c in m.calls() {
        out.push('\n');
        out.push_str(&c.name);
        out.push('\n');
        match serde_json::from_str::<serde_json::Value>(&c.arguments) {
            Ok(v) => strings_of(&v, out),
            Err(_) => out.push_str(&c.arguments),
        }
    }
    out.push('\n');
}

/// Every string of a JSON value (keys and values), a line each.
fn strings_of(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| strings_of(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(k);
                out.push('\n');
                strings_of(v, out);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// What no recipe removes from a request: its tool definitions, its system
/// prompt (a system message, or the envelope's `system`, `instructions`,
/// `systemInstruction`), and `latest_user`, its latest user message's text.
pub fn fixed_text(conv: &Conversation, latest_user: &str) -> String {
    let mut out = latest_user.to_string();
    for m in conv
        .messages
        .iter()
        .filter(|m| m.role == crate::transcript::Role::System)
    {
        message_text(m, &mut out);
    }
    if let Some(envelope) = &conv.envelope {
        for key in [
            "tools",
            "functions",
            "system",
            "instructions",
            "systemInstruction",
            "system_instruction",
        ] {
            if let Some(v) = envelope.get(key) {
                strings_of(v, &mut out);
            }
        }
    }
    out
}

/// The ways `s` can be written in a JSON body: escaped once (a string of
/// the body), and twice (inside a tool call's arguments sent as a JSON
/// string); one when both are the same.
pub fn written_forms(s: &str) -> Vec<String> {
    let once = escaped(s);
    let twice = escaped(&once);
    if twice == once {
        vec![once]
    } else {
        vec![once, twice]
    }
}

/// A string as serde_json writes it inside a JSON string.
fn escaped(s: &str) -> String {
    let quoted = serde_json::Value::from(s).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Whether a body's text holds evidence string `forms` (see
/// [`written_forms`]) in any of its forms.
pub fn holds(text: &str, forms: &[String]) -> bool {
    forms.iter().any(|f| contains(text, f))
}

/// What a conversation says, every message's text in order.
pub fn conversation_text(conv: &Conversation) -> String {
    let mut out = String::new();
    for m in &conv.messages {
        message_text(m, &mut out);
    }
    out
}

/// The evidence of a call: the strings of `output` (what the model did
/// next) that `context` (the request as it came) holds and `fixed` (what
/// no recipe removes: see [`fixed_text`]) does not.
pub fn of_call(output: &str, context: &str, fixed: &str) -> Vec<String> {
    strings(output)
        .into_iter()
        .filter(|s| !contains(fixed, s) && contains(context, s))
        .collect()
}

/// Whether `text` holds `s`.
pub fn contains(text: &str, s: &str) -> bool {
    memchr::memmem::find(text.as_bytes(), s.as_bytes()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinctive_strings_are_found() {
        let s = strings(
            r#"I'll edit src/lib.rs and tests/cli/main.rs, then call parse_args on port 8787, see https://example.com/a?b=1 and "connection refused"; fooBar too. The end."#,
        );
        for want in [
            "src/lib.rs",
            "tests/cli/main.rs",
            "parse_args",
            "8787",
            "https://example.com/a?b=1",
            "connection refused",
            "fooBar",
        ] {
            assert!(s.iter().any(|x| x == want), "{want} in {s:?}");
        }
        for plain in ["I'll", "edit", "The", "end", "and", "call"] {
            assert!(!s.iter().any(|x| x == plain), "{plain} in {s:?}");
        }
    }

    #[test]
    fn evidence_is_what_the_context_held_and_the_latest_user_message_did_not() {
        let output = "Reading src/config.rs for MAX_RETRIES, then fix_bug in lib/util.py";
        let context = "user: fix_bug please\ntool: src/config.rs:12 MAX_RETRIES = 5\n";
        let latest_user = "fix_bug please";
        let ev = of_call(output, context, latest_user);
        // lib/util.py was never in the context: the model made it up or
        // guessed; fix_bug is the user's own word.
        assert_eq!(ev, ["src/config.rs", "MAX_RETRIES"]);
    }

    #[test]
    fn the_tool_definitions_and_the_system_prompt_are_no_evidence() {
        let body = serde_json::json!({
            "model": "m",
            "system": "Work in /srv/app_root only.",
            "tools": [{"name": "read_file", "input_schema": {"type": "object",
                "properties": {"file_path": {"type": "string"}}}}],
            "messages": [
                {"role": "user", "content": "what is in the config?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                    "name": "read_file", "input": {"file_path": "/srv/app_root/config.toml"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                    "content": "MAX_RETRIES = 5"}]},
            ],
        });
        let doc = crate::inflight::read_request(
            crate::format::Format::Anthropic,
            &serde_json::to_vec(&body).unwrap(),
        )
        .unwrap();
        let conv = &doc.conversations[0];
        let output =
            "read_file again: file_path /srv/app_root/config.toml, MAX_RETRIES, /srv/app_root";
        let fixed = fixed_text(conv, "what is in the config?");
        let ev = of_call(output, &conversation_text(conv), &fixed);
        // The tool's name and argument key are in every request's tool
        // definitions, and the folder in the system prompt: no recipe
        // takes them, so keeping them proves nothing.
        assert_eq!(ev, ["/srv/app_root/config.toml", "MAX_RETRIES"]);
    }

    #[test]
    fn strings_are_matched_as_the_body_escapes_them() {
        let s = r#"echo "done" > C:\out.txt"#;
        let args = serde_json::json!({"command": s}).to_string();
        // OpenAI sends arguments as a string: escaped twice in the body.
        let openai = serde_json::json!({"function": {"arguments": args}}).to_string();
        // Anthropic sends an object: escaped once.
        let anthropic = serde_json::json!({"input": {"command": s}}).to_string();
        let forms = written_forms(s);
        assert!(holds(&openai, &forms) && holds(&anthropic, &forms));
        assert!(!holds(r#"{"a": "echo done"}"#, &forms));
        assert_eq!(written_forms("plain_name"), ["plain_name"]);
    }
}
