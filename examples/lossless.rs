//! Holds each operation given to "lossless by default" on the transcripts
//! given: every message of the input that the report does not name
//! (removed or modified) reads back from the output as it went in (its
//! role, text, parts, calls and call id), in its order. Run by
//! `scripts/invariants.py --lossless`, with its operations and chains, on
//! random transcripts of every format:
//!
//!     cargo run --release --example lossless -- [--in-flight] --op 'trim --max-tokens 300' \
//!         --op 'filter --previous-cycles then compact-tools --keep-last 1' FILE...
//!
//! With `--in-flight`, each operation runs as `ctxclean serve` runs it, its
//! holds on, over each conversation's requests call by call as the agent
//! sent them (`replay`'s requests): every message of a request that its
//! call's report does not name reads back from the body forwarded as it
//! came, held bodies too (an operation `serve` refuses is left out, said).
//!
//! Prints each broken promise (operation, file, conversation, the message)
//! and exits 1 if there is one. Where it does not look:
//!
//! - ids ctxclean minted for a format that keeps none (`call_ctxclean_…`,
//!   `ctxclean_subtask_…`) follow the messages' places;
//! - Open WebUI keeps the texts on either side of a call's block as
//!   messages of their own, and once the block goes they are one text: a
//!   message found inside a message of its role read back counts as kept;
//! - a format that keeps one result per call id (VS Code Copilot Chat, Zed)
//!   keeps the result as it came where two calls share an id and only one
//!   of their results changed: the report names a change that was not
//!   made, and no text is lost.
//!
//! And a message the report names as modified must not read back as it
//! went in.

use std::collections::HashSet;
use std::ffi::OsString;
use std::process::ExitCode;

use ctxclean::format::{read_document, Format, ReadOptions};
use ctxclean::inflight::Holds;
use ctxclean::ops::Accounting;
use ctxclean::recipe::{Prepared, Recipe};
use ctxclean::report::{Action, Change};
use ctxclean::transcript::{Content, Conversation, Message, PartKind};

/// An id as the file holds it; none for one ctxclean minted.
fn id(id: Option<&str>) -> Option<&str> {
    id.filter(|i| !i.contains("ctxclean_"))
}

/// What a message says: role, text, parts, calls, call id, name, the
/// thinking kept beside its content.
fn said(m: &Message) -> String {
    let content = match &m.content {
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match &p.kind {
                PartKind::Text(t) => format!("text {t}"),
                kind => format!("{kind:?}"),
            })
            .collect::<Vec<_>>()
            .join(" | "),
        c => c.text(),
    };
    let calls: Vec<String> = m
        .calls()
        .iter()
        .map(|c| format!("{:?} {} {}", id(c.id.as_deref()), c.name, c.arguments))
        .collect();
    // Thinking some formats keep beside the content.
    let reasoning: Vec<_> = ["reasoning_content", "reasoning"]
        .iter()
        .map(|&k| m.fields.get(k))
        .collect();
    format!(
        "{} {content:?} {calls:?} {:?} {:?} {reasoning:?}",
        m.role.as_str(),
        id(m.tool_call_id.as_deref()),
        m.name
    )
}

/// The broken promises of one operation on one input.
fn check(op: &str, prepared: &Prepared, name: &str, bytes: Vec<u8>) -> Vec<String> {
    let Ok(input) = read_document(name, bytes.clone(), &ReadOptions::default()) else {
        return Vec::new();
    };
    let Ok(applied) = prepared.apply(name, bytes, None) else {
        return vec![format!("{op} {name}: the operation failed")];
    };
    let from = ReadOptions {
        from: Some(input.source_format),
        ..ReadOptions::default()
    };
    let Ok(back) = read_document(name, applied.out, &from) else {
        return vec![format!("{op} {name}: its output does not read back")];
    };
    let joins = input.source_format == Format::OpenWebUi;
    let mut broken = Vec::new();
    for (c, report) in applied.report.conversations.iter().enumerate() {
        let (Some(conv), Some(back)) = (input.conversations.get(c), back.conversations.get(c))
        else {
            continue;
        };
        let what = format!("{op} {name}: conversation {c}");
        broken.extend(compare(&what, conv, &report.changes, &back.messages, joins));
    }
    broken
}

/// The broken promises of one conversation's output (`read`, as read
/// back) against its input (`conv`) and the changes its report names.
fn compare(
    what: &str,
    conv: &Conversation,
    changes: &[Change],
    read: &[Message],
    joins: bool,
) -> Vec<String> {
    let by = |action: Action| -> HashSet<usize> {
        changes
            .iter()
            .filter(|ch| ch.action == action)
            .map(|ch| ch.index)
            .collect()
    };
    let (removed, modified, added) = (by(Action::Removed), by(Action::Modified), by(Action::Added));
    let mut broken = Vec::new();
    let mut at = 0;
    for (i, m) in conv.messages.iter().enumerate() {
        if removed.contains(&i) {
            continue;
        }
        let want = said(m);
        if modified.contains(&i) {
            // In its place, past the messages added before it.
            while added.contains(&at) {
                at += 1;
            }
            if read.get(at).is_some_and(|r| said(r) == want) && !shared(conv, i) {
                broken.push(format!(
                    "{what}, message {i} reported modified, read back as it went in: {}",
                    want.chars().take(200).collect::<String>()
                ));
            }
            at += 1;
            continue;
        }
        match read
            .get(at..)
            .unwrap_or_default()
            .iter()
            .position(|r| said(r) == want)
        {
            Some(k) => at += k + 1,
            None if joins && joined(m, read) => {}
            None => {
                broken.push(format!(
                    "{what}, message {i} not named in the report, not read back as it went in: {}",
                    want.chars().take(200).collect::<String>()
                ));
                break;
            }
        }
    }
    broken
}

/// The proxy's promises, `op` run as `serve` runs it (its holds on), over
/// each conversation's requests call by call as the agent sent them
/// (`replay`'s requests): every message of a request that the report of
/// its call does not name reads back from the body forwarded as it came.
/// A held body is the body before it extended, and its report names what
/// that body changed; a request whose earlier requests the holds replay
/// first names what they took out.
fn in_flight(op: &str, prepared: &Prepared, name: &str, bytes: Vec<u8>) -> Vec<String> {
    let Ok(doc) = read_document(name, bytes, &ReadOptions::default()) else {
        return Vec::new();
    };
    let format = ctxclean::replay::request_format(doc.source_format);
    let read = |body: &[u8]| {
        ctxclean::inflight::read_request(format, body)
            .ok()
            .and_then(|d| d.conversations.into_iter().next())
    };
    let mut broken = Vec::new();
    for index in 0..doc.conversations.len() {
        let holds = Holds::new(prepared.budget(), None, 16).billed(prepared.budget_billed());
        for (call, body) in ctxclean::replay::requests(&doc, index) {
            let what = format!("{op} (in flight) {name}: conversation {index}, call {call}");
            let Some(came) = read(&body) else {
                continue;
            };
            let out = match prepared.clean_request(format, &body, Some(&holds)) {
                Ok(out) => out,
                Err(e) => {
                    broken.push(format!("{what}: the call failed: {e}"));
                    break;
                }
            };
            let Some(bytes) = out.body.as_deref() else {
                continue; // as it came
            };
            let Some(sent) = read(bytes) else {
                broken.push(format!("{what}: the body forwarded does not read back"));
                break;
            };
            let what = match out.cache.as_deref() {
                Some(cache) => format!("{what} ({cache})"),
                None => what,
            };
            let changes: Vec<Change> = out.reports.iter().flat_map(|r| r.changes.clone()).collect();
            broken.extend(compare(&what, &came, &changes, &sent.messages, false));
        }
    }
    broken
}

/// A result that shares its call id with another of the conversation's: a
/// format that keeps one result per id (VS Code Copilot Chat, Zed) keeps
/// the one as it came when only one of them changed.
fn shared(conv: &Conversation, i: usize) -> bool {
    let id = conv.messages[i].tool_call_id.as_deref();
    id.is_some()
        && conv
            .messages
            .iter()
            .enumerate()
            .any(|(k, m)| k != i && m.role.is_result() && m.tool_call_id.as_deref() == id)
}

/// Open WebUI: the message's text is inside a message of its role.
fn joined(m: &Message, read: &[Message]) -> bool {
    let text = m.content.text();
    read.iter()
        .any(|r| r.role == m.role && r.content.text().contains(text.trim()))
}

/// The operations (`--op`, each a chain of steps joined by ` then `) and
/// the files of the command line.
fn arguments() -> Option<(Vec<String>, Vec<OsString>, bool)> {
    let mut ops = Vec::new();
    let mut files = Vec::new();
    let mut flight = false;
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        if a == "--op" {
            ops.push(args.next()?.into_string().ok()?);
        } else if a == "--in-flight" {
            flight = true;
        } else {
            files.push(a);
        }
    }
    (!ops.is_empty()).then_some((ops, files, flight))
}

fn main() -> ExitCode {
    let Some((ops, files, flight)) = arguments() else {
        eprintln!("usage: lossless [--in-flight] --op 'OPERATION [then OPERATION]...'... FILE...");
        return ExitCode::from(2);
    };
    let mut broken = 0;
    for op in &ops {
        let steps: Vec<Vec<OsString>> = op
            .split(" then ")
            .map(|step| step.split_whitespace().map(OsString::from).collect())
            .collect();
        let recipe = if flight {
            Recipe::from_steps_in_flight(&steps, None, Some("approx"))
        } else {
            Recipe::from_steps(&steps, None, Some("approx"))
        };
        let accounting = if flight {
            Accounting::Full
        } else {
            Accounting::None
        };
        let prepared = match recipe.and_then(|r| r.prepare(accounting)) {
            Ok(p) => p,
            // What `serve` refuses (a step that converts) is not run.
            Err(e) if flight => {
                eprintln!("lossless: --op {op}: not run in flight: {e}");
                continue;
            }
            Err(e) => {
                eprintln!("lossless: --op {op}: {e}");
                return ExitCode::from(2);
            }
        };
        for file in &files {
            let name = file.to_string_lossy();
            let Ok(bytes) = std::fs::read(file) else {
                eprintln!("lossless: cannot read {name}");
                return ExitCode::from(2);
            };
            let found = if flight {
                in_flight(op, &prepared, &name, bytes)
            } else {
                check(op, &prepared, &name, bytes)
            };
            for line in found {
                println!("{line}");
                broken += 1;
            }
        }
    }
    println!("{} files, {broken} broken promises", files.len());
    if broken == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
