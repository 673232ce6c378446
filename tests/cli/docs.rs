//! The docs cannot drift: every command of a ```` ```sh runnable ```` block
//! in README.md, ARCHITECTURE.md and docs/ runs here, from a copy of the
//! repository's `fixtures/` and `examples/`, with this build's `ctxclean`
//! first on PATH. A command exits 0 unless its line ends with
//! `# exit N`. Blocks that need a server, Spark or a second build are plain
//! ```` ```sh ```` blocks and say so in the text around them.

use std::path::{Path, PathBuf};

use crate::util::temp_dir;

/// One command of a runnable block: where it is, the command, the exit
/// code it must give.
#[derive(Debug, PartialEq)]
struct Example {
    place: String,
    command: String,
    exit: i32,
}

/// The runnable examples of a Markdown text (`name` says where they are).
fn examples(name: &str, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut runnable = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(info) = line.strip_prefix("```") {
            runnable = !runnable && info.trim() == "sh runnable";
            continue;
        }
        if !runnable {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        if let Some(head) = line.strip_suffix('\\') {
            joined.push_str(head);
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(line);
        let trimmed = joined.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let exit = match trimmed.rsplit_once("# exit ") {
            Some((_, code)) => code
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            None => 0,
        };
        out.push(Example {
            place: format!("{name}:{start}"),
            command: trimmed.to_string(),
            exit,
        });
    }
    out
}

fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn every_runnable_example_in_the_docs_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = Path::new(env!("CARGO_BIN_EXE_ctxclean")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    let mut failed = Vec::new();
    for file in doc_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            panic!("{} is missing", file.display());
        };
        let name = file.strip_prefix(root).unwrap().display().to_string();
        let list = examples(&name, &text);
        if list.is_empty() {
            continue;
        }
        // Each file's examples share a fresh copy, in order (a later one may
        // read what an earlier one wrote).
        let dir = temp_dir(&format!("docs-{}", name.replace('/', "-")));
        copy_tree(&root.join("fixtures"), &dir.join("fixtures"));
        copy_tree(&root.join("examples"), &dir.join("examples"));
        for ex in list {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&ex.command)
                .current_dir(&*dir)
                .env("PATH", &path)
                .env("CTXCLEAN_PROGRESS_DELAY_MS", "100000")
                .output()
                .unwrap();
            ran += 1;
            if out.status.code() != Some(ex.exit) {
                failed.push(format!(
                    "{}: `{}` exited {:?}, not {}:\n{}",
                    ex.place,
                    ex.command,
                    out.status.code(),
                    ex.exit,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(ran >= 30, "only {ran} examples ran");
}

#[test]
fn examples_are_read_with_their_exit_codes_and_continuations() {
    let text = "a\n```sh runnable\n# a comment\nctxclean stats x \\\n  --json\nctxclean validate y   # exit 1: bad\n```\n```sh\nnot run\n```\n";
    let found = examples("T.md", text);
    assert_eq!(
        found,
        [
            Example {
                place: "T.md:4".into(),
                command: "ctxclean stats x   --json".into(),
                exit: 0
            },
            Example {
                place: "T.md:6".into(),
                command: "ctxclean validate y   # exit 1: bad".into(),
                exit: 1
            },
        ]
    );
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_link_between_the_docs_leads_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let here = file.parent().unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = &rest[..end];
            if link.starts_with("http") || link.contains(' ') {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                here.join(path)
            };
            let shown = format!("{}: ({link})", file.strip_prefix(root).unwrap().display());
            if !target.exists() {
                broken.push(format!("{shown}: no such file"));
            } else if !anchor.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let to = std::fs::read_to_string(&target).unwrap();
                if !anchors(&to).iter().any(|a| a == anchor) {
                    broken.push(format!("{shown}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert_eq!(slug("`ctxclean stats`"), "ctxclean-stats");
    assert_eq!(slug("Spark (`bench/spark.py`)"), "spark-benchsparkpy");
}

#[test]
fn the_readme_is_a_guide_not_a_reference() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let lines = text.unwrap().lines().count();
    assert!(
        lines <= 600,
        "README.md has {lines} lines: reference material goes to docs/"
    );
}
