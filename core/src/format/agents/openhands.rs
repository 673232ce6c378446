//! OpenHands event streams: a trajectory is a JSON list of events `{id,
//! timestamp, source, message, action | observation, args | content,
//! cause, tool_call_metadata}`; evaluation outputs are JSONL lines
//! `{instance_id, instruction, history: [events], metrics, …}`.
//!
//! - a `message` action is the user's or the agent's message (`args.content`),
//!   a `system` action the system prompt;
//! - an action with `tool_call_metadata` (`run`, `edit`, `read`, `think`,
//!   `finish`, …) is an assistant message calling `function_name`: its
//!   arguments are the model's own (from `model_response`, else `args`), its
//!   text the action's `thought`;
//! - an observation with `tool_call_metadata` answers that call: its
//!   `content` is the result (`extras` hold copies the model never sees);
//! - every other event (recall, agent state changes, …) passes through.
//!
//! What the model sees of a call is `tool_call_metadata.model_response`,
//! so changed arguments are written there; a call removed from an action
//! (its text kept) drops the action's `tool_call_metadata`.

use serde_json::{Map, Value};

use crate::format::convert::arguments_text;
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Content, Fields, Message, MessageData, Role, ToolCall};

/// OpenHands trajectories and evaluation outputs.
pub(crate) struct OpenHands;

/// Whether a record is an OpenHands event.
pub(crate) fn is_event(r: &Map<String, Value>) -> bool {
    r.get("source").is_some_and(Value::is_string)
        && (r.contains_key("action") || r.contains_key("observation"))
}

fn args(r: &Map<String, Value>) -> Option<&Map<String, Value>> {
    r.get("args").and_then(Value::as_object)
}

fn str_of<'a>(m: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    m?.get(key)?.as_str()
}

/// The tool call in `model_response` with this id: what the model wrote.
fn response_call<'a>(meta: &'a Map<String, Value>, id: &str) -> Option<&'a Map<String, Value>> {
    meta.get("model_response")?
        .get("choices")?
        .get(0)?
        .get("message")?
        .get("tool_calls")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
}

/// The arguments of an action's call: the model's own, else the action's
/// `args` without its thought.
fn call_arguments(event: &Map<String, Value>, meta: &Map<String, Value>, id: &str) -> String {
    if let Some(a) = response_call(meta, id)
        .and_then(|c| c.get("function"))
        .and_then(|f| f.get("arguments"))
    {
        return arguments_text(a);
    }
    let mut a = args(event).cloned().unwrap_or_default();
    a.shift_remove("thought");
    arguments_text(&Value::Object(a))
}

fn text(s: Option<&str>) -> Content {
    match s {
        Some(t) if !t.is_empty() => Content::Text(t.to_string()),
        _ => Content::Absent,
    }
}

impl Dialect for OpenHands {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let history = obj.get("history").and_then(Value::as_array)?;
        let events = history
            .iter()
            .filter_map(Value::as_object)
            .take(20)
            .any(is_event);
        (events || history.is_empty() && obj.contains_key("instance_id"))
            .then_some(&["history"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["history"]
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let source = rec.get("source").and_then(Value::as_str).unwrap_or("");
        let meta = rec.get("tool_call_metadata").and_then(Value::as_object);
        let base = |role: Role, content: Content| {
            Message::from(MessageData {
                content,
                fields: rec.clone(),
                ..MessageData::new(role, "")
            })
        };
        if let Some(obs) = rec.get("observation").and_then(Value::as_str) {
            let Some(meta) = meta else {
                return Ok(Vec::new());
            };
            let content = match rec.get("content") {
                Some(Value::String(s)) => Content::Text(s.clone()),
                Some(v) if !v.is_null() => Content::Text(arguments_text(v)),
                _ => Content::Absent,
            };
            let mut m = base(Role::Tool, content);
            m.tool_call_id = meta
                .get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string);
            m.name = meta
                .get("function_name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| Some(obs.to_string()));
            return Ok(vec![m]);
        }
        let action = rec.get("action").and_then(Value::as_str).unwrap_or("");
        let role = match source {
            "user" => Role::User,
            _ => Role::Assistant,
        };
        if let Some(meta) = meta {
            let id = meta
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = meta
                .get("function_name")
                .and_then(Value::as_str)
                .unwrap_or(action)
                .to_string();
            let mut m = base(Role::Assistant, text(str_of(args(rec), "thought")));
            m.tool_calls = Some(vec![ToolCall {
                id: (!id.is_empty()).then(|| id.to_string()),
                name,
                arguments: call_arguments(rec, meta, id),
                raw: Value::Null.into(),
                slot: None,
            }]);
            return Ok(vec![m]);
        }
        Ok(match action {
            "message" => vec![base(
                role,
                text(str_of(args(rec), "content").or(rec.get("message").and_then(Value::as_str))),
            )],
            "system" => vec![base(Role::System, text(str_of(args(rec), "content")))],
            // An action whose call was removed keeps its thought.
            _ if role == Role::Assistant
                && str_of(args(rec), "thought").is_some_and(|t| !t.is_empty()) =>
            {
                vec![base(Role::Assistant, text(str_of(args(rec), "thought")))]
            }
            _ => Vec::new(),
        })
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let mut out = rec.clone();
        if rec.contains_key("observation") {
            let new = m.content.text();
            if rec.get("content").map(arguments_text).as_deref() != Some(new.as_str()) {
                out.insert("content".into(), Value::from(new));
            }
            return Some(out);
        }
        // The text: `args.content` of a message, else the action's thought.
        let key = match rec.get("action").and_then(Value::as_str) {
            Some("message" | "system") => "content",
            _ => "thought",
        };
        let new_text = m.content.text();
        if let Some(Value::Object(a)) = out.get_mut("args") {
            if a.get(key).and_then(Value::as_str).unwrap_or("") != new_text {
                a.insert(key.into(), Value::from(new_text.as_str()));
            }
        }
        if key == "content"
            && rec
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|t| t != new_text)
        {
            out.insert("message".into(), Value::from(new_text));
        }
        match (
            m.calls().first(),
            rec.get("tool_call_metadata").and_then(Value::as_object),
        ) {
            (None, Some(_)) => {
                out.shift_remove("tool_call_metadata");
            }
            (Some(c), Some(meta)) => {
                let id = meta
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if call_arguments(rec, meta, id) != c.arguments {
                    let mut meta = meta.clone();
                    set_response_arguments(&mut meta, id, &c.arguments);
                    out.insert("tool_call_metadata".into(), Value::Object(meta));
                }
            }
            _ => {}
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        msgs.iter()
            .filter_map(|m| {
                let text = m.content.text();
                Some(match m.role {
                    Role::User => serde_json::json!({"source": "user", "message": text, "action": "message", "args": {"content": text}}),
                    Role::System | Role::Developer => serde_json::json!({"source": "agent", "message": text, "action": "system", "args": {"content": text}}),
                    Role::Assistant if !m.has_calls() => serde_json::json!({"source": "agent", "message": text, "action": "message", "args": {"content": text}}),
                    _ => {
                        losses.push(Loss::at(
                            m.input_index(),
                            "new tool message",
                            "openhands events for new tool calls are not written",
                        ));
                        return None;
                    }
                })
            })
            .collect()
    }
}

/// Writes a call's arguments into the model response it came from.
fn set_response_arguments(meta: &mut Map<String, Value>, id: &str, arguments: &str) {
    let calls = meta
        .get_mut("model_response")
        .and_then(|r| r.get_mut("choices"))
        .and_then(|c| c.get_mut(0))
        .and_then(|c| c.get_mut("message"))
        .and_then(|m| m.get_mut("tool_calls"))
        .and_then(Value::as_array_mut);
    let Some(calls) = calls else { return };
    for c in calls.iter_mut() {
        if c.get("id").and_then(Value::as_str) == Some(id) {
            if let Some(Value::Object(f)) = c.get_mut("function") {
                set_if_changed(f, "arguments", Value::from(arguments));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document, Format};
    use crate::transcript::{Content, Role};

    const TRAJ: &str = r#"[{"id":0,"source":"user","message":"Make a 2048 game.","action":"message","args":{"content":"Make a 2048 game.","image_urls":null}},
{"id":1,"source":"environment","message":"","observation":"agent_state_changed","content":"","extras":{"agent_state":"running"}},
{"id":3,"source":"agent","message":"","action":"edit","tool_call_metadata":{"function_name":"str_replace_editor","tool_call_id":"toolu_1","model_response":{"choices":[{"message":{"content":"I'll write it.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"command\": \"create\", \"path\": \"/workspace/game.py\"}","name":"str_replace_editor"},"id":"toolu_1","type":"function"}]}}]},"total_calls_in_response":1},"args":{"path":"/workspace/game.py","thought":"I'll write it."}},
{"id":4,"source":"agent","message":"I edited the file.","cause":3,"observation":"edit","tool_call_metadata":{"function_name":"str_replace_editor","tool_call_id":"toolu_1"},"content":"--- /workspace/game.py\n+++ /workspace/game.py\n+import random","extras":{"path":"/workspace/game.py"}}]"#;

    #[test]
    fn actions_and_observations_are_calls_and_results() {
        let doc = read_document("t.json", TRAJ.into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::OpenHands);
        let msgs = &doc.conversations[0].messages;
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0].role, Role::User);
        assert_eq!(msgs[1].calls()[0].name, "str_replace_editor");
        assert_eq!(
            msgs[1].calls()[0].arguments,
            r#"{"command": "create", "path": "/workspace/game.py"}"#
        );
        assert_eq!(msgs[1].content.text(), "I'll write it.");
        assert_eq!(msgs[2].tool_call_id.as_deref(), Some("toolu_1"));
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), TRAJ);
    }

    #[test]
    fn a_compacted_result_changes_only_its_content() {
        let mut doc = read_document("t.json", TRAJ.into(), &Default::default()).unwrap();
        doc.conversations[0].messages[2].content = Content::Text("[Tool: 3 lines]".into());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[3]["content"], "[Tool: 3 lines]");
        assert_eq!(v[3]["extras"]["path"], "/workspace/game.py");
        assert_eq!(v[1]["observation"], "agent_state_changed");
    }
}
