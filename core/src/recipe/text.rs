//! Recipes: a TOML file of `[[step]]` tables, each the flags of one
//! command keyed by their long names, read as the command-line words of
//! each step, with the line of each key for errors.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Context;
use clap::{ArgAction, CommandFactory};

use super::UsageError;
use crate::cli::Cli;

/// Where each key of a step is, for errors.
pub struct StepLines {
    /// The line of `[[step]]`.
    table: usize,
    /// Each key's line.
    keys: Vec<(String, usize)>,
}

/// The recipe file at `path`: its steps as command-line words, with
/// where they are.
pub fn read_recipe(path: &Path) -> anyhow::Result<Vec<(StepLines, Vec<OsString>)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    read_text(path, &text)
}

/// A recipe's text (`path` names it in errors): its steps as command-line
/// words, with where they are.
pub fn read_text(path: &Path, text: &str) -> anyhow::Result<Vec<(StepLines, Vec<OsString>)>> {
    let at = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map_or(1, |s| at(s.start));
        UsageError(format!("{}:{line}: {}", path.display(), e.message()))
    })?;
    let lines = key_lines(text);
    for key in doc.keys() {
        if key != "step" {
            let line = lines
                .top
                .iter()
                .find(|(k, _)| k == key)
                .map_or(1, |(_, l)| *l);
            return Err(UsageError(format!(
                "{}:{line}: unknown key \"{key}\": a recipe holds [[step]] tables",
                path.display()
            ))
            .into());
        }
    }
    let Some(steps) = doc.get("step").and_then(toml::Value::as_array) else {
        return Err(UsageError(format!("{}: no [[step]] tables", path.display())).into());
    };
    let mut out = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let where_ = lines.steps.get(k).map(|s| s.table).unwrap_or(1);
        let here = StepLines {
            table: where_,
            keys: lines
                .steps
                .get(k)
                .map(|s| s.keys.clone())
                .unwrap_or_default(),
        };
        let line_of = |key: &str| {
            here.keys
                .iter()
                .find(|(k, _)| k == key)
                .map_or(here.table, |(_, l)| *l)
        };
        let Some(table) = step.as_table() else {
            return Err(UsageError(format!(
                "{}:{where_}: a step must be a table",
                path.display()
            ))
            .into());
        };
        let Some(op) = table.get("op").and_then(toml::Value::as_str) else {
            return Err(UsageError(format!(
                "{}:{where_}: step {} has no op = \"…\" (filter, compact-tools, trim, summarize, convert, stats)",
                path.display(),
                k + 1
            ))
            .into());
        };
        // Where output goes is the command line's to say, never a recipe's:
        // one shared by someone else could rewrite the inputs or any file.
        if let Some(key) = table
            .keys()
            .find(|k| OUTPUT_KEYS.contains(&k.replace('_', "-").as_str()))
        {
            return Err(UsageError(format!(
                "{}:{}: \"{key}\" says where output goes, which a recipe may not: give --{} on the command line",
                path.display(),
                line_of(key),
                key.replace('_', "-")
            ))
            .into());
        }
        let cmd = Cli::command();
        let Some(sub) = cmd.find_subcommand(op) else {
            return Err(UsageError(format!(
                "{}:{}: unknown op \"{op}\"",
                path.display(),
                line_of("op")
            ))
            .into());
        };
        let at = |key: &str| format!("{}:{}", path.display(), line_of(key));
        let argv = step_argv(op, sub, table, &at)?;
        out.push((here, argv));
    }
    Ok(out)
}

/// The keys of the flags that choose which files a run writes: refused in
/// recipe files.
const OUTPUT_KEYS: [&str; 7] = [
    "in-place",
    "out-dir",
    "output",
    "backup",
    "report",
    "report-jsonl",
    "save-recipe",
];

/// Steps given as tables (`{"op": "trim", "max-tokens": 8000}`, a key's
/// `_` read as `-`), as command-line words; errors name the step.
pub fn read_tables(steps: &[toml::Table]) -> anyhow::Result<Vec<Vec<OsString>>> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let table: toml::Table = step
            .iter()
            .map(|(key, v)| (key.replace('_', "-"), v.clone()))
            .collect();
        let Some(op) = table.get("op").and_then(toml::Value::as_str) else {
            return Err(UsageError(format!(
                "step {}: no \"op\" (filter, compact-tools, trim, summarize, convert)",
                k + 1
            ))
            .into());
        };
        let Some(sub) = cmd.find_subcommand(op) else {
            return Err(UsageError(format!("step {}: unknown op \"{op}\"", k + 1)).into());
        };
        let at = |_: &str| format!("step {}", k + 1);
        out.push(step_argv(op, sub, &table, &at)?);
    }
    Ok(out)
}

/// A recipe step's table as the command line of its op: `key = value` as
/// `--key value`, a list as the flag repeated, `true` as the flag alone.
fn step_argv(
    op: &str,
    sub: &clap::Command,
    table: &toml::Table,
    at: &dyn Fn(&str) -> String,
) -> anyhow::Result<Vec<OsString>> {
    let mut argv: Vec<OsString> = vec![op.into()];
    for (key, value) in table {
        if key == "op" {
            continue;
        }
        let arg = sub
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()));
        let Some(arg) = arg else {
            return Err(UsageError(format!("{}: unknown key \"{key}\" for {op}", at(key))).into());
        };
        let bad = |what: &str| -> anyhow::Error {
            UsageError(format!("{}: {key} = {value}: {what}", at(key))).into()
        };
        let scalar = |v: &toml::Value| -> Option<String> {
            match v {
                toml::Value::String(s) => Some(s.clone()),
                toml::Value::Integer(i) => Some(i.to_string()),
                toml::Value::Float(f) => Some(f.to_string()),
                _ => None,
            }
        };
        match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(true)) => {
                argv.push(format!("--{key}").into())
            }
            (ArgAction::SetTrue, toml::Value::Boolean(false)) => {}
            (ArgAction::SetTrue, _) => return Err(bad("expected true or false")),
            (_, toml::Value::Array(items)) => {
                for item in items {
                    let v =
                        scalar(item).ok_or_else(|| bad("a list of strings or numbers expected"))?;
                    push_flag(&mut argv, key, v);
                }
            }
            (_, v) => {
                let v = scalar(v).ok_or_else(|| bad("expected a string or a number"))?;
                push_flag(&mut argv, key, v);
            }
        }
    }
    Ok(argv)
}

/// `--key value`, or `--key=value` for a value starting with `-`
/// (`max-tokens = -3`), which would otherwise read as a flag of its own.
fn push_flag(argv: &mut Vec<OsString>, key: &str, value: String) {
    if value.starts_with('-') {
        argv.push(format!("--{key}={value}").into());
    } else {
        argv.push(format!("--{key}").into());
        argv.push(value.into());
    }
}

/// A clap error for a recipe step, located at the key it is about.
pub fn recipe_error(path: &Path, lines: &StepLines, e: &clap::Error) -> anyhow::Error {
    use clap::error::{ContextKind, ContextValue};
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    let key = arg
        .as_deref()
        .and_then(|a| a.strip_prefix("--"))
        .map(|a| a.split([' ', '=']).next().unwrap_or(a).to_string());
    let line = key
        .as_deref()
        .and_then(|k| lines.keys.iter().find(|(x, _)| x == k).map(|(_, l)| *l))
        .unwrap_or(lines.table);
    let message = first_line(&e.to_string());
    match key {
        Some(k) => UsageError(format!("{}:{line}: {k}: {message}", path.display())).into(),
        None => UsageError(format!("{}:{line}: {message}", path.display())).into(),
    }
}

/// Where keys are in a recipe's text: top-level keys, and per `[[step]]`
/// its line and its keys' lines.
struct KeyLines {
    top: Vec<(String, usize)>,
    steps: Vec<StepLines>,
}

fn key_lines(text: &str) -> KeyLines {
    let mut top = Vec::new();
    let mut steps: Vec<StepLines> = Vec::new();
    let mut in_step = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("[[") {
            in_step = line.trim_start_matches("[[").trim_end_matches("]]").trim() == "step";
            if in_step {
                steps.push(StepLines {
                    table: i + 1,
                    keys: Vec::new(),
                });
            }
            continue;
        }
        if line.starts_with('[') {
            in_step = false;
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        if line.starts_with('#') {
            continue;
        }
        let key = key.trim().trim_matches('"').trim_matches('\'').to_string();
        match steps.last_mut() {
            Some(step) if in_step => step.keys.push((key, i + 1)),
            _ => top.push((key, i + 1)),
        }
    }
    KeyLines { top, steps }
}

/// A recipe file's steps as command-line words, each checked as its
/// command's flags (an error names the file and the line of the key).
pub fn checked_steps(path: &Path, text: &str) -> anyhow::Result<Vec<Vec<OsString>>> {
    let mut out = Vec::new();
    for (lines, argv) in read_text(path, text)? {
        let full = std::iter::once(OsString::from("ctxclean")).chain(argv.iter().cloned());
        Cli::command()
            .try_get_matches_from(full)
            .map_err(|e| recipe_error(path, &lines, &e))?;
        out.push(argv);
    }
    Ok(out)
}

/// A clap error in one line: its message and what it lists (the
/// arguments missing), without `error: ` and the usage.
pub fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let mut parts = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            parts.push(line.trim_start_matches("error: "));
        }
    }
    parts.join(" ")
}

/// The first line of a clap error, without its `error: `.
pub fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_string()
}
