//! Letta agent files (`.af`): an agent's state, its messages among it.
//! Older files are the agent itself (`{agent_type, core_memory, messages,
//! in_context_message_indices, tool_rules, …}`); newer ones hold it under
//! `agents` (`{agents: [{…, messages, in_context_message_ids}], blocks,
//! tools, …}`). Messages are OpenAI-shaped (`role`, `content` parts,
//! `tool_calls`, `tool_call_id`) and read as OpenAI's are.
//!
//! What the agent's next call carries is the messages in context
//! (`in_context_message_indices`, or `in_context_message_ids`): the others
//! (evicted to recall memory) stay in the file as they are and are not read.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{Conversation, Fields, Message, Record};

/// Letta agent files.
pub(crate) struct Letta;

/// Whether an object is a Letta agent (with its messages).
fn is_agent_state(obj: &Map<String, Value>) -> bool {
    obj.get("messages").is_some_and(Value::is_array)
        && (obj.contains_key("in_context_message_indices")
            || obj.contains_key("in_context_message_ids"))
}

/// Whether an object is a Letta agent file, of either generation.
pub(crate) fn is_agent_file(obj: &Map<String, Value>) -> bool {
    is_agent_state(obj)
        || obj
            .get("agents")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().filter_map(Value::as_object).any(is_agent_state))
}

fn openai() -> &'static dyn Dialect {
    crate::format::dialect(crate::format::Format::OpenAi)
}

impl Dialect for Letta {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_agent_state(obj).then_some(&["messages"])
    }

    fn conversations_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        (!is_agent_state(obj) && is_agent_file(obj)).then_some(&["agents"])
    }

    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        openai().read_record(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        openai().write_record(rec, msgs)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        openai().new_records(msgs, env, losses)
    }

    fn untouched(&self, rec: &Fields, msgs: &[&Message]) -> bool {
        openai().untouched(rec, msgs)
    }

    fn seal(&self, rec: &Map<String, Value>, msgs: &mut [Message]) {
        openai().seal(rec, msgs)
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        openai().extra_keys(m)
    }

    /// Ids of messages removed are taken out of the context, in its order;
    /// a message added (a summary) is given an id of its own, which
    /// [`Dialect::order_context`] puts in the context where it stands.
    fn finish(
        &self,
        env: Option<&mut Map<String, Value>>,
        _original: &[Record],
        out: &mut [OutRecord],
    ) {
        let Some(env) = env else { return };
        let Some(Value::Array(ids)) = env.get("in_context_message_ids") else {
            return;
        };
        let written: HashSet<String> = out
            .iter()
            .filter_map(|r| Some(r.object()?.get("id")?.as_str()?.to_string()))
            .collect();
        let kept: Vec<Value> = ids
            .iter()
            .filter(|id| id.as_str().is_some_and(|id| written.contains(id)))
            .cloned()
            .collect();
        set_if_changed(env, "in_context_message_ids", Value::Array(kept));
        let mut n = 0;
        for r in out.iter_mut().filter(|r| r.added) {
            let Some(mut obj) = r.object().filter(|o| !o.contains_key("id")).cloned() else {
                continue;
            };
            let id = loop {
                n += 1;
                let id = format!("message-ctxclean-{n}");
                if !written.contains(&id) {
                    break id;
                }
            };
            obj.insert("id".into(), Value::from(id));
            r.set(Value::Object(obj));
        }
    }

    /// The messages list keeps the order the agent made them in; the
    /// context's order is `in_context_message_indices`.
    fn storage_order(&self) -> bool {
        true
    }

    /// The indices (or ids) follow the messages: each message's record where
    /// it was written, in the order of the conversation (a message added, a
    /// summary, is in context where it stands).
    fn order_context(
        &self,
        env: Option<&mut Map<String, Value>>,
        conv: &Conversation,
        out: &[OutRecord],
    ) {
        let Some(env) = env else { return };
        // Every record written where it was read, none added: the context
        // is as it came (indices it held of no message included).
        let in_place = out.len() == conv.records.len()
            && out.iter().enumerate().all(|(k, r)| r.from == Some(k));
        if in_place {
            return;
        }
        if env
            .get("in_context_message_indices")
            .is_some_and(Value::is_array)
        {
            let indices = context_indices(conv, out);
            set_if_changed(env, "in_context_message_indices", Value::Array(indices));
        } else if env
            .get("in_context_message_ids")
            .is_some_and(Value::is_array)
        {
            let ids = context_indices(conv, out)
                .iter()
                .filter_map(|k| out[k.as_u64()? as usize].object()?.get("id").cloned())
                .collect();
            set_if_changed(env, "in_context_message_ids", Value::Array(ids));
        }
    }

    /// Only the messages in context are the conversation, in the context's
    /// order.
    fn after_read(&self, conv: &mut Conversation) {
        let Some(in_context) = conv
            .envelope
            .as_ref()
            .and_then(|env| context(env, &conv.records))
        else {
            return;
        };
        // Where each record stands in the context (the first time, were
        // one listed twice).
        let mut position: HashMap<usize, usize> = HashMap::new();
        for (k, r) in in_context.iter().enumerate() {
            position.entry(*r).or_insert(k);
        }
        let before = conv.messages.len();
        conv.messages.retain(|m| {
            m.origin
                .as_ref()
                .and_then(|o| o.record)
                .is_none_or(|r| position.contains_key(&r))
        });
        // Stable: a record's messages keep their order.
        conv.messages.sort_by_key(|m| {
            m.origin
                .as_ref()
                .and_then(|o| o.record)
                .and_then(|r| position.get(&r).copied())
                .unwrap_or(0)
        });
        let out = before - conv.messages.len();
        if out > 0 {
            conv.notes.push(format!(
                "{out} {} not in the agent's context (in_context_message_indices): kept in the file as {} and not read",
                if out == 1 { "message is" } else { "messages are" },
                if out == 1 { "it is" } else { "they are" },
            ));
        }
    }
}

/// The records in the agent's context, in its order:
/// `in_context_message_indices`, else the records of
/// `in_context_message_ids`.
fn context(env: &Map<String, Value>, records: &[Record]) -> Option<Vec<usize>> {
    if let Some(idx) = env
        .get("in_context_message_indices")
        .and_then(Value::as_array)
    {
        return Some(
            idx.iter()
                .filter_map(Value::as_u64)
                .map(|i| i as usize)
                .collect(),
        );
    }
    let ids = env.get("in_context_message_ids")?.as_array()?;
    let record_of: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(k, r)| Some((r.value.as_ref()?.get("id")?.as_str()?, k)))
        .collect();
    Some(
        ids.iter()
            .filter_map(|id| record_of.get(id.as_str()?).copied())
            .collect(),
    )
}

/// The context's indices after writing: for each message in the
/// conversation's order, the index its record was written at, once per
/// record. A new message's record is the next new one written.
fn context_indices(conv: &Conversation, out: &[OutRecord]) -> Vec<Value> {
    let at: HashMap<usize, usize> = out
        .iter()
        .enumerate()
        .filter_map(|(k, r)| Some((r.from?, k)))
        .collect();
    let mut added = out
        .iter()
        .enumerate()
        .filter(|(_, r)| r.added)
        .map(|(k, _)| k);
    let mut seen = HashSet::new();
    let mut indices = Vec::new();
    for m in &conv.messages {
        let k = match m.origin.as_ref() {
            Some(o) => o.record.and_then(|r| at.get(&r).copied()),
            None => added.next(),
        };
        if let Some(k) = k.filter(|k| seen.insert(*k)) {
            indices.push(Value::from(k));
        }
    }
    // New records no message was matched to (one message written as
    // several) are in context too, last.
    indices.extend(added.filter(|k| seen.insert(*k)).map(Value::from));
    indices
}
