//! The seam every format implements: how its records map to messages and back.
//!
//! A conversation's input is a list of *records* (the elements of its
//! `messages` list, or its JSONL lines) inside an optional *envelope* (the
//! object holding the list, with `model`, `tools`, a top-level `system`, …).
//! A dialect reads each record into zero or more messages, and writes a
//! record back from the messages read from it that survive. A record that
//! no operation touched must come back equal to itself; the generic writer
//! then writes the record's original text.

use serde_json::{Map, Value};

use crate::transcript::{Conversation, Fields, Message, Record, Role};

/// Why a record is not valid in a dialect.
pub(crate) type Fault = String;

/// Something a target format cannot express, found while converting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loss {
    /// The message's position in the input; `None` for the request as a
    /// whole (its tools, parameters, fields).
    pub index: Option<usize>,
    /// What was lost, as a countable noun: `thinking part`, `tool call`,
    /// `image`, `field`.
    pub what: String,
    /// Why, in the target's terms: `openai cannot express it`.
    pub reason: String,
}

impl Loss {
    /// A loss at a message: its place in the input, or `None` for one an
    /// operation added (said as the conversation's, not as another
    /// message's).
    pub fn at(
        index: impl Into<Option<usize>>,
        what: impl Into<String>,
        reason: impl Into<String>,
    ) -> Loss {
        Loss {
            index: index.into(),
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// A loss of the request as a whole.
    pub fn request(what: impl Into<String>, reason: impl Into<String>) -> Loss {
        Loss {
            index: None,
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// The loss in words: `thinking part lost: openai cannot express it`.
    pub fn describe(&self) -> String {
        format!("{} lost: {}", self.what, self.reason)
    }
}

/// A record on its way out: its value, and its original text when it is
/// exactly as it was read.
#[derive(Clone, Debug)]
pub(crate) struct OutRecord {
    /// The record's value; `None` for a line kept as raw text, or for a
    /// record written as it was read (`kept`). Shared with the memo of
    /// records rewritten (see `format::rewritten`) until changed.
    pub(crate) value: Option<std::sync::Arc<Value>>,
    /// A record exactly as it was read, shared with the conversation rather
    /// than copied (read it with [`OutRecord::object`]).
    pub(crate) kept: Option<Fields>,
    /// The original text, written instead of `value` while this is set.
    pub(crate) text: Option<crate::transcript::Line>,
    /// Whether the record differs from the input.
    pub(crate) changed: bool,
    /// Whether the record is new: written for a message an operation added.
    pub(crate) added: bool,
    /// The input record it is, as read or rewritten; `None` for a new one.
    pub(crate) from: Option<usize>,
    /// `value` as `serde_json` writes it compactly, when known (a record
    /// of a request rewritten before): written in its place where no
    /// number is to be spelled back as the input spelled it.
    pub(crate) written: Option<std::sync::Arc<str>>,
}

impl OutRecord {
    /// The record's object: the value built for it, or the object read.
    pub(crate) fn object(&self) -> Option<&Map<String, Value>> {
        match (&self.value, &self.kept) {
            (Some(v), _) => v.as_object(),
            (None, Some(f)) => Some(f),
            (None, None) => None,
        }
    }

    /// A record written anew: changed, or `added` for a message an
    /// operation added.
    pub(crate) fn built(value: Value, added: bool) -> OutRecord {
        OutRecord::built_shared(std::sync::Arc::new(value), added)
    }

    /// [`OutRecord::built`], of a value shared with others.
    pub(crate) fn built_shared(value: std::sync::Arc<Value>, added: bool) -> OutRecord {
        OutRecord {
            value: Some(value),
            kept: None,
            text: None,
            changed: true,
            added,
            from: None,
            written: None,
        }
    }

    /// Replaces the value, forgetting the original text.
    pub(crate) fn set(&mut self, value: Value) {
        self.value = Some(std::sync::Arc::new(value));
        self.kept = None;
        self.text = None;
        self.written = None;
        self.changed = true;
    }
    /// Takes the record out of a document's list (a record of a JSON
    /// document; a JSONL line is written from its text): for a format's
    /// last pass, a record the messages written leave without a purpose.
    pub(crate) fn remove(&mut self) {
        self.value = None;
        self.kept = None;
        self.text = None;
        self.written = None;
        self.changed = true;
    }
}

/// One transcript format, as far as reading and writing records goes.
pub(crate) trait Dialect: Sync {
    /// The path of the records list inside a conversation object, if the
    /// object is a conversation of this format. An empty path means the
    /// messages all live in the envelope (ChatGPT's `mapping` tree).
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]>;

    /// The key of an object whose values are this format's records, each
    /// under its own key (a ChatGPT `mapping` of nodes): a conversation
    /// whose [`Dialect::records_path`] is empty is then read one record at
    /// a time, each held as its span of the text, rather than parsed whole
    /// (see [`Dialect::keyed_branch`]). `None`: records are in lists.
    fn keyed_records(&self) -> Option<&'static str> {
        None
    }

    /// For keyed records (see [`Dialect::keyed_records`]), given the
    /// conversation's envelope (the object left `null` there) and each
    /// record's key and text: the positions of the records that hold the
    /// conversation, in order, and notes on what reading had to decide.
    /// `None` when the conversation cannot be read record by record (its
    /// messages are not in the records' order): it is then parsed whole.
    fn keyed_branch(
        &self,
        _env: &Map<String, Value>,
        _records: &[(String, &str)],
    ) -> Option<(Vec<usize>, Vec<String>)> {
        None
    }

    /// The path of a list of conversation objects inside a wrapping object
    /// (Grok exports hold their conversations under `conversations`).
    fn conversations_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    /// Where [`Dialect::new_records`] puts the records in a new envelope; an
    /// empty path writes a bare list.
    fn new_path(&self) -> &'static [&'static str] {
        &["messages"]
    }

    /// [`Dialect::read_envelope`], and notes on what reading them had to
    /// decide (a recursive LibreChat export's other branches), told where
    /// they are found rather than by a second walk of the envelope.
    fn read_envelope_noted(
        &self,
        env: &Map<String, Value>,
    ) -> Result<(Vec<Message>, Vec<String>), Fault> {
        Ok((self.read_envelope(env)?, Vec::new()))
    }

    /// Messages held in the envelope (system prompts), read before the records.
    fn read_envelope(&self, _env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        Ok(Vec::new())
    }

    /// Puts the surviving envelope messages back into the envelope.
    fn write_envelope(&self, _env: &mut Map<String, Value>, _msgs: &[&Message]) {}

    /// The messages of one record; none for a record that holds no message
    /// (it is then written back in place, untouched).
    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault>;

    /// The record rebuilt from the messages read from it that survive, in
    /// order (never empty); `None` drops the record.
    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>>;

    /// Whether the messages read from `rec` would be written back as `rec`
    /// exactly, told without rebuilding it: [`Dialect::write_record`] would
    /// give `rec`. `false` means "not known": the record is rebuilt and
    /// compared. A dialect answers `true` only when it is sure.
    fn untouched(&self, _rec: &Fields, _msgs: &[&Message]) -> bool {
        false
    }

    /// Seals the messages just read from `rec`, parsed (see
    /// [`crate::transcript::Origin::seal`]), when they say exactly what it
    /// says; [`Dialect::untouched`] then compares digests instead of
    /// parsing the record again. The default seals nothing.
    fn seal(&self, _rec: &Map<String, Value>, _msgs: &mut [Message]) {}

    /// Records for messages that were not read from a record of this format:
    /// added by an operation, or converted from another format. System
    /// messages may go into the envelope instead. What the format cannot
    /// express is reported in `losses`.
    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value>;

    /// [`Dialect::new_records`] of a request's messages as their texts, as
    /// `serde_json` writes them compactly, for a format whose records
    /// follow each from its message alone and touch no envelope; `None`
    /// for the others.
    fn new_record_texts(
        &self,
        _msgs: &[&Message],
        _losses: &mut Vec<Loss>,
    ) -> Option<Vec<std::sync::Arc<str>>> {
        None
    }

    /// The records that are the agent's compactions (where the next call
    /// starts from a summary), for an agent's log that has them.
    fn compaction(&self) -> Option<IsRecord> {
        None
    }

    /// A record whose messages were all removed, when it must stay as a
    /// marker (a Codex `compacted` line, whose history emptied is still
    /// where the next call starts); `None` drops it. Given the record as
    /// read, so that a format with no such record never parses the ones
    /// it drops.
    fn emptied(&self, _rec: &Fields) -> Option<Map<String, Value>> {
        None
    }

    /// Whether a conversation of this format can take messages that were
    /// not read from it (a summary): exports kept as message trees and
    /// preference rows cannot, so an operation that would add one leaves
    /// the conversation as it is rather than lose what it replaces.
    fn takes_new_messages(&self, _conv: &crate::transcript::Conversation) -> bool {
        true
    }

    /// Whether [`Dialect::active`] looks at the records: then a document's
    /// records are all parsed before any is read.
    fn picks_active(&self) -> bool {
        false
    }

    /// Which records hold the conversation, when not all of them do (Claude
    /// Code: the lines along the `parentUuid` chain to the last message,
    /// not branches abandoned by a rewind). Records left out are kept in
    /// place, untouched. `None`: all of them.
    fn active(&self, _records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        None
    }

    /// The key that holds a message's content in this format, when a
    /// conversation in which no message has content cannot be this format
    /// as it stands (`{"messages": [{"role": "user", "text": "…"}]}` is not
    /// an empty OpenAI conversation but something else). `None`: logs whose
    /// lines may hold usage only.
    fn content_key(&self) -> Option<&'static str> {
        None
    }

    /// A last pass over a conversation once all its records are read, for
    /// what one record alone cannot tell: pairing results kept as text with
    /// the calls before them (Cline), splitting a result that answers
    /// several calls (LLaMA-Factory), and notes on what reading had to
    /// decide (a dangling `current_node`). Messages may be split or joined
    /// as long as each keeps the origin of the record it came from; the
    /// reader renumbers their positions afterwards.
    fn after_read(&self, _conv: &mut crate::transcript::Conversation) {}

    /// The note for the records [`Dialect::active`] passes over (`false`
    /// in `active`: kept in place, not read), told by the reader from the
    /// mask it reads by, so that no format walks its chain a second time to
    /// say it; `None` where there is nothing to say, or where the format
    /// says it otherwise (a compaction's lines are noted in
    /// [`Dialect::after_read`]).
    fn passed_over_note(
        &self,
        _records: &[Option<&Map<String, Value>>],
        _active: &[bool],
    ) -> Option<String> {
        None
    }

    /// Messages of a conversation that are an alternative to the rest, not
    /// part of it when it is converted to another format (the rejected
    /// completion of a preference row), with the reason told as a loss.
    fn alternatives(&self, _conv: &crate::transcript::Conversation) -> Vec<(usize, String)> {
        Vec::new()
    }

    /// The keys of a message's record that the typed model does not carry
    /// over to another format.
    fn extra_keys(&self, _m: &Message) -> Vec<String> {
        Vec::new()
    }

    /// A last pass over the written records (Claude Code relinks `parentUuid`
    /// over removed lines; Open WebUI mirrors its message tree). Records
    /// written as read are shared, not copied: read every record with
    /// [`OutRecord::object`], and change one with [`OutRecord::set`].
    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        _original: &[Record],
        _out: &mut [OutRecord],
    ) {
    }

    /// After [`Dialect::finish`], for a format whose file itself picks the
    /// branch of its tree that is the conversation (LibreChat: the newest
    /// message's): a loss when the written file picks another branch than
    /// the one `conv` kept (a `trim --strategy first` that removed the end
    /// of the newest branch leaves another branch's leaf the newest).
    fn branch_moved(
        &self,
        _env: Option<&Map<String, Value>>,
        _out: &[OutRecord],
        _conv: &Conversation,
    ) -> Option<Loss> {
        None
    }

    /// Whether records are written back in the order they were read,
    /// whatever the order of the messages: the file keeps its records in
    /// the order they were made, and the order of the context elsewhere
    /// (Letta's `in_context_message_indices`), set by
    /// [`Dialect::order_context`]. New records go after the others.
    fn storage_order(&self) -> bool {
        false
    }

    /// For a format in storage order, after [`Dialect::finish`]: the order
    /// of the context, from the order of `conv`'s messages and the records
    /// they were written to.
    fn order_context(
        &self,
        _env: Option<&mut Map<String, Value>>,
        _conv: &Conversation,
        _out: &[OutRecord],
    ) {
    }
}

/// A system prompt an operation added, in a log that has no line for one
/// (pi's, Droid's, Cursor's transcripts): taken out of `env` and sent as the
/// first user turn, `line` making the record of that Anthropic message.
pub(crate) fn system_as_first_line(
    env: &mut Map<String, Value>,
    out: &mut Vec<Value>,
    line: impl Fn(Value) -> Value,
) {
    if let Some(system) = env.shift_remove("system") {
        let text = match system {
            Value::String(s) => s,
            other => other.to_string(),
        };
        let message =
            serde_json::json!({"role": "user", "content": [{"type": "text", "text": text}]});
        out.insert(0, line(message));
    }
}

/// The records for new messages of a format that takes none (an export
/// kept as a tree, a run state): none, each message's loss said with why.
pub(crate) fn no_new_records(msgs: &[&Message], losses: &mut Vec<Loss>, why: &str) -> Vec<Value> {
    for m in msgs.iter() {
        losses.push(Loss::at(m.input_index(), "new message", why));
    }
    Vec::new()
}

/// The `role` of a message of a format whose messages are `user` or
/// `assistant` only (`what`: the format's messages, for the error).
pub(crate) fn user_or_assistant(rec: &Fields, what: &str) -> Result<Role, Fault> {
    match rec.get("role").and_then(Value::as_str) {
        Some("user") => Ok(Role::User),
        Some("assistant") => Ok(Role::Assistant),
        Some(r) => Err(format!(
            "unknown role \"{r}\" ({what} messages are user or assistant)"
        )),
        None => Err("message has no \"role\"".into()),
    }
}

/// Part `k` of a list whose parts are typed (`{"type": "text", "text"}`,
/// an image of type `image`, anything else kept as it is), in its slot;
/// an image's URL, data URL or base64 is found by [`image_url`].
pub(crate) fn typed_part(p: &Value, k: usize, image: &str) -> crate::transcript::Part {
    use crate::transcript::{Image, PartKind};
    let kind = match p.get("type").and_then(Value::as_str) {
        Some("text") => PartKind::Text(p.get("text").and_then(Value::as_str).unwrap_or("").into()),
        Some(t) if t == image => image_url(p).map_or(PartKind::Other, |url| {
            PartKind::Image(Image::from_url(&url))
        }),
        _ => PartKind::Other,
    };
    crate::transcript::Part {
        kind,
        raw: p.clone().into(),
        slot: Some(k),
    }
}

/// The `role` of a message of a format whose messages are `system`,
/// `user`, `assistant` or `tool` (`what`: the format's messages, for the
/// error).
pub(crate) fn four_roles(m: &Map<String, Value>, what: &str) -> Result<Role, Fault> {
    match m.get("role").and_then(Value::as_str) {
        Some("system") => Ok(Role::System),
        Some("user") => Ok(Role::User),
        Some("assistant") => Ok(Role::Assistant),
        Some("tool") => Ok(Role::Tool),
        Some(r) => Err(format!(
            "unknown role \"{r}\" ({what} messages are system, user, assistant or tool)"
        )),
        None => Err("a message has no \"role\"".into()),
    }
}

/// The role word of a format whose messages are `user` or `assistant`
/// only: what is not the assistant's is the user's.
pub(crate) fn user_or_assistant_word(role: Role) -> &'static str {
    if role == Role::Assistant {
        "assistant"
    } else {
        "user"
    }
}

/// The role word of a message a format of [`four_roles`] writes from
/// text: system (a developer's message too), assistant, else user.
pub(crate) fn four_roles_word(role: Role) -> &'static str {
    match role {
        Role::System | Role::Developer => "system",
        Role::Assistant => "assistant",
        _ => "user",
    }
}

/// The `id` of the envelope's `session` object (a session put together
/// from a database keeps its row there), for the rows an operation adds.
pub(crate) fn session_id(env: &Map<String, Value>) -> Value {
    env.get("session")
        .and_then(|s| s.get("id"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Which records hold the conversation when it starts at record `from` (a
/// compaction's or a summary's): for [`Dialect::active`].
pub(crate) fn active_from(from: Option<usize>, records: usize) -> Option<Vec<bool>> {
    let from = from?;
    Some((0..records).map(|i| i >= from).collect())
}

/// Where a conversation starts past its first record, by `boundary` over
/// its records (for the note [`Dialect::after_read`] writes about what
/// precedes it).
pub(crate) fn start_past_first(
    conv: &crate::transcript::Conversation,
    boundary: impl Fn(&[Option<&Map<String, Value>>]) -> Option<usize>,
) -> Option<usize> {
    let records: Vec<Option<&Map<String, Value>>> =
        conv.records.iter().map(|r| r.value.as_deref()).collect();
    boundary(&records).filter(|&b| b > 0)
}

/// Where each tool result of a record goes back: the blocks (or parts)
/// that hold results, by the id of the call each answers, in order. The
/// messages read from a record come in the order of its blocks, so the
/// k-th result with an id takes the k-th block with it: two results with
/// the same id (a client's bug, which `validate` names) each keep their
/// own block and place. The first block with the id, for both, moved the
/// second before the blocks between them, even through `convert` with
/// nothing changed; the last one lost a result (Crush).
pub(crate) struct ResultSlots<'a>(crate::memo::FastMap<&'a str, std::collections::VecDeque<usize>>);

impl<'a> ResultSlots<'a> {
    /// From each result block's call id and index, in order.
    pub(crate) fn new(blocks: impl Iterator<Item = (&'a str, usize)>) -> ResultSlots<'a> {
        let mut by_id: crate::memo::FastMap<&str, std::collections::VecDeque<usize>> =
            crate::memo::FastMap::default();
        for (id, k) in blocks {
            by_id.entry(id).or_default().push_back(k);
        }
        ResultSlots(by_id)
    }

    /// The block of the next result answering `id`; `None` when no block
    /// with it is left (a result an operation added).
    pub(crate) fn take(&mut self, id: Option<&str>) -> Option<usize> {
        self.0.get_mut(id?)?.pop_front()
    }

    /// [`ResultSlots::take`] for a result that may have come from any of
    /// the blocks with its id: the first that `own` says it came from, else
    /// the next. Where an operation took the first of two results of one
    /// id, the second goes back to its own block, not to the first's place
    /// (before the blocks between them). Results come in the order of their
    /// blocks, so the blocks passed over are those of results taken: they
    /// go, and each is looked at once, however many results share an id.
    pub(crate) fn take_own(
        &mut self,
        id: Option<&str>,
        own: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let slots = self.0.get_mut(id?)?;
        if slots.len() > 1 {
            if let Some(at) = slots.iter().position(|&k| own(k)) {
                slots.drain(..at);
            }
        }
        slots.pop_front()
    }
}

/// Which result each call of a record's messages writes back into its own
/// item, for the formats that keep a call's result inside it (Open WebUI's
/// `<details>` blocks, LibreChat's `tool_call` parts): per message, per
/// call, the index of its result in `msgs`.
///
/// With as many calls and results as the record held when read (`read`),
/// the k-th call of an id takes the k-th result of it, and a call read
/// without a result (`had_result` false) takes none: two items of one id
/// (a model's bug, which `validate` names) keep their own. Once an
/// operation took calls or results, each call takes the result the
/// conversation pairs with it (`Pairing`), which is what a reader of the
/// written record sees: where the pairs' repair stripped the first of two
/// calls of an id, the result paired with the second goes with it.
pub(crate) fn embedded_answers(
    msgs: &[&Message],
    read: (usize, usize),
    had_result: impl Fn(&crate::transcript::ToolCall) -> bool,
) -> Vec<Vec<Option<usize>>> {
    let calls: usize = msgs.iter().map(|m| m.calls().len()).sum();
    let results = || msgs.iter().enumerate().filter(|(_, m)| m.role.is_result());
    if (calls, results().count()) != read {
        let pairing = crate::pairs::Pairing::new(msgs);
        let answer = |message, call| pairing.answer(crate::pairs::CallRef { message, call });
        return (msgs.iter().enumerate())
            .map(|(i, m)| (0..m.calls().len()).map(|c| answer(i, c)).collect())
            .collect();
    }
    let mut by_id =
        ResultSlots::new(results().filter_map(|(k, m)| Some((m.tool_call_id.as_deref()?, k))));
    let mut idless = results()
        .filter(|(_, m)| m.tool_call_id.is_none())
        .map(|(k, _)| k);
    (msgs.iter())
        .map(|m| {
            (m.calls().iter())
                .map(|c| match (had_result(c), &c.id) {
                    (false, _) => None,
                    (true, Some(id)) => by_id.take(Some(id)),
                    (true, None) => idless.next(),
                })
                .collect()
        })
        .collect()
}

/// Sets `key` in `map` only when the value differs, so an unchanged record
/// stays equal to itself.
pub(crate) fn set_if_changed(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key) != Some(&value) {
        map.insert(key.to_string(), value);
    }
}

/// A test of a record (a compaction, a message line).
pub(crate) type IsRecord = fn(&Map<String, Value>) -> bool;

/// After a compaction an agent's next call carries the summary and what
/// follows: says, as a note, how many of the message lines (`is_line`)
/// before the last compaction (`is_boundary`) were therefore not read. They
/// stay in the file as they are.
pub(crate) fn compaction_note(
    conv: &mut crate::transcript::Conversation,
    is_boundary: fn(&Map<String, Value>) -> bool,
    is_line: fn(&Map<String, Value>) -> bool,
    what: &str,
) {
    let Some(b) = conv
        .records
        .iter()
        .rposition(|r| r.value.as_ref().is_some_and(|v| is_boundary(v)))
    else {
        return;
    };
    let before = conv.records[..b]
        .iter()
        .filter(|r| r.messages == 0 && r.value.as_ref().is_some_and(|v| is_line(v)))
        .count();
    if before > 0 {
        conv.notes.push(format!(
            "{before} {what} {} precede a compaction (line {}): the next call carries the summary and what follows, so they are kept in the file as they are and not read",
            if before == 1 { "line" } else { "lines" },
            conv.records[b].line
        ));
    }
}

/// New records for a log that takes text only (a summary): each message's
/// record built by `record` from its role and text; a tool call or result
/// is said lost (`what` names the log).
pub(crate) fn text_records(
    msgs: &[&crate::transcript::Message],
    losses: &mut Vec<Loss>,
    what: &str,
    record: impl Fn(crate::transcript::Role, String) -> Value,
) -> Vec<Value> {
    msgs.iter()
        .filter_map(|m| {
            if m.role.is_result() || m.has_calls() {
                losses.push(Loss::at(
                    m.input_index(),
                    "tool message",
                    format!("ctxclean writes only text into {what}"),
                ));
                return None;
            }
            Some(record(m.role, m.content.text()))
        })
        .collect()
}

/// The URL (or `data:` URL) of an image part in any format's shape.
pub(crate) fn image_url(raw: &Value) -> Option<String> {
    let obj = raw.as_object()?;
    let s = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    // Kimi Code's parts name it `imageUrl`.
    match obj.get("image_url").or_else(|| obj.get("imageUrl")) {
        Some(Value::String(u)) => return Some(u.clone()),
        Some(Value::Object(o)) => return s(o, "url"),
        _ => {}
    }
    if let Some(Value::Object(src)) = obj.get("source") {
        if let Some(url) = s(src, "url") {
            return Some(url);
        }
        let media = s(src, "media_type").unwrap_or_else(|| "image/png".into());
        return s(src, "data").map(|d| format!("data:{media};base64,{d}"));
    }
    for key in ["inlineData", "inline_data"] {
        if let Some(Value::Object(d)) = obj.get(key) {
            let media = s(d, "mimeType")
                .or_else(|| s(d, "mime_type"))
                .unwrap_or_else(|| "image/png".into());
            return s(d, "data").map(|data| format!("data:{media};base64,{data}"));
        }
    }
    for key in ["fileData", "file_data"] {
        if let Some(Value::Object(d)) = obj.get(key) {
            return s(d, "fileUri").or_else(|| s(d, "file_uri"));
        }
    }
    // The AI SDK's `{type: image, image, mediaType}`: a URL or base64.
    if let Some(image) = s(obj, "image") {
        if image.starts_with("data:") || image.contains("://") {
            return Some(image);
        }
        let media = s(obj, "mediaType").unwrap_or_else(|| "image/png".into());
        return Some(format!("data:{media};base64,{image}"));
    }
    // Crush's parts: `image_url` `{data: {url}}`, `binary` `{data: {MIMEType, Data}}`.
    if let Some(Value::Object(d)) = obj.get("data") {
        if let Some(url) = s(d, "url") {
            return Some(url);
        }
        if let (Some(media), Some(data)) = (s(d, "MIMEType"), s(d, "Data")) {
            return Some(format!("data:{media};base64,{data}"));
        }
    }
    if let Some(url) = s(obj, "url") {
        return Some(url);
    }
    let media = s(obj, "mime_type").unwrap_or_else(|| "image/png".into());
    s(obj, "base64").map(|d| format!("data:{media};base64,{d}"))
}
