//! The modules form layers without loops. Between crates the compiler
//! holds it (`ctxclean-core` cannot name `ctxclean`); inside a crate this
//! test does: in `ctxclean-core` the ground (`transcript`, `error`, `json`,
//! `numbers`) imports nothing above it, the formats import no operation,
//! report or engine, and no two top-level modules reach each other,
//! however indirectly; the same holds of `ctxclean`'s library modules, of
//! the files and families of `format/`, and of the binary's `cmd/` and
//! `serve/`. Read from the `crate::` and `super::` paths (comments left
//! out), so a new import that closes a loop fails here, naming the loop.
//! No function of either crate runs over 120 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The binary's own modules: not the library's layers.
const BINARY: &[&str] = &["main", "run", "cmd", "serve"];

/// Imports nothing of the crate above the ground.
const GROUND: &[&str] = &["transcript", "error", "json", "numbers"];

/// A crate's `src/`: `ctxclean`'s (`""`) or `ctxclean-core`'s (`"core"`).
fn src_of(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join("src")
}

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

/// A crate's library module graph: who names whom (`crate::` paths, the
/// modules `ctxclean` names again from the core included).
fn graph_of(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = src_of(krate);
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

/// `ctxclean-core`'s module graph.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of("core")
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

/// The modules of a directory (`src/serve/`) and the siblings each names
/// through `super::` or its whole path (the parent, `mod.rs`, which wires
/// them, left out).
fn sibling_graph(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    // `src/stores` is `crate::stores`, `core/src/ops` `crate::ops`.
    let module = dir.rsplit('/').next().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
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
        // A sibling is named as `super::x` or by its whole path,
        // `crate::stores::x` (`crate::x` of another folder is not one).
        let renamed = text
            .replace(&format!("crate::{module}::"), "\u{1}")
            .replace("crate::", "")
            .replace("super::", "\u{1}")
            .replace('\u{1}', "crate::");
        let edges: BTreeSet<String> = referenced(&renamed)
            .into_iter()
            .filter(|n| n != name && names.contains(n))
            .collect();
        graph.insert(name.clone(), edges);
    }
    graph
}

/// The loops of a graph, each as its modules in order.
fn loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    graph
        .keys()
        .filter_map(|m| cycle_through(graph, m))
        .map(|path| path.join(" → "))
        .collect()
}

#[test]
fn the_binarys_and_libraries_folders_form_no_loop() {
    // Issue 41: serve's handle, log and shape imported each other through
    // `Body`.
    for (dir, known) in [
        ("src/serve", "handle"),
        ("src/cmd", "transform"),
        ("src/replay", "price"),
        ("src/stores", "database"),
        ("core/src/ops", "trim"),
        ("core/src/inflight", "holds"),
        ("core/src/recipe", "ops"),
        ("core/src/summary", "cache"),
    ] {
        let graph = sibling_graph(dir);
        assert!(graph.contains_key(known), "{dir} has no {known}");
        let found = loops(&graph);
        assert!(found.is_empty(), "loops in {dir}:\n{}", found.join("\n"));
    }
}

/// The graph of `format/`: its files, and its families as one node each
/// (`agents`, `requests`, ...), by what each names of the others
/// (`crate::format::x`, `super::x` from a file of `format/`,
/// `super::super::x` from a family's file; a format a family holds is
/// named at the top of `format` too, and counts as its family).
fn format_graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = src_of("core").join("format");
    let mut node_of: BTreeMap<String, String> = BTreeMap::new();
    let mut files: Vec<(String, PathBuf, bool)> = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            node_of.insert(stem.clone(), stem.clone());
            for inner in std::fs::read_dir(&path).unwrap() {
                let inner = inner.unwrap().path();
                let name = inner.file_stem().unwrap().to_str().unwrap().to_string();
                if name != "mod" {
                    node_of.insert(name, stem.clone());
                }
                files.push((stem.clone(), inner, true));
            }
        } else if stem != "mod" {
            node_of.insert(stem.clone(), stem.clone());
            files.push((stem, path, false));
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (node, path, in_family) in files {
        let text = code(&std::fs::read_to_string(&path).unwrap());
        // Only this crate's `format::` paths and the parent's names.
        let mut named = text.replace("crate::format::", "\u{1}");
        named = if in_family {
            named
                .replace("super::super::", "\u{1}")
                .replace("super::", "")
        } else {
            named.replace("super::", "\u{1}")
        };
        let named = named.replace("crate::", "").replace('\u{1}', "crate::");
        let edges = graph.entry(node.clone()).or_default();
        for name in referenced(&named) {
            match node_of.get(&name) {
                Some(n) if *n != node => {
                    edges.insert(n.clone());
                }
                _ => {}
            }
        }
    }
    graph
}

#[test]
fn the_formats_files_and_families_form_no_loop() {
    // Issue 55: dialect and convert named each other, and so did the
    // request formats and the answers, the request formats and the
    // datasets, read and split, the databases and their agents.
    let graph = format_graph();
    for node in [
        "read", "dialect", "convert", "agents", "requests", "datasets",
    ] {
        assert!(graph.contains_key(node), "format/ has no {node}");
    }
    assert!(graph["read"].contains("detect"), "{graph:?}");
    let found = loops(&graph);
    assert!(found.is_empty(), "loops in format/:\n{}", found.join("\n"));
}

#[test]
fn ctxclean_s_library_modules_form_no_loop() {
    let graph = graph_of("");
    assert!(graph.contains_key("batch") && graph.contains_key("replay"));
    let found = loops(&graph);
    assert!(found.is_empty(), "module loops:\n{}", found.join("\n"));
}

#[test]
fn the_core_modules_form_no_loop() {
    let graph = graph();
    assert!(graph.contains_key("transcript") && graph.contains_key("format"));
    let found = loops(&graph);
    assert!(found.is_empty(), "module loops:\n{}", found.join("\n"));
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
    let mut files = Vec::new();
    rust_files(&src_of(""), &mut files);
    rust_files(&src_of("core"), &mut files);
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
