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

use std::collections::HashSet;

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

    /// The context follows the messages: indices renumbered over the
    /// records written (a message added, a summary, is in context), ids
    /// of messages removed taken out.
    fn finish(
        &self,
        env: Option<&mut Map<String, Value>>,
        _original: &[Record],
        out: &mut [OutRecord],
    ) {
        let Some(env) = env else { return };
        if let Some(Value::Array(idx)) = env.get("in_context_message_indices") {
            let old: HashSet<usize> = idx
                .iter()
                .filter_map(Value::as_u64)
                .map(|i| i as usize)
                .collect();
            let new: Vec<Value> = out
                .iter()
                .enumerate()
                .filter(|(_, r)| r.added || r.from.is_some_and(|f| old.contains(&f)))
                .map(|(k, _)| Value::from(k))
                .collect();
            set_if_changed(env, "in_context_message_indices", Value::Array(new));
        }
        if let Some(Value::Array(ids)) = env.get("in_context_message_ids") {
            let written: HashSet<&str> = out
                .iter()
                .filter_map(|r| r.object()?.get("id")?.as_str())
                .collect();
            let kept: Vec<Value> = ids
                .iter()
                .filter(|id| id.as_str().is_some_and(|id| written.contains(id)))
                .cloned()
                .collect();
            set_if_changed(env, "in_context_message_ids", Value::Array(kept));
        }
    }

    /// Only the messages in context are the conversation.
    fn after_read(&self, conv: &mut Conversation) {
        let Some(env) = conv.envelope.as_ref() else {
            return;
        };
        let in_context: Option<HashSet<usize>> = match (
            env.get("in_context_message_indices")
                .and_then(Value::as_array),
            env.get("in_context_message_ids").and_then(Value::as_array),
        ) {
            (Some(idx), _) => Some(
                idx.iter()
                    .filter_map(Value::as_u64)
                    .map(|i| i as usize)
                    .collect(),
            ),
            (None, Some(ids)) => {
                let ids: HashSet<&str> = ids.iter().filter_map(Value::as_str).collect();
                Some(
                    conv.records
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| {
                            r.value
                                .as_ref()
                                .and_then(|v| v.get("id"))
                                .and_then(Value::as_str)
                                .is_some_and(|id| ids.contains(id))
                        })
                        .map(|(k, _)| k)
                        .collect(),
                )
            }
            _ => None,
        };
        let Some(in_context) = in_context else {
            return;
        };
        let before = conv.messages.len();
        conv.messages.retain(|m| {
            m.origin
                .as_ref()
                .and_then(|o| o.record)
                .is_none_or(|r| in_context.contains(&r))
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
