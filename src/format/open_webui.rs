//! Open WebUI chat exports: a list of chat rows (`[{id, title, chat: {...}}]`)
//! or one chat object (`{history: {messages, currentId}, messages: [...]}`).
//!
//! The `messages` list (the active branch) is read. Tool calls are embedded
//! in assistant content as `<details type="tool_calls" … arguments="…"
//! result="…">` blocks with HTML-escaped JSON; they are read into tool calls
//! and tool results (the assistant text before, between and after the
//! blocks stays with its message) and written back in the same embedded
//! form, byte for byte where unchanged. `history.messages` is kept in step
//! with every changed or removed message, parent links included.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{Content, Message, Record, Role, ToolCall};

/// Open WebUI chat exports.
pub(crate) struct OpenWebUi;

impl Dialect for OpenWebUi {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        if let Some(Value::Object(chat)) = obj.get("chat") {
            if chat.get("messages").is_some_and(Value::is_array) {
                return Some(&["chat", "messages"]);
            }
        }
        (obj.get("history").is_some_and(Value::is_object)
            && obj.get("messages").is_some_and(Value::is_array))
        .then_some(&["messages"][..])
    }

    fn read_record(&self, rec: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        let role = match rec.get("role").and_then(Value::as_str) {
            Some(r) => Role::parse(r).ok_or_else(|| format!("unknown role \"{r}\""))?,
            None => return Err("message has no \"role\"".into()),
        };
        let text = match rec.get("content") {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Null) | None => "",
            Some(_) => return Err("\"content\" must be a string".into()),
        };
        let base = |role: Role, text: &str| Message {
            fields: rec.clone(),
            ..Message::new(role, text)
        };
        if role != Role::Assistant || !text.contains("<details") {
            let mut m = base(role, text);
            if !rec.contains_key("content") {
                m.content = Content::Absent;
            }
            return Ok(vec![m]);
        }
        let segments = split(text);
        let mut out: Vec<Message> = Vec::new();
        let mut pending: Option<Message> = None;
        let mut results: Vec<Message> = Vec::new();
        for (n, seg) in segments.into_iter().enumerate() {
            match seg {
                Segment::Text(t) => {
                    if let Some(m) = pending.take() {
                        out.push(m);
                        out.append(&mut results);
                    }
                    pending = Some(base(Role::Assistant, t));
                }
                Segment::Call(block) => {
                    let m = pending.get_or_insert_with(|| base(Role::Assistant, ""));
                    let id = block
                        .attr("id")
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("owui_{n}"));
                    m.tool_calls.get_or_insert_with(Vec::new).push(ToolCall {
                        id: Some(id.clone()),
                        name: block.attr("name").unwrap_or("tool").to_string(),
                        arguments: block.attr("arguments").map(unescape).unwrap_or_default(),
                        raw: Value::from(block.text),
                        slot: None,
                    });
                    if let Some(result) = block.result() {
                        results.push(Message {
                            tool_call_id: Some(id),
                            name: block.attr("name").map(str::to_string),
                            fields: Map::new(),
                            ..Message::new(Role::Tool, result)
                        });
                    }
                }
            }
        }
        if let Some(m) = pending.take() {
            out.push(m);
            out.append(&mut results);
        }
        Ok(out)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut text = String::new();
        let mut role = None;
        for m in msgs.iter().filter(|m| !m.role.is_result()) {
            role.get_or_insert(m.role);
            text.push_str(&m.content.text());
            for c in m.calls() {
                let result = msgs
                    .iter()
                    .find(|r| r.role.is_result() && r.tool_call_id == c.id);
                text.push_str(&block_text(c, result.map(|r| r.content.text())));
            }
        }
        let role = role?;
        let mut out = rec.clone();
        if rec.get("role").and_then(Value::as_str) != Some(role.as_str()) {
            out.insert("role".into(), Value::from(role.as_str()));
        }
        if rec.contains_key("content") || !text.is_empty() {
            set_if_changed(&mut out, "content", Value::from(text));
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        let pairing = crate::pairs::Pairing::new(msgs);
        for (i, m) in msgs.iter().enumerate() {
            let index = m.input_index().unwrap_or(i);
            if m.role.is_result() {
                continue; // embedded in its call's block below
            }
            if m.content.images().next().is_some() {
                losses.push(Loss {
                    index,
                    reason: "images dropped: open-webui keeps them as uploaded files".into(),
                });
            }
            let mut text = m.content.text();
            for (c, call) in m.calls().iter().enumerate() {
                let answer = pairing.answer(crate::pairs::CallRef {
                    message: i,
                    call: c,
                });
                let mut call = call.clone();
                call.raw = Value::Null;
                text.push_str(&block_text(&call, answer.map(|a| msgs[a].content.text())));
            }
            let role = if m.role == Role::Developer {
                "system"
            } else {
                m.role.as_str()
            };
            out.push(serde_json::json!({ "role": role, "content": text }));
        }
        out
    }

    fn finish(
        &self,
        env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        let Some(env) = env else { return };
        let chat = match env.get_mut("chat") {
            Some(Value::Object(chat)) => chat,
            _ => env,
        };
        let Some(Value::Object(history)) = chat.get_mut("history") else {
            return;
        };
        let Some(Value::Object(tree)) = history.get_mut("messages") else {
            return;
        };
        let id_of = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_string);
        // Changed messages: mirror them into the tree.
        for r in out.iter().filter(|r| r.changed) {
            let Some(Value::Object(node)) = &r.value else {
                continue;
            };
            let Some(id) = node.get("id").and_then(Value::as_str) else {
                continue;
            };
            if let Some(Value::Object(entry)) = tree.get_mut(id) {
                for key in ["content", "role"] {
                    if let Some(val) = node.get(key) {
                        set_if_changed(entry, key, val.clone());
                    }
                }
            }
        }
        // Removed messages: drop them from the tree, relinking around them.
        let kept: Vec<String> = out
            .iter()
            .filter_map(|r| r.value.as_ref().and_then(id_of))
            .collect();
        let removed: Vec<String> = original
            .iter()
            .filter_map(|r| {
                r.value
                    .as_ref()
                    .and_then(|v| v.get("id")?.as_str().map(str::to_string))
            })
            .filter(|id| !kept.contains(id))
            .collect();
        let mut parent_of: HashMap<String, Option<String>> = HashMap::new();
        for id in &removed {
            let Some(Value::Object(node)) = tree.shift_remove(id) else {
                continue;
            };
            let parent = node
                .get("parentId")
                .and_then(Value::as_str)
                .map(str::to_string);
            let children: Vec<Value> = node
                .get("childrenIds")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            parent_of.insert(id.clone(), parent.clone());
            for child in children.iter().filter_map(Value::as_str) {
                if let Some(Value::Object(c)) = tree.get_mut(child) {
                    c.insert(
                        "parentId".into(),
                        parent.clone().map_or(Value::Null, Value::from),
                    );
                }
            }
            if let Some(Value::Object(p)) = parent.as_deref().and_then(|p| tree.get_mut(p)) {
                if let Some(Value::Array(siblings)) = p.get_mut("childrenIds") {
                    let mut next = Vec::new();
                    for s in siblings.drain(..) {
                        if s.as_str() == Some(id) {
                            next.extend(children.iter().cloned());
                        } else {
                            next.push(s);
                        }
                    }
                    *siblings = next;
                }
            }
        }
        if let Some(current) = history
            .get("currentId")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            let mut cur = Some(current.clone());
            while let Some(p) = cur.as_ref().and_then(|c| parent_of.get(c)) {
                cur = p.clone();
            }
            if cur.as_deref() != Some(current.as_str()) {
                history.insert("currentId".into(), cur.map_or(Value::Null, Value::from));
            }
        }
        // Kept messages whose parent went: the list itself carries parentId too.
        for r in out.iter_mut() {
            let Some(Value::Object(v)) = &r.value else {
                continue;
            };
            let Some(mut p) = v
                .get("parentId")
                .and_then(Value::as_str)
                .map(str::to_string)
            else {
                continue;
            };
            if !parent_of.contains_key(&p) {
                continue;
            }
            while let Some(up) = parent_of.get(&p) {
                match up {
                    Some(q) => p = q.clone(),
                    None => {
                        p = String::new();
                        break;
                    }
                }
            }
            let mut v = v.clone();
            v.insert(
                "parentId".into(),
                if p.is_empty() {
                    Value::Null
                } else {
                    Value::from(p)
                },
            );
            r.set(Value::Object(v));
        }
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        let _ = m;
        Vec::new()
    }

    fn envelope_keys(&self) -> &'static [&'static str] {
        &["messages", "history", "chat"]
    }
}

enum Segment<'a> {
    Text(&'a str),
    Call(Block<'a>),
}

/// A `<details type="tool_calls">` element.
pub(crate) struct Block<'a> {
    /// The whole element, as it came.
    pub(crate) text: &'a str,
    attrs: Vec<(&'a str, &'a str)>,
    body: &'a str,
}

impl<'a> Block<'a> {
    /// An attribute's raw (still escaped) value.
    pub(crate) fn attr(&self, name: &str) -> Option<&'a str> {
        self.attrs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    /// The result text: the `result` attribute (escaped JSON), or the body
    /// in forks that put it there; `None` for an unfinished call.
    pub(crate) fn result(&self) -> Option<String> {
        if self.attr("done") == Some("false") {
            return None;
        }
        let raw = match self.attr("result") {
            Some(r) => unescape(r),
            None => {
                let body = self.body.trim();
                let body = match body.find("</summary>") {
                    Some(i) => body[i + "</summary>".len()..].trim(),
                    None => body,
                };
                if body.is_empty() {
                    return None;
                }
                unescape(body)
            }
        };
        // The attribute holds json.dumps(result): a JSON string, usually.
        Some(match serde_json::from_str::<Value>(&raw) {
            Ok(Value::String(s)) => s,
            _ => raw,
        })
    }
}

/// Splits assistant content into text and tool-call blocks.
fn split(text: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some((a, b, block)) = find_block(&text[pos..]) {
        out.push(Segment::Text(&text[pos..pos + a]));
        out.push(Segment::Call(block));
        pos += b;
    }
    out.push(Segment::Text(&text[pos..]));
    out
}

/// Finds the next tool-call block: its start, end, and parsed form.
pub(crate) fn find_block(text: &str) -> Option<(usize, usize, Block<'_>)> {
    let mut from = 0;
    loop {
        let at = from + text[from..].find("<details")?;
        let open_end = at + text[at..].find('>')?;
        let tag = &text[at + "<details".len()..open_end];
        let attrs = parse_attrs(tag);
        let close = open_end + text[open_end..].find("</details>")?;
        let end = close + "</details>".len();
        if attrs
            .iter()
            .any(|(k, v)| *k == "type" && *v == "tool_calls")
        {
            let block = Block {
                text: &text[at..end],
                attrs,
                body: &text[open_end + 1..close],
            };
            return Some((at, end, block));
        }
        from = end;
    }
}

fn parse_attrs(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = tag;
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim();
        let after = &rest[eq + 1..];
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            break;
        };
        let Some(close) = after[1..].find(quote) else {
            break;
        };
        out.push((name, &after[1..1 + close]));
        rest = &after[close + 2..];
    }
    out
}

/// A tool-call block for a call and its result: the original element when
/// neither changed, else the original with new `arguments` and `result`.
fn block_text(call: &ToolCall, result: Option<String>) -> String {
    let original = call
        .raw
        .as_str()
        .and_then(|t| find_block(t).map(|(_, _, b)| b));
    if let Some(b) = &original {
        let args_same = b.attr("arguments").map(unescape).unwrap_or_default() == call.arguments;
        if args_same && b.result() == result {
            return b.text.to_string();
        }
    }
    let result_attr = result
        .as_ref()
        .map(|r| escape(&Value::from(r.as_str()).to_string()));
    match original {
        Some(b) => {
            let mut attrs: Vec<(String, String)> = b
                .attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            for (k, v) in attrs.iter_mut() {
                if k == "arguments" {
                    *v = escape(&call.arguments);
                } else if k == "result" {
                    if let Some(r) = &result_attr {
                        v.clone_from(r);
                    }
                }
            }
            if !b.attrs.iter().any(|(k, _)| *k == "result") {
                if let Some(r) = result_attr {
                    attrs.push(("result".into(), r));
                }
            }
            let tag: String = attrs.iter().map(|(k, v)| format!(" {k}=\"{v}\"")).collect();
            let body = if b.attr("result").is_some() || result.is_none() {
                b.body.to_string()
            } else {
                "\n<summary>Tool Executed</summary>\n".to_string()
            };
            format!("<details{tag}>{body}</details>")
        }
        None => {
            let mut tag = format!(" type=\"tool_calls\" done=\"{}\"", result.is_some());
            if let Some(id) = &call.id {
                tag += &format!(" id=\"{}\"", escape(id));
            }
            tag += &format!(
                " name=\"{}\" arguments=\"{}\"",
                escape(&call.name),
                escape(&call.arguments)
            );
            if let Some(r) = result_attr {
                tag += &format!(" result=\"{r}\"");
            }
            format!("<details{tag}>\n<summary>Tool Executed</summary>\n</details>\n")
        }
    }
}

/// HTML-unescapes text (`&quot;`, `&amp;`, `&#x27;`, `&#39;`, …).
pub(crate) fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find(';').filter(|e| *e <= 10);
        let decoded = end.and_then(|e| {
            let entity = &rest[1..e];
            let c = match entity {
                "quot" => Some('"'),
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "apos" => Some('\''),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// HTML-escapes text as Python's `html.escape` does.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "<details type=\"tool_calls\" done=\"true\" id=\"call_1\" name=\"get_weather\" arguments=\"{&quot;city&quot;: &quot;Vienna&quot;}\" result=\"&quot;Sunny in Vienna&quot;\">\n<summary>Tool Executed</summary>\n</details>\nIt is sunny, so pack sunglasses.";

    fn rec(content: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("id".into(), Value::from("a1"));
        m.insert("role".into(), Value::from("assistant"));
        m.insert("content".into(), Value::from(content));
        m
    }

    #[test]
    fn embedded_calls_are_read_and_written_back() {
        let r = rec(SEED);
        let msgs = OpenWebUi.read_record(&r).unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0].calls()[0].name, "get_weather");
        assert_eq!(msgs[0].calls()[0].arguments, r#"{"city": "Vienna"}"#);
        assert_eq!(msgs[1].role, Role::Tool);
        assert_eq!(msgs[1].content.text(), "Sunny in Vienna");
        assert_eq!(msgs[2].content.text(), "\nIt is sunny, so pack sunglasses.");
        assert!(crate::pairs::pair_problems(&msgs).is_empty());
        let refs: Vec<&Message> = msgs.iter().collect();
        assert_eq!(OpenWebUi.write_record(&r, &refs).unwrap(), r);
    }

    #[test]
    fn a_changed_result_is_re_escaped_in_place() {
        let r = rec(SEED);
        let mut msgs = OpenWebUi.read_record(&r).unwrap();
        msgs[1].content = Content::Text("[Tool: 1 lines, 15 chars | \"Sunny\" <3]".into());
        let refs: Vec<&Message> = msgs.iter().collect();
        let out = OpenWebUi.write_record(&r, &refs).unwrap();
        let content = out["content"].as_str().unwrap();
        assert!(
            content.contains(
                r#"result="&quot;[Tool: 1 lines, 15 chars | \&quot;Sunny\&quot; &lt;3]&quot;""#
            ),
            "{content}"
        );
        assert!(content.ends_with("\nIt is sunny, so pack sunglasses."));
        let back = OpenWebUi.read_record(&out).unwrap();
        assert_eq!(
            back[1].content.text(),
            "[Tool: 1 lines, 15 chars | \"Sunny\" <3]"
        );
    }

    #[test]
    fn html_entities() {
        assert_eq!(
            unescape("&quot;a&quot; &amp; &#x27;b&#39; &lt;&gt; &bogus; &"),
            "\"a\" & 'b' <> &bogus; &"
        );
        assert_eq!(
            escape("\"a\" & 'b' <>"),
            "&quot;a&quot; &amp; &#x27;b&#x27; &lt;&gt;"
        );
    }
}
