//! OpenAI Agents SDK run states: what `RunState.to_json()` writes to pause a
//! run and resume it later (`{"$schemaVersion", "original_input",
//! "generated_items", "model_responses", "context", …}`). The next model
//! call carries `original_input` (a string, the user's message, or a list
//! of Responses items) followed by the run's `generated_items`, each a run
//! item whose `raw_item` is a Responses item; both are read as the
//! Responses API's items. Everything else (`model_responses`, `context`
//! with its usage, `session_items`, guardrail results, the trace) is the
//! SDK's own and is kept as it came.
//!
//! A `tool_approval_item` asks for approval of a call already in the list:
//! its `raw_item` repeats that call, so it is kept in place, never read as
//! a second one. A removed item also leaves `generated_session_item_indexes`,
//! which runs beside `generated_items`, so the state still resumes. A run
//! state takes no new item (a summary): what the SDK resumes is what it
//! wrote.

use serde_json::{Map, Value};

use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::format::responses::{read_item, write_item};
use crate::transcript::{Conversation, Fields, Message, Record, Role};

/// OpenAI Agents SDK run states.
pub(crate) struct AgentsSdk;

/// Whether an object is a serialized run state.
pub(crate) fn is_run_state(obj: &Map<String, Value>) -> bool {
    obj.contains_key("$schemaVersion")
        && obj.contains_key("original_input")
        && obj.contains_key("generated_items")
}

/// The messages of `original_input`: the user's text, or Responses items,
/// with how many each item gave.
fn input_messages(input: Option<&Value>) -> Result<(Vec<Message>, Vec<usize>), Fault> {
    match input {
        Some(Value::String(s)) => Ok((vec![Message::new(Role::User, s.as_str())], vec![1])),
        Some(Value::Array(items)) => {
            let (mut msgs, mut counts) = (Vec::new(), Vec::new());
            for (k, item) in items.iter().enumerate() {
                let read = match item {
                    Value::Object(o) => read_item(&Fields::from(o.clone()))
                        .map_err(|e| format!("original_input[{k}]: {e}"))?,
                    _ => Vec::new(),
                };
                counts.push(read.len());
                msgs.extend(read);
            }
            Ok((msgs, counts))
        }
        _ => Ok((Vec::new(), Vec::new())),
    }
}

/// `original_input` with the messages that are left: the text as it is
/// now, or the items whose messages are left, each written back.
fn write_input(input: &Value, counts: &[usize], msgs: &[&Message]) -> Value {
    // Each item's messages looked up by their place, the first message of a
    // place kept: one pass over the messages, not one per item (quadratic:
    // `compact-tools` on a run state of 67k messages took 4.0 s, 1.6 s now).
    let mut subs: std::collections::HashMap<usize, &Message> =
        std::collections::HashMap::with_capacity(msgs.len());
    for m in msgs {
        if let Some(o) = &m.origin {
            subs.entry(o.sub).or_insert(*m);
        }
    }
    let by_sub = |sub: usize| subs.get(&sub);
    match input {
        Value::String(_) => match by_sub(0) {
            Some(m) => Value::from(m.content.text()),
            // The user's message removed: no input left to send.
            None => Value::Array(Vec::new()),
        },
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            let mut sub = 0;
            for (item, &n) in items.iter().zip(counts) {
                let left = (sub..sub + n).find_map(by_sub);
                sub += n;
                match (item, left) {
                    _ if n == 0 => out.push(item.clone()),
                    (Value::Object(o), Some(m)) => {
                        out.push(write_item(o, m).map_or_else(|| item.clone(), Value::Object))
                    }
                    _ => {}
                }
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

impl Dialect for AgentsSdk {
    fn content_key(&self) -> Option<&'static str> {
        Some("raw_item")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_run_state(obj).then_some(&["generated_items"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["generated_items"]
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        input_messages(env.get("original_input")).map(|(msgs, _)| msgs)
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        let Some(input) = env.get("original_input") else {
            return;
        };
        let Ok((_, counts)) = input_messages(Some(input)) else {
            return;
        };
        let new = write_input(input, &counts, msgs);
        set_if_changed(env, "original_input", new);
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if rec.get("type").and_then(Value::as_str) == Some("tool_approval_item") {
            return Ok(Vec::new());
        }
        match rec.get("raw_item") {
            Some(Value::Object(item)) => read_item(&Fields::from(item.clone())),
            _ => Ok(Vec::new()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let item = rec.get("raw_item")?.as_object()?;
        let new = write_item(item, msgs.first()?)?;
        let mut out = rec.clone();
        // A tool output item repeats its output beside the raw item.
        if let (Some(Value::String(_)), Some(Value::String(o))) =
            (rec.get("output"), new.get("output"))
        {
            set_if_changed(&mut out, "output", Value::from(o.as_str()));
        }
        set_if_changed(&mut out, "raw_item", Value::Object(new));
        Some(out)
    }

    fn takes_new_messages(&self, _conv: &Conversation) -> bool {
        false
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        crate::format::dialect::no_new_records(
            msgs,
            losses,
            "an Agents SDK run state resumes with the items it wrote",
        )
    }

    /// `generated_session_item_indexes` follows the items written.
    fn finish(
        &self,
        env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        let Some(env) = env else { return };
        let Some(Value::Array(old)) = env.get("generated_session_item_indexes") else {
            return;
        };
        if old.len() != original.len() {
            return;
        }
        let new: Vec<Value> = out
            .iter()
            .filter(|o| o.object().is_some())
            .map(|o| {
                o.from
                    .and_then(|r| old.get(r).cloned())
                    .unwrap_or(Value::Null)
            })
            .collect();
        set_if_changed(env, "generated_session_item_indexes", Value::Array(new));
    }
}
