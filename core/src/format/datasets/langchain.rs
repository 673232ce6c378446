//! LangChain message dicts: `messages_to_dict` output
//! (`{"type": "human", "data": {...}}`), the `dumpd` serialized form
//! (`{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`),
//! and bare `model_dump()` objects (`{"type": "human", "content": ...}`).

use serde_json::{Map, Value};

use crate::format::convert::{self, part_type};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::format::openai::{content_value, parse_content};
use crate::transcript::{Content, Fields, Message, MessageData, PartKind, Role, ToolCall};

/// LangChain message dicts.
pub(crate) struct LangChain;

/// The message types LangChain writes.
pub(crate) const TYPES: &[&str] = &[
    "human",
    "ai",
    "system",
    "tool",
    "function",
    "chat",
    "developer",
    "AIMessageChunk",
    "HumanMessageChunk",
];

/// Where a record keeps the message's data, and its LangChain type.
fn locate(rec: &Map<String, Value>) -> Option<(&'static str, String)> {
    if rec.contains_key("lc") {
        let class = rec.get("id")?.as_array()?.last()?.as_str()?;
        let ty = class
            .trim_end_matches("Chunk")
            .trim_end_matches("Message")
            .to_lowercase();
        return Some(("kwargs", ty));
    }
    let ty = rec.get("type")?.as_str()?;
    let ty = ty
        .trim_end_matches("Chunk")
        .trim_end_matches("Message")
        .to_lowercase();
    let ty = match ty.as_str() {
        "aimessage" | "ai" => "ai".to_string(),
        "humanmessage" | "human" => "human".to_string(),
        t => t.to_string(),
    };
    if rec.get("data").is_some_and(Value::is_object) {
        Some(("data", ty))
    } else if rec.contains_key("content") {
        Some(("", ty))
    } else {
        None
    }
}

/// Whether a record looks like a LangChain message.
pub(crate) fn is_record(rec: &Map<String, Value>) -> bool {
    rec.contains_key("lc")
        || (rec.get("data").is_some_and(Value::is_object)
            && rec
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| TYPES.contains(&t)))
        || (rec.contains_key("content")
            && !rec.contains_key("role")
            && rec
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| TYPES.contains(&t)))
}

fn data(rec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    match locate(rec)?.0 {
        "" => Some(rec),
        key => rec.get(key)?.as_object(),
    }
}

impl Dialect for LangChain {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let list = obj.get("messages")?.as_array()?;
        list.first()
            .and_then(Value::as_object)
            .is_some_and(is_record)
            .then_some(&["messages"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &[]
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let (_, ty) =
            locate(rec).ok_or("not a LangChain message: no \"type\" with \"data\", nor \"lc\"")?;
        let d = data(rec).ok_or("a LangChain message has no data")?;
        let role = match ty.as_str() {
            "human" => Role::User,
            "ai" => Role::Assistant,
            "system" => Role::System,
            "developer" => Role::Developer,
            "tool" => Role::Tool,
            "function" => Role::Function,
            "chat" => d
                .get("role")
                .and_then(Value::as_str)
                .and_then(Role::parse)
                .ok_or("a chat message has no known \"role\"")?,
            t => return Err(format!("unknown LangChain message type \"{t}\"")),
        };
        let content = match d.get("content") {
            None => Content::Absent,
            Some(v) => parse_content(v)?,
        };
        let mut calls = Vec::new();
        if let Some(Value::Array(list)) = d.get("tool_calls") {
            for (k, c) in list.iter().enumerate() {
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("a tool call has no \"name\"")?;
                calls.push(ToolCall {
                    id: c.get("id").and_then(Value::as_str).map(str::to_string),
                    name: name.to_string(),
                    arguments: convert::arguments_text(c.get("args").unwrap_or(&Value::Null)),
                    raw: c.clone().into(),
                    // Its place in the list: two calls of one id each
                    // written back to their own.
                    slot: Some(k),
                });
            }
        }
        let s = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(vec![Message::from(MessageData {
            role,
            content,
            tool_calls: (!calls.is_empty()).then_some(calls),
            tool_call_id: s("tool_call_id"),
            name: s("name"),
            fields: rec.clone(),
            origin: None,
            minted: None,
            anchor: None,
        })])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let (key, _) = locate(rec)?;
        let mut d = data(rec)?.clone();
        match content_value(&m.content, d.get("content")) {
            Some(v) => set_if_changed(&mut d, "content", v),
            None => {
                d.shift_remove("content");
            }
        }
        if let Some(Value::Array(list)) = d.get("tool_calls").cloned() {
            let calls = m.calls();
            let by_id = crate::pairs::calls_by_id(calls);
            let by_slot = crate::pairs::calls_by_slot(calls);
            let kept: Vec<Value> = list
                .iter()
                .enumerate()
                .filter_map(|(k, orig)| {
                    let call = *by_slot.get(&k)?;
                    let mut o = orig.as_object()?.clone();
                    if o.get("args").map(convert::arguments_text).as_deref()
                        != Some(call.arguments.as_str())
                    {
                        o.insert("args".into(), convert::arguments_value(&call.arguments));
                    }
                    Some(Value::Object(o))
                })
                .collect();
            if kept.len() != list.len() {
                // Keep the provider's raw copy in step with the calls.
                if let Some(Value::Object(kw)) = d.get_mut("additional_kwargs") {
                    if let Some(Value::Array(raw)) = kw.get_mut("tool_calls") {
                        raw.retain(|c| {
                            c.get("id")
                                .and_then(Value::as_str)
                                .is_some_and(|id| by_id.contains_key(&Some(id)))
                        });
                        if raw.is_empty() {
                            kw.shift_remove("tool_calls");
                        }
                    }
                }
            }
            set_if_changed(&mut d, "tool_calls", Value::Array(kept));
        }
        let mut out = rec.clone();
        if key.is_empty() {
            return Some(d);
        }
        out.insert(key.to_string(), Value::Object(d));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        msgs.iter()
            .map(|m| {
                let index = m.input_index();
                let ty = match m.role {
                    Role::User => "human",
                    Role::Assistant => "ai",
                    Role::System | Role::Developer => "system",
                    Role::Tool => "tool",
                    Role::Function => "function",
                };
                let plain = crate::format::convert::to_openai(m, losses);
                let content = match &plain.content {
                    Content::Absent | Content::Null => Value::from(""),
                    Content::Text(s) => Value::from(s.as_str()),
                    Content::Parts(parts) => Value::Array(
                        parts
                            .iter()
                            .filter(|p| {
                                let keep = !matches!(p.kind, PartKind::Other);
                                if !keep {
                                    losses.push(Loss::at(
                                        index,
                                        format!("{} part", part_type(&p.raw)),
                                        "langchain cannot express it",
                                    ));
                                }
                                keep
                            })
                            .map(|p| Value::clone(&p.raw))
                            .collect(),
                    ),
                };
                let mut d = Map::new();
                d.insert("content".into(), content);
                d.insert("additional_kwargs".into(), Value::Object(Map::new()));
                d.insert("response_metadata".into(), Value::Object(Map::new()));
                d.insert("type".into(), Value::from(ty));
                d.insert("name".into(), m.name.as_deref().map_or(Value::Null, Value::from));
                d.insert("id".into(), Value::Null);
                if m.role == Role::Assistant {
                    let calls: Vec<Value> = m
                        .calls()
                        .iter()
                        .map(|c| {
                            serde_json::json!({"name": c.name, "args": convert::arguments_value(&c.arguments),
                                               "id": c.id, "type": "tool_call"})
                        })
                        .collect();
                    d.insert("tool_calls".into(), Value::Array(calls));
                    d.insert("invalid_tool_calls".into(), Value::Array(Vec::new()));
                }
                if m.role.is_result() {
                    d.insert("tool_call_id".into(), m.tool_call_id.as_deref().map_or(Value::Null, Value::from));
                }
                let mut rec = Map::new();
                rec.insert("type".into(), Value::from(ty));
                rec.insert("data".into(), Value::Object(d));
                Value::Object(rec)
            })
            .collect()
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        let mut extra = Vec::new();
        if let Some(d) = data(&m.fields) {
            for key in ["usage_metadata", "response_metadata"] {
                if d.get(key)
                    .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                {
                    extra.push(key.to_string());
                }
            }
        }
        extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn every_shape_reads_and_round_trips() {
        for text in [
            r#"{"type":"human","data":{"content":"hello","additional_kwargs":{},"response_metadata":{},"type":"human","name":null,"id":null,"example":false}}"#,
            r#"{"type":"ai","data":{"content":"","additional_kwargs":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"plan","arguments":"{\"city\":\"Vienna\"}"}}]},"type":"ai","tool_calls":[{"name":"plan","args":{"city":"Vienna"},"id":"call_1","type":"tool_call"}],"invalid_tool_calls":[]}}"#,
            r#"{"type":"tool","data":{"content":"done","type":"tool","tool_call_id":"call_1","name":"plan","status":"success"}}"#,
            r#"{"lc":1,"type":"constructor","id":["langchain","schema","messages","AIMessage"],"kwargs":{"content":"hi","type":"ai"}}"#,
            r#"{"content":"plain","type":"human","id":"x"}"#,
        ] {
            let rec = obj(text);
            let msgs = LangChain.read_record(&Fields::from(rec.clone())).unwrap();
            assert_eq!(
                LangChain.write_record(&rec, &[&msgs[0]]).unwrap(),
                rec,
                "{text}"
            );
        }
        let ai = obj(
            r#"{"type":"ai","data":{"content":"","tool_calls":[{"name":"plan","args":{"city":"Vienna"},"id":"call_1","type":"tool_call"}]}}"#,
        );
        let m = &LangChain.read_record(&Fields::from(ai.clone())).unwrap()[0];
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.calls()[0].arguments, r#"{"city":"Vienna"}"#);
    }
}
