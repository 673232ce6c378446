//! The library's modules form layers without loops: the ground
//! (`transcript`, `error`, `io`, `json`, `numbers`) imports nothing above it,
//! the formats import no operation, report or engine, and no two top-level
//! modules reach each other, however indirectly. Read from the `crate::`
//! paths of `src/` (comments left out), so a new import that closes a loop
//! fails here, naming the loop. No function of `src/` runs over 120 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The binary's own modules: not the library's layers.
const BINARY: &[&str] = &["main", "run", "cmd", "serve"];

/// Imports nothing of the crate above the ground.
const GROUND: &[&str] = &["transcript", "error", "io", "json", "numbers"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`format` for
/// `src/format/read.rs`), or `None` for `lib.rs`.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib").then_some(name)
}

/// The code of a file without its comments (line comments, doc comments).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names through `crate::`, grouped imports
/// (`use crate::{a, b::c}`) included.
fn referenced(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 && {
            let b = code.as_bytes()[i - 1];
            b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
        } {
            continue; // `ctxclean::`, `$crate::`: not this crate's path
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

/// The library's module graph: who names whom.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = top_module(&src, &file) else {
            continue;
        };
        if BINARY.contains(&module.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let edges = graph.entry(module.clone()).or_default();
        for name in referenced(&code(&text)) {
            if name != module && name != "self" && name != "super" {
                edges.insert(name);
            }
        }
    }
    graph
}

/// A loop through `start`, if there is one: its modules in order.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                let mut path = path.clone();
                path.push(start.to_string());
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

/// The modules of one of the binary's directories (`src/serve/`) and the
/// siblings each names through `super::` (the parent, `mod.rs`, which
/// wires them, left out).
fn sibling_graph(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let names: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.extension().is_some_and(|x| x == "rs") && stem != "mod").then_some(stem)
        })
        .collect();
    let mut graph = BTreeMap::new();
    for name in &names {
        let text = code(&std::fs::read_to_string(dir.join(format!("{name}.rs"))).unwrap());
        let renamed = text.replace("super::", "crate::");
        let edges: BTreeSet<String> = referenced(&renamed)
            .into_iter()
            .filter(|n| n != name && names.contains(n))
            .collect();
        graph.insert(name.clone(), edges);
    }
    graph
}

#[test]
fn the_proxys_modules_form_no_loop() {
    // Issue 41: handle, log and shape imported each other through `Body`.
    let graph = sibling_graph("serve");
    assert!(graph.contains_key("handle") && graph.contains_key("log"));
    let loops: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_through(&graph, m))
        .map(|path| path.join(" → "))
        .collect();
    assert!(
        loops.is_empty(),
        "loops in src/serve:\n{}",
        loops.join("\n")
    );
}

#[test]
fn the_library_modules_form_no_loop() {
    let graph = graph();
    assert!(graph.contains_key("transcript") && graph.contains_key("format"));
    let loops: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_through(&graph, m))
        .map(|path| path.join(" → "))
        .collect();
    assert!(loops.is_empty(), "module loops:\n{}", loops.join("\n"));
}

#[test]
fn the_ground_imports_nothing_above_it() {
    let graph = graph();
    for module in GROUND {
        let above: Vec<&String> = graph[*module]
            .iter()
            .filter(|m| !GROUND.contains(&m.as_str()))
            .collect();
        assert!(above.is_empty(), "{module} reaches up into {above:?}");
    }
}

#[test]
fn formats_import_no_operation_report_or_engine() {
    let graph = graph();
    let up: Vec<&String> = graph["format"]
        .iter()
        .filter(|m| ["ops", "report", "stats", "engine", "summary"].contains(&m.as_str()))
        .collect();
    assert!(up.is_empty(), "format reaches up into {up:?}");
}

#[test]
fn the_check_sees_loops_and_grouped_imports() {
    let code = code("use crate::{a, b::c};\n// crate::d\nlet x = crate::e::f(); // crate::g\n");
    let names: Vec<String> = referenced(&code).into_iter().collect();
    assert_eq!(names, ["a", "b", "e"]);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("a".into());
    assert_eq!(cycle_through(&g, "a").unwrap(), ["a", "b", "a"]);
}

/// The lines of each function of `text` whose body runs from its `fn` line
/// to the `}` at the same indentation: `(name, first line, lines)`.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let bare = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ]
        .iter()
        .fold(trimmed, |t, p| t.strip_prefix(p).unwrap_or(t));
        let Some(rest) = bare.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A declaration without a body (a trait's) ends with `;`.
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let close = (open + 1..lines.len()).find(|&j| {
            let l = lines[j];
            l.len() - l.trim_start().len() == indent && l.trim_start().starts_with('}')
        });
        if let Some(close) = close {
            out.push((name, i + 1, close - i + 1));
        }
    }
    out
}

#[test]
fn no_function_in_src_is_over_120_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (name, line, n) in function_lengths(&text) {
            if n > 120 {
                long.push(format!("{}:{line}: {name}, {n} lines", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over 120 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn function_lengths_are_counted_from_fn_to_its_brace() {
    let text = "fn a() {\n    let x = 1;\n}\n\nimpl T {\n    pub(crate) fn b(\n        y: u8,\n    ) -> u8 {\n        y\n    }\n    fn c();\n}\n";
    let found = function_lengths(text);
    assert_eq!(found, [("a".to_string(), 1, 3), ("b".to_string(), 6, 5)]);
}
