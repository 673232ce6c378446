//! Qwen Code chat recordings (`~/.qwen/projects/<project>/chats/<session>.jsonl`):
//! one record per line, `{uuid, parentUuid, sessionId, timestamp, type,
//! cwd, version, message}`, where `type` is `user`, `assistant`,
//! `tool_result` or `system` and `message` is a Gemini turn (`{role: "user"
//! | "model", parts: [...]}`, calls as `functionCall`, results as
//! `functionResponse`). Assistant lines carry the call's `usageMetadata`.
//!
//! The turns are read and written as the Gemini dialect reads a turn; every
//! other line (system records: titles, compression markers) passes through
//! in place. The conversation is the `parentUuid` chain to the last message,
//! and removing a line relinks its children, as for Claude Code.

use serde_json::{Map, Value};

use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Conversation, Fields, Message};

/// Qwen Code chat recordings.
pub(crate) struct QwenCode;

/// The Gemini turn of a Qwen Code message line.
fn turn(r: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if !matches!(
        r.get("type").and_then(Value::as_str),
        Some("user" | "assistant" | "tool_result")
    ) {
        return None;
    }
    let m = r.get("message")?.as_object()?;
    m.get("parts").is_some_and(Value::is_array).then_some(m)
}

/// Whether a line is a Qwen Code record.
pub(crate) fn is_line(r: &Map<String, Value>) -> bool {
    r.contains_key("sessionId")
        && r.contains_key("uuid")
        && (turn(r).is_some() || r.get("type").and_then(Value::as_str) == Some("system"))
}

fn is_message_line(r: &Map<String, Value>) -> bool {
    turn(r).is_some()
}

impl Dialect for QwenCode {
    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn content_key(&self) -> Option<&'static str> {
        Some("parts")
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        match turn(rec) {
            Some(t) => crate::format::gemini::read_turn_of(&Fields::from(t.clone())),
            None => Ok(Vec::new()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let t = turn(rec)?;
        let new = crate::format::gemini::write_turn_of(t, msgs)?;
        let mut out = rec.clone();
        set_if_changed(&mut out, "message", Value::Object(new));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let turns =
            crate::format::dialect(crate::format::Format::Gemini).new_records(msgs, env, losses);
        // A line per message takes its uuid from the digest the message was
        // minted with; `finish` links it into the chain.
        let minted: Vec<Option<[u8; 16]>> = if turns.len() == msgs.len() {
            msgs.iter().map(|m| m.minted).collect()
        } else {
            vec![None; turns.len()]
        };
        turns
            .into_iter()
            .zip(minted)
            .map(|(t, minted)| {
                let model = t.get("role").and_then(Value::as_str) == Some("model");
                let mut line = serde_json::json!({
                    "type": if model { "assistant" } else { "user" },
                    "message": t,
                });
                if let Some(d) = minted {
                    line[crate::format::claude_code::MINTED] =
                        Value::from(crate::format::claude_code::uuid_of(&d));
                }
                line
            })
            .collect()
    }

    fn picks_active(&self) -> bool {
        true
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        crate::format::chain::active_chain(records, "uuid", "parentUuid", is_message_line)
    }

    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[crate::transcript::Record],
        out: &mut [crate::format::dialect::OutRecord],
    ) {
        crate::format::chain::relink(original, out, "uuid", "parentUuid");
        crate::format::chain::keep_leaf_last(original, out, "uuid", is_message_line);
        // New lines (a summary) join the chain with the session's fields.
        crate::format::claude_code::link_new_lines(out);
    }

    /// Says how many message lines other branches of the session's tree
    /// hold: kept in place and not read.
    fn passed_over_note(
        &self,
        _records: &[Option<&Map<String, Value>>],
        active: &[bool],
    ) -> Option<String> {
        let why = "another branch of the session's tree";
        crate::format::chain::passed_note(active, "message line", why)
    }

    fn after_read(&self, conv: &mut Conversation) {
        let compressions: Vec<usize> = conv
            .records
            .iter()
            .filter(|r| {
                r.value.as_ref().is_some_and(|v| {
                    v.get("subtype").and_then(Value::as_str) == Some("chat_compression")
                })
            })
            .map(|r| r.line)
            .collect();
        if let Some(line) = compressions.last() {
            conv.notes.push(format!(
                "a chat compression is recorded at line {line}: Qwen Code sent a summary in place of the history before it, which the recording keeps and ctxclean reads whole"
            ));
        }
    }
}
