//! What ctxclean writes, ctxclean reads back as the same format: for every
//! fixture and every operation, `format(output) == format(input)`, and the
//! output reads without `--from` (issue 13).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ctxclean::format::{read_document, write_document, ReadOptions};
use ctxclean::ops::compact_tools::CompactSpec;
use ctxclean::ops::filter::FilterSpec;
use ctxclean::ops::summarize::{Summarize, SummarizeSpec};
use ctxclean::ops::trim::{Strategy, TrimSpec};
use ctxclean::ops::Pipeline;
use ctxclean::summary::extractive::Extractive;
use ctxclean::tokens::{Encoding, Tokenizer};
use ctxclean::transcript::Role;

/// Every readable fixture (the malformed suite and the reference counts
/// are not transcripts).
pub(crate) fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("malformed") {
                    walk(&p, out);
                }
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "jsonl" | "traj" | "af")
            ) && !p.ends_with("tokens/expected.json")
                && !p.ends_with("tokens/hf-expected.json")
                && !p.ends_with("tokens/hf-chatml.json")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut out,
    );
    out
}

/// One pipeline per operation, with flags that change real transcripts.
fn pipelines() -> Vec<(&'static str, Pipeline)> {
    let mut out = Vec::new();
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        previous_cycles: true,
        ..FilterSpec::default()
    });
    out.push(("filter --previous-cycles", p));
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        exclude_tool_calls: true,
        drop_thinking: true,
        ..FilterSpec::default()
    });
    out.push(("filter --exclude-tool-calls --drop-thinking", p));
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        exclude_roles: vec![Role::System, Role::Developer],
        ..FilterSpec::default()
    });
    out.push(("filter --exclude-roles system,developer", p));
    // Every role-specific trace gone: text is all that is left.
    let mut p = Pipeline::new();
    p.push(FilterSpec {
        exclude_roles: vec![Role::System, Role::Developer],
        exclude_tool_calls: true,
        drop_thinking: true,
        strip_processed_images: true,
        ..FilterSpec::default()
    });
    out.push(("filter --exclude-roles system,developer --exclude-tool-calls --drop-thinking --strip-processed-images", p));
    let mut p = Pipeline::new();
    p.push(CompactSpec {
        keep_last: 0,
        max_result_tokens: 0,
        ..CompactSpec::default()
    });
    out.push(("compact-tools --keep-last 0 --max-result-tokens 0", p));
    for max in [40, 400] {
        let mut p = Pipeline::new();
        p.push(TrimSpec {
            max_tokens: Some(max),
            strategy: Strategy::Last,
            ..TrimSpec::default()
        });
        out.push((
            if max == 40 {
                "trim --max-tokens 40"
            } else {
                "trim --max-tokens 400"
            },
            p,
        ));
    }
    let mut p = Pipeline::new();
    p.push(Summarize {
        spec: SummarizeSpec {
            threshold: 50,
            keep: 2,
            ..SummarizeSpec::default()
        },
        engine: Box::new(Extractive),
        cache: None,
    });
    out.push(("summarize --threshold 50 --keep 2", p));
    out
}

#[test]
fn every_output_reads_back_as_its_input_format() {
    let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in fixtures() {
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        let bytes = std::fs::read(&path).unwrap();
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let Ok(doc) = read_document(&name, bytes, &opts) else {
            continue; // fixtures that need --from are tested elsewhere
        };
        for (op, pipeline) in pipelines() {
            let mut d = doc.clone();
            pipeline.run(&mut d, &tok, false);
            let mut out = Vec::new();
            write_document(&d, &mut out).unwrap();
            checked += 1;
            match read_document("out", out, &opts) {
                Ok(back) if back.source_format == doc.source_format => {}
                Ok(back) => failures.push(format!(
                    "{name} | {op}: read back as {}, not {}",
                    back.source_format, doc.source_format
                )),
                Err(e) => failures.push(format!("{name} | {op}: {e}")),
            }
        }
    }
    assert!(checked > 300, "only {checked} outputs checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The messages an output reads back as, per conversation, beside the
/// messages the pipeline left: they must be the same number, or the writer
/// lost (or invented) messages that no report mentions (issue 29).
fn lost_messages(name: &str, text: Vec<u8>, failures: &mut Vec<String>) -> usize {
    let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
    let opts = ReadOptions {
        skip_invalid: true,
        ..ReadOptions::default()
    };
    let Ok(doc) = read_document(name, text, &opts) else {
        return 0;
    };
    let mut checked = 0;
    for (op, pipeline) in pipelines() {
        let mut d = doc.clone();
        pipeline.run(&mut d, &tok, false);
        let mut out = Vec::new();
        write_document(&d, &mut out).unwrap();
        checked += 1;
        let Ok(back) = read_document("out", out, &opts) else {
            continue; // reading back is checked above
        };
        // Its shape too: an export that wraps its conversations came back
        // as its first conversation alone (issue 29, Grok and Chatbot UI).
        if back.layout != doc.layout {
            failures.push(format!(
                "{name} | {op}: read as {:?}, read back as {:?}",
                doc.layout, back.layout
            ));
        }
        let kept: Vec<usize> = d.conversations.iter().map(|c| c.messages.len()).collect();
        let read: Vec<usize> = back
            .conversations
            .iter()
            .map(|c| c.messages.len())
            .collect();
        if kept != read {
            failures.push(format!("{name} | {op}: kept {kept:?}, read back {read:?}"));
        }
    }
    checked
}

/// A parent-linked transcript broken the ways real files are: the pointer
/// to the leaf missing, pointing nowhere, or at a node that is not a leaf;
/// message ids missing; a node's `id` other than its key.
fn parent_linked_variants(path: &Path) -> Vec<(String, Vec<u8>)> {
    use serde_json::Value;
    let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(path).unwrap()) else {
        return Vec::new();
    };
    type Edit = fn(&mut serde_json::Map<String, Value>);
    /// Applies `edit` to every conversation object holding a tree; whether
    /// there was one.
    fn apply(v: &mut Value, edit: Edit) -> bool {
        match v {
            Value::Array(a) => a.iter_mut().fold(false, |f, x| apply(x, edit) | f),
            Value::Object(o) => {
                let here = o.get("mapping").is_some_and(Value::is_object)
                    || o.get("history").is_some_and(Value::is_object);
                if here {
                    edit(o);
                }
                here | o.get_mut("chat").is_some_and(|c| apply(c, edit))
            }
            _ => false,
        }
    }
    let edits: [(&str, Edit); 5] = [
        ("no pointer", |o| {
            o.shift_remove("current_node");
            if let Some(Value::Object(h)) = o.get_mut("history") {
                h.shift_remove("currentId");
            }
        }),
        ("pointer to nowhere", |o| {
            if o.contains_key("current_node") {
                o.insert("current_node".into(), "gone".into());
            }
            if let Some(Value::Object(h)) = o.get_mut("history") {
                h.insert("currentId".into(), "gone".into());
            }
        }),
        ("pointer to the root", |o| {
            let tree = match o.get("mapping") {
                Some(Value::Object(m)) => m,
                _ => match o.get("history").and_then(|h| h.get("messages")) {
                    Some(Value::Object(m)) => m,
                    _ => return,
                },
            };
            let Some(first) = tree.keys().next().cloned() else {
                return;
            };
            if o.contains_key("mapping") {
                o.insert("current_node".into(), first.into());
            } else if let Some(Value::Object(h)) = o.get_mut("history") {
                h.insert("currentId".into(), first.into());
            }
        }),
        ("no message ids", |o| {
            for tree in ["mapping", "history"] {
                let t = match o.get_mut(tree) {
                    Some(Value::Object(m)) if tree == "mapping" => m,
                    Some(Value::Object(h)) => match h.get_mut("messages") {
                        Some(Value::Object(m)) => m,
                        _ => continue,
                    },
                    _ => continue,
                };
                for node in t.values_mut() {
                    if let Some(Value::Object(m)) = node.get_mut("message") {
                        m.shift_remove("id");
                    } else if let Value::Object(n) = node {
                        n.shift_remove("id");
                    }
                }
            }
        }),
        ("node ids other than their keys", |o| {
            let t = match o.get_mut("history").and_then(|h| h.get_mut("messages")) {
                Some(Value::Object(m)) => m,
                _ => return,
            };
            for node in t.values_mut() {
                if let Some(Value::Object(n)) = Some(node) {
                    n.insert("id".into(), "the-same-id".into());
                }
            }
        }),
    ];
    let mut out = Vec::new();
    for (what, edit) in edits {
        let mut doc = v.clone();
        if !apply(&mut doc, edit) {
            return Vec::new();
        }
        out.push((what.to_string(), serde_json::to_vec_pretty(&doc).unwrap()));
    }
    out
}

/// A Claude Code session broken the ways real ones are: a line's
/// `parentUuid` missing, or naming a line that is not in the file; the last
/// message line forking from the first (a rewind to the start), so that an
/// operation removing it must not leave the abandoned branch last.
fn parent_uuid_variants(path: &Path) -> Vec<(String, Vec<u8>)> {
    use serde_json::{Map, Value};
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Option<Vec<Map<String, Value>>> =
        text.lines().map(|l| serde_json::from_str(l).ok()).collect();
    let Some(lines) = lines.filter(|ls| ls.iter().any(|l| l.contains_key("parentUuid"))) else {
        return Vec::new();
    };
    let linked: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].get("parentUuid").is_some_and(Value::is_string))
        .collect();
    let (Some(&mid), Some(&last)) = (linked.get(linked.len() / 2), linked.last()) else {
        return Vec::new();
    };
    let first = lines
        .iter()
        .find_map(|l| l.get("uuid").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    type Edit<'a> = (&'a str, usize, Value);
    let edits: [Edit<'_>; 3] = [
        ("parentUuid missing", mid, Value::Null),
        ("parentUuid to nowhere", mid, Value::from("gone")),
        ("the leaf on the root", last, Value::from(first)),
    ];
    edits
        .into_iter()
        .map(|(what, at, parent)| {
            let mut ls = lines.clone();
            ls[at].insert("parentUuid".into(), parent);
            let text: Vec<String> = ls
                .iter()
                .map(|l| serde_json::to_string(l).unwrap())
                .collect();
            (what.to_string(), (text.join("\n") + "\n").into_bytes())
        })
        .collect()
}

#[test]
fn every_message_kept_is_written_and_read_back() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in fixtures() {
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        checked += lost_messages(&name, std::fs::read(&path).unwrap(), &mut failures);
        let variants = parent_linked_variants(&path)
            .into_iter()
            .chain(parent_uuid_variants(&path));
        for (what, text) in variants {
            checked += lost_messages(&format!("{name} ({what})"), text, &mut failures);
        }
    }
    assert!(checked > 300, "only {checked} outputs checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The messages per conversation a file reads as, by `ctxclean stats`.
fn counted(bin: &str, path: &Path) -> Option<Vec<u64>> {
    let out = std::process::Command::new(bin)
        // Messages are counted alike by every tokenizer: the rough one
        // spares each run the vocabulary's build.
        .args(["stats", "--json", "--skip-invalid", "--tokenizer", "approx"])
        .arg(path)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(
        v["conversations"]
            .as_array()?
            .iter()
            .map(|c| c["messages"].as_u64().unwrap_or(0))
            .collect(),
    )
}

/// [`counted`] for many files in one run of `stats`, by file: `None`
/// when one of them does not read (then each is counted on its own).
fn counted_each(bin: &str, paths: &[&Path]) -> Option<HashMap<PathBuf, Vec<u64>>> {
    let out = std::process::Command::new(bin)
        .args([
            "stats",
            "--jsonl",
            "--skip-invalid",
            "--tokenizer",
            "approx",
        ])
        .args(paths)
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    let mut by_file: HashMap<PathBuf, Vec<u64>> = paths
        .iter()
        .map(|p| (p.to_path_buf(), Vec::new()))
        .collect();
    for line in out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).ok()?;
        let source = PathBuf::from(v["source"].as_str()?);
        by_file
            .get_mut(&source)?
            .push(v["messages"].as_u64().unwrap_or(0));
    }
    Some(by_file)
}

#[test]
fn no_conversion_or_filter_exits_0_with_messages_gone_unsaid() {
    no_command_exits_0_with_messages_gone_unsaid(&[
        &["convert"],
        &["filter", "--previous-cycles"],
        &["filter", "--exclude-roles", "system", "--drop-thinking"],
    ]);
}

#[test]
fn no_trim_compaction_or_summary_exits_0_with_messages_gone_unsaid() {
    no_command_exits_0_with_messages_gone_unsaid(&[
        &["trim", "--max-tokens", "40"],
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "0",
        ],
        &["summarize", "--threshold", "50", "--keep", "2"],
    ]);
}

/// Issue 29: every command over every fixture, as a user runs them; the
/// output must hold what the report says was kept. In two tests of three
/// commands each: each command is a process per fixture.
fn no_command_exits_0_with_messages_gone_unsaid(runs: &[&[&str]]) {
    let bin = env!("CARGO_BIN_EXE_ctxclean");
    let dir = crate::util::temp_dir("every-command");
    let files = fixtures();
    let failures = std::sync::Mutex::new(Vec::new());
    let checked = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for (w, chunk) in files.chunks(files.len().div_ceil(2)).enumerate() {
            let (dir, failures, checked) = (&dir, &failures, &checked);
            s.spawn(move || {
                // Each output written, with what its report says was kept.
                let mut written = Vec::new();
                for (f, path) in chunk.iter().enumerate() {
                    if counted(bin, path).is_none() {
                        continue; // not readable without --from
                    }
                    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("json");
                    for (k, run) in runs.iter().enumerate() {
                        let out = dir.join(format!("{w}-{f}-{k}.{ext}"));
                        let report = dir.join(format!("{w}-{f}-{k}.report.json"));
                        let done = std::process::Command::new(bin)
                            .args(*run)
                            .args(["-q", "--skip-invalid", "--tokenizer", "approx", "-o"])
                            .arg(&out)
                            .arg("--report")
                            .arg(&report)
                            .arg(path)
                            .output()
                            .unwrap();
                        if !done.status.success() {
                            continue; // a refusal, said and exit non-zero
                        }
                        checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let r: serde_json::Value =
                            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
                        let kept: Vec<u64> = r["conversations"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|c| c["after"]["messages"].as_u64().unwrap())
                            .collect();
                        written.push((
                            format!("{} | {}", path.display(), run.join(" ")),
                            out,
                            kept,
                        ));
                    }
                }
                // Read back in one run of `stats` (each file detected on
                // its own), not one per output.
                let outs: Vec<&Path> = written.iter().map(|(_, out, _)| out.as_path()).collect();
                let mut read = counted_each(bin, &outs);
                for (what, out, kept) in &written {
                    let got = match &mut read {
                        Some(by_file) => by_file.remove(out.as_path()),
                        None => counted(bin, out),
                    };
                    if got.as_ref() != Some(kept) {
                        failures.lock().unwrap().push(format!(
                            "{what}: the report keeps {kept:?}, the output reads {got:?}"
                        ));
                    }
                }
            });
        }
    });
    std::fs::remove_dir_all(&dir).unwrap();
    let failures = failures.into_inner().unwrap();
    assert!(checked.into_inner() > 150, "too few runs checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What an agent's next call no longer carries, the lines before its last
/// compaction, comes back byte for byte under every operation: an earlier
/// compaction's history included, and a compaction that is the last line
/// (issue 38).
#[test]
fn lines_before_the_last_compaction_come_back_byte_for_byte() {
    let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
    let is_compaction = |line: &str| {
        line.contains("\"compact_boundary\"") || line.contains("\"type\":\"compacted\"")
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in [
        "codex/compacted.jsonl",
        "codex/compacted-twice.jsonl",
        "claude-code/agent-sessions-small.jsonl",
        "claude-code/compact-boundary-last.jsonl",
    ] {
        let text = std::fs::read_to_string(crate::util::fixture(name)).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let last = lines.iter().rposition(|l| is_compaction(l)).unwrap();
        let compactions = lines.iter().filter(|l| is_compaction(l)).count();
        assert!(compactions >= 2, "{name}: {compactions} compactions");
        let doc = read_document(name, text.clone().into_bytes(), &ReadOptions::default()).unwrap();
        for (op, pipeline) in pipelines() {
            let mut d = doc.clone();
            pipeline.run(&mut d, &tok, false);
            let mut out = Vec::new();
            write_document(&d, &mut out).unwrap();
            let out = String::from_utf8(out).unwrap();
            let back: Vec<&str> = out.split_inclusive('\n').collect();
            checked += 1;
            if back.len() < last || back[..last] != lines[..last] {
                let at = (0..last)
                    .find(|&k| back.get(k) != lines.get(k))
                    .unwrap_or(last);
                failures.push(format!("{name} | {op}: line {} changed", at + 1));
            }
        }
    }
    assert_eq!(checked, 4 * pipelines().len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
