//! ShareGPT datasets: `{"conversations": [{"from": "human", "value": "..."}], "system": ..., "tools": ...}`,
//! with LLaMA-Factory's tool turns (`function_call`, whose value is a JSON
//! `{"name", "arguments"}`, and `observation`, its result, paired by order).

use serde_json::{Map, Value};

use crate::format::convert;
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Content, Fields, Message, MessageData, Role, ToolCall};

/// ShareGPT datasets.
pub(crate) struct ShareGpt;

fn role_of(from: &str) -> Option<Role> {
    Some(match from {
        "human" | "user" => Role::User,
        "gpt" | "assistant" | "chatgpt" | "bing" | "bard" | "model" => Role::Assistant,
        "system" => Role::System,
        "function_call" => Role::Assistant,
        "observation" | "tool" | "function" => Role::Tool,
        _ => return None,
    })
}

impl Dialect for ShareGpt {
    fn content_key(&self) -> Option<&'static str> {
        Some("value")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let turns = |key: &str| {
            obj.get(key)
                .and_then(Value::as_array)
                .is_some_and(|l| l.is_empty() || l[0].get("from").is_some())
        };
        if turns("conversations") {
            Some(&["conversations"])
        } else if turns("items") {
            Some(&["items"])
        } else {
            None
        }
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["conversations"]
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        match env.get("system") {
            Some(Value::String(s)) => Ok(vec![Message::new(Role::System, s.as_str())]),
            _ => Ok(Vec::new()),
        }
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        match msgs.first() {
            Some(m) => set_if_changed(env, "system", Value::from(m.content.text())),
            None => {
                env.shift_remove("system");
            }
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let from = rec
            .get("from")
            .and_then(Value::as_str)
            .ok_or("a turn has no \"from\"")?;
        let role = role_of(from).ok_or_else(|| format!("unknown speaker \"{from}\""))?;
        let value = match rec.get("value") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(_) => return Err("\"value\" must be a string".into()),
        };
        let mut m = Message::from(MessageData {
            fields: rec.clone(),
            ..MessageData::new(role, value.as_str())
        });
        if from == "function_call" {
            let value: Value = serde_json::from_str(&value)
                .map_err(|e| format!("function_call value is not JSON: {e}"))?;
            // Parallel calls: one turn holding a list of them.
            let (list, single) = match value {
                Value::Array(list) => (list, false),
                call => (vec![call], true),
            };
            let mut calls = Vec::with_capacity(list.len());
            for (k, call) in list.into_iter().enumerate() {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("function_call value has no \"name\"")?
                    .to_string();
                calls.push(ToolCall {
                    id: None,
                    name,
                    arguments: convert::arguments_text(
                        call.get("arguments").unwrap_or(&Value::Null),
                    ),
                    raw: call.into(),
                    slot: (!single).then_some(k),
                });
            }
            m.content = Content::Absent;
            m.tool_calls = Some(calls);
        }
        Ok(vec![m])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let mut out = rec.clone();
        if rec.get("from").and_then(Value::as_str) == Some("function_call") {
            let calls: Vec<Value> = m.calls().iter().map(call_value).collect();
            let list = m.calls().iter().any(|c| c.slot.is_some());
            let same = calls.len() == m.calls().len()
                && calls.iter().zip(m.calls()).all(|(v, c)| *v == *c.raw);
            let original_len = serde_json::from_str::<Value>(rec.get("value")?.as_str()?)
                .ok()
                .map_or(1, |v| v.as_array().map_or(1, Vec::len));
            if !same || calls.len() != original_len {
                let v = match (list, calls.as_slice()) {
                    (false, [one]) => one.clone(),
                    _ => Value::Array(calls),
                };
                out.insert("value".into(), Value::from(serde_json::to_string(&v).ok()?));
            }
        } else {
            let text = crate::format::placeholders::inline_text(&m.content)
                .unwrap_or_else(|| m.content.text());
            set_if_changed(&mut out, "value", Value::from(text));
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let turn = |from: &str, value: String| {
            let mut t = Map::new();
            t.insert("from".into(), Value::from(from));
            t.insert("value".into(), Value::from(value));
            Value::Object(t)
        };
        for m in msgs.iter() {
            let index = m.input_index();
            if m.content.images().next().is_some() {
                losses.push(Loss::at(index, "image", "sharegpt turns are text"));
            }
            let text = m.content.text();
            match m.role {
                Role::System | Role::Developer if out.is_empty() && !env.contains_key("system") => {
                    env.insert("system".into(), Value::from(text));
                }
                Role::System | Role::Developer => out.push(turn("system", text)),
                Role::User => out.push(turn("human", text)),
                Role::Assistant => {
                    // A message that only calls tools has no gpt turn.
                    if !text.is_empty() || !m.has_calls() {
                        out.push(turn("gpt", text));
                    }
                    let calls: Vec<Value> = m
                        .calls()
                        .iter()
                        .map(|c| serde_json::json!({"name": c.name, "arguments": convert::arguments_value(&c.arguments)}))
                        .collect();
                    // Parallel calls stay one turn: a list, as LLaMA-Factory writes them.
                    match calls.as_slice() {
                        [] => {}
                        [one] => out.push(turn("function_call", one.to_string())),
                        _ => out.push(turn("function_call", Value::Array(calls).to_string())),
                    }
                }
                Role::Tool | Role::Function => out.push(turn("observation", text)),
            }
        }
        out
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        crate::format::placeholders::attach_images(conv);
    }
}

/// A call written back: its original object when unchanged.
fn call_value(c: &ToolCall) -> Value {
    let mut call = c.raw.as_object().cloned().unwrap_or_default();
    set_if_changed(&mut call, "name", Value::from(c.name.as_str()));
    if call
        .get("arguments")
        .map(convert::arguments_text)
        .as_deref()
        != Some(c.arguments.as_str())
    {
        call.insert("arguments".into(), convert::arguments_value(&c.arguments));
    }
    Value::Object(call)
}

#[cfg(test)]
mod tests {
    #[test]
    fn tool_turns_pair_by_order() {
        let doc = crate::format::read_document(
            "t",
            br#"[{"conversations":[{"from":"human","value":"recipes?"},{"from":"function_call","value":"{\"name\": \"search\", \"arguments\": {\"q\": \"rice\"}}"},{"from":"observation","value":"{\"recipes\": []}"},{"from":"gpt","value":"none"}],"tools":"[]"}]"#.to_vec(),
            &Default::default(),
        )
        .unwrap();
        assert_eq!(doc.source_format, crate::format::Format::ShareGpt);
        let msgs = &doc.conversations[0].messages;
        assert_eq!(msgs[1].calls()[0].name, "search");
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        let mut out = Vec::new();
        crate::format::write_document(&doc, &mut out).unwrap();
        assert_eq!(out, br#"[{"conversations":[{"from":"human","value":"recipes?"},{"from":"function_call","value":"{\"name\": \"search\", \"arguments\": {\"q\": \"rice\"}}"},{"from":"observation","value":"{\"recipes\": []}"},{"from":"gpt","value":"none"}],"tools":"[]"}]"#);
    }
}
