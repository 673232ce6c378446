//! Tool calls and results embedded in text, as some tools keep them: one
//! mechanism to cut a text into plain pieces and embedded items, with a
//! finder per format, and to put it back together.
//!
//! - Open WebUI: `<details type="tool_calls" …>` elements in assistant
//!   content, each a call with its result;
//! - Cline (older versions): `<read_file><path>…</path></read_file>` XML
//!   calls in assistant text; their results come back as user text blocks
//!   that begin with a `[read_file for 'src/a.ts'] Result:` header
//!   ([`result_header`]).
//!
//! An item that did not change is written back as the text it was read
//! from, so unchanged text comes back byte for byte.

/// A piece of a text: plain text, or an embedded item.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Segment<'a, T> {
    /// Text between items.
    Text(&'a str),
    /// An embedded item, with the exact text it was read from.
    Item(&'a str, T),
}

/// Cuts `text` into plain pieces and the items `find` finds in it: `find`
/// returns the next item's start, end and parsed form, positions relative
/// to the text it is given. Plain pieces are never empty, but a text with
/// no item is one plain piece (possibly empty).
pub(crate) fn split<'a, T>(
    text: &'a str,
    find: impl Fn(&'a str) -> Option<(usize, usize, T)>,
) -> Vec<Segment<'a, T>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some((a, b, item)) = find(&text[pos..]) {
        if a > 0 {
            out.push(Segment::Text(&text[pos..pos + a]));
        }
        out.push(Segment::Item(&text[pos + a..pos + b], item));
        pos += b;
    }
    if pos < text.len() || out.is_empty() {
        out.push(Segment::Text(&text[pos..]));
    }
    out
}

/// The end of the header of a changed notice (see [`result_header`]).
pub(crate) const NOTICE_END: &str = "] was not executed:";

/// A Cline tool-result header at the start of a text: `[read_file for
/// 'src/a.ts'] Result:` (or `[attempt_completion] Result:`), and the
/// "Tool [x] was not executed because…" notice Cline writes for the calls
/// after the first: the tool's name, and the length of the header (the
/// notice is its own header: the result is the notice). A notice an
/// operation changed (compacted, cut) is written `Tool [x] was not
/// executed:`, a line of its own, then its new text: that line is its
/// header.
pub(crate) fn result_header(text: &str) -> Option<(&str, usize)> {
    if let Some(rest) = text.strip_prefix("Tool [") {
        let close = rest.find(']')?;
        let name = &rest[..close];
        if !valid_name(name) || !rest[close..].starts_with("] was not executed") {
            return None;
        }
        let header = "Tool [".len() + close + NOTICE_END.len();
        let written = rest[close..].starts_with(NOTICE_END) && text[header..].starts_with('\n');
        return Some((name, if written { header } else { 0 }));
    }
    let rest = text.strip_prefix('[')?;
    let line = rest.split('\n').next().unwrap_or(rest);
    let end = match line.find("] Result:") {
        Some(end) => end,
        // Roo Code's `[new_task in 💻 Code mode: '…'] Result:` quotes the
        // subtask's message, lines and all.
        None if line.starts_with("new_task in ") && line.contains(" mode: '") => {
            rest.find("'] Result:")? + 1
        }
        // … and `[switch_mode to 'code' because: …] Result:` its reason.
        None if line.starts_with("switch_mode to '") => rest.find("] Result:")?,
        None => return None,
    };
    let head = &rest[..end];
    // `[read_file for 'a.ts']`, `[attempt_completion]`, and Roo Code's
    // `[switch_mode to 'code' because: …]`, `[new_task completed]`: the
    // name is the first word, and a tool's (it has a `_`) when more follows
    // that is not ` for …`.
    let name = head.split(' ').next().unwrap_or(head);
    let rest = &head[name.len()..];
    if !valid_name(name) || !(rest.is_empty() || rest.starts_with(" for ") || name.contains('_')) {
        return None;
    }
    Some((name, 1 + end + "] Result:".len()))
}

/// A tool name: letters, digits, `_` and `-`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_every_byte() {
        let find = |t: &str| {
            let a = t.find('<')?;
            let b = a + t[a..].find('>')? + 1;
            Some((a, b, t[a + 1..b - 1].to_string()))
        };
        let segs = split("a<x>b<y>", find);
        assert_eq!(
            segs,
            [
                Segment::Text("a"),
                Segment::Item("<x>", "x".to_string()),
                Segment::Text("b"),
                Segment::Item("<y>", "y".to_string())
            ]
        );
        assert_eq!(split("", find), [Segment::Text("")]);
    }

    #[test]
    fn result_headers() {
        assert_eq!(
            result_header("[read_file for 'src/a.ts'] Result:\nfn main"),
            Some(("read_file", 34))
        );
        assert_eq!(
            result_header("[attempt_completion] Result:"),
            Some(("attempt_completion", 28))
        );
        assert_eq!(
            result_header(
                "Tool [execute_command] was not executed because a tool has already been used"
            ),
            Some(("execute_command", 0))
        );
        // A notice an operation changed: its first words are its header.
        assert_eq!(
            result_header("Tool [execute_command] was not executed:\n[Tool: 1 line, 9 chars]"),
            Some(("execute_command", 40))
        );
        assert_eq!(
            result_header("Tool [execute_command] was not executed: no line break"),
            Some(("execute_command", 0))
        );
        // Roo Code's mode switches and subtasks (issue 29).
        assert_eq!(
            result_header("[switch_mode to 'code' because: fix it] Result:\nok"),
            Some(("switch_mode", 47))
        );
        assert_eq!(
            result_header("[new_task completed] Result: done"),
            Some(("new_task", 28))
        );
        assert_eq!(result_header("[note] something"), None);
        assert_eq!(result_header("[a b] Result:"), None);
    }
}
