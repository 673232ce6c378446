//! Branched chat exports: `{messages: [{id, parentMessageId, role, message},
//! …]}`, the roles spelled `"User"` and `"Claude"`, each message's text in
//! `message`, every branch of the chat (edits, regenerations) in one list
//! linked by `parentMessageId` (`null` at the root).
//!
//! The conversation is the chain from the last message back through its
//! parents (see [`crate::format::chain`]); messages on other branches stay
//! in the file as they are. The export takes no new messages: a summary
//! has no place in its tree.

use serde_json::{Map, Value};

use crate::format::dialect::{no_new_records, set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{Fields, Message, MessageData, Record, Role};

/// Branched chat exports.
pub(crate) struct Branched;

/// The keys of a message the typed model carries.
const MODELLED: [&str; 4] = ["id", "parentMessageId", "role", "message"];

/// The role a message's `role` names, any case: `User`, `Claude` (also
/// `Assistant`), `System`.
fn role(name: &str) -> Option<Role> {
    match name.to_ascii_lowercase().as_str() {
        "user" | "human" => Some(Role::User),
        "claude" | "assistant" => Some(Role::Assistant),
        "system" => Some(Role::System),
        _ => None,
    }
}

/// Whether a record is a message of a branched export: an `id`, a
/// `parentMessageId` (a string or `null`), a role of its own spelling and
/// its text in `message`.
pub(crate) fn is_message(r: &Map<String, Value>) -> bool {
    r.get("id").is_some_and(Value::is_string)
        && r.get("parentMessageId")
            .is_some_and(|p| p.is_string() || p.is_null())
        && r.get("message").is_some_and(Value::is_string)
        && r.get("role")
            .and_then(Value::as_str)
            .is_some_and(|n| n != n.to_ascii_lowercase() && role(n).is_some())
}

/// Whether an object is a branched export: a `messages` list of such
/// messages, and none of LibreChat's keys.
pub(crate) fn is_export(obj: &Map<String, Value>) -> bool {
    !obj.contains_key("conversationId")
        && obj
            .get("messages")
            .and_then(Value::as_array)
            .is_some_and(|ms| {
                !ms.is_empty() && ms.iter().all(|m| m.as_object().is_some_and(is_message))
            })
}

impl Dialect for Branched {
    /// Says how many messages the chat's other branches (edits,
    /// regenerations) hold: kept in place and not read.
    fn passed_over_note(
        &self,
        _records: &[Option<&Map<String, Value>>],
        active: &[bool],
    ) -> Option<String> {
        crate::format::chain::edits_note(crate::format::chain::passed(active))
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_export(obj).then_some(&["messages"])
    }

    fn content_key(&self) -> Option<&'static str> {
        Some("message")
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let name = rec.get("role").and_then(Value::as_str).unwrap_or("");
        let Some(role) = role(name) else {
            return Err(format!(
                "unknown role \"{name}\" (expected User, Claude or System)"
            ));
        };
        let Some(text) = rec.get("message").and_then(Value::as_str) else {
            return Err("a message without its text (`message`)".to_string());
        };
        Ok(vec![Message::from(MessageData {
            fields: rec.clone(),
            ..MessageData::new(role, text)
        })])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let mut out = rec.clone();
        set_if_changed(&mut out, "message", Value::from(m.content.text()));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        no_new_records(msgs, losses, "branched chat exports take no new messages")
    }

    fn takes_new_messages(&self, _conv: &crate::transcript::Conversation) -> bool {
        false
    }

    fn picks_active(&self) -> bool {
        true
    }

    /// The chain of the last message; other branches stay in place.
    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        crate::format::chain::active_chain(records, "id", "parentMessageId", is_message)
    }

    /// A removed message's replies hang on its parent.
    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        crate::format::chain::relink(original, out, "id", "parentMessageId");
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        m.fields
            .keys()
            .filter(|k| !MODELLED.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}
