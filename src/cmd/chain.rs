//! Chains and recipes: several transforming commands in one pass.
//!
//! `ctxclean filter --previous-cycles then trim --max-tokens 8000 logs/`
//! is split at each `then` into segments, each parsed as the command it
//! names. The flags every command shares (inputs, how they are read, where
//! the output goes, the report) may stand in any segment and apply to the
//! whole run; given in two segments with different values, they are a usage
//! error. A recipe (`ctxclean apply RECIPE`) is the same chain in a TOML
//! file, one `[[step]]` table per segment, keyed by the flags' long names.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches};

use super::transform::{transform, Run};
use super::UsageError;
use crate::cli::{ApplyArgs, Cli, Command, ConvertArgs, InputArgs, StatsArgs};
use ctxclean::recipe::text::{first_line, read_recipe, recipe_error};

/// What the command line asks for.
pub(crate) enum Invocation {
    /// One command, with its matches.
    One(Box<Cli>, ArgMatches),
    /// Commands joined by `then`.
    Chain(Vec<Segment>),
}

/// One step of a chain: its command, parsed, and the matches of its flags.
pub(crate) struct Segment {
    command: Command,
    matches: ArgMatches,
}

impl Segment {
    /// A segment from a parsed command and the matches of the whole line.
    pub(crate) fn new(command: Command, matches: ArgMatches) -> Segment {
        let matches = matches
            .subcommand()
            .map(|(_, m)| m.clone())
            .unwrap_or(matches);
        Segment { command, matches }
    }

    fn name(&self) -> &'static str {
        name_of(&self.command)
    }
}

/// The command line's name for a command.
fn name_of(command: &Command) -> &'static str {
    match command {
        Command::Stats(_) => "stats",
        Command::Filter(_) => "filter",
        Command::CompactTools(_) => "compact-tools",
        Command::Trim(_) => "trim",
        Command::Summarize(_) => "summarize",
        Command::Validate(_) => "validate",
        Command::Convert(_) => "convert",
        Command::Apply(_) => "apply",
        Command::Serve(_) => "serve",
        Command::Replay(_) => "replay",
        Command::Bill(_) => "bill",
        Command::Completions(_) => "completions",
        Command::Man(_) => "man",
        Command::CacheUnits(_) => "cache-units",
    }
}

/// Parses the command line: one command, or a chain. A parse error exits
/// the way clap does (usage, exit 2).
pub(crate) fn parse(args: Vec<OsString>) -> Invocation {
    let mut segments: Vec<Vec<OsString>> = vec![Vec::new()];
    // `serve` and `replay` take their chain after `--`, whole.
    let serve = args.get(1).is_some_and(|a| a == "serve" || a == "replay");
    for a in args.into_iter().skip(1) {
        if a == "then" && !serve {
            segments.push(Vec::new());
        } else {
            segments.last_mut().expect("one at least").push(a);
        }
    }
    let parse_one = |seg: Vec<OsString>| -> (Cli, ArgMatches) {
        let argv = std::iter::once(OsString::from("ctxclean")).chain(seg);
        let matches = Cli::command().get_matches_from(argv);
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        (cli, matches)
    };
    if segments.len() == 1 {
        let (cli, matches) = parse_one(segments.pop().expect("one"));
        return Invocation::One(Box::new(cli), matches);
    }
    // `then stats` takes no output flags of its own: those given there
    // belong to the run, and are read as a `convert` step's (which runs
    // nothing).
    let mut split = Vec::new();
    for seg in segments {
        if seg.first().is_some_and(|w| w == "stats") {
            let (own, output) = output_words(seg);
            if !output.is_empty() {
                split.push(
                    std::iter::once(OsString::from("convert"))
                        .chain(output)
                        .collect(),
                );
            }
            split.push(own);
        } else {
            split.push(seg);
        }
    }
    let segments = split;
    Invocation::Chain(
        segments
            .into_iter()
            .map(|seg| {
                let (cli, matches) = parse_one(seg);
                Segment::new(cli.command, matches)
            })
            .collect(),
    )
}

/// Splits the words of a `stats` step into its own and the output flags
/// (with their values).
fn output_words(seg: Vec<OsString>) -> (Vec<OsString>, Vec<OsString>) {
    const WITH_VALUE: [&str; 8] = [
        "-o",
        "--output",
        "--out-dir",
        "--backup",
        "--report",
        "--report-jsonl",
        "--to",
        "--save-recipe",
    ];
    const FLAGS: [&str; 4] = ["--in-place", "-q", "--quiet", "--strict"];
    let (mut own, mut output) = (Vec::new(), Vec::new());
    let mut words = seg.into_iter();
    while let Some(w) = words.next() {
        let s = w.to_string_lossy();
        let name = s.split('=').next().unwrap_or("");
        if WITH_VALUE.contains(&name) {
            let inline = s.contains('=');
            output.push(w);
            if !inline {
                output.extend(words.next());
            }
        } else if FLAGS.contains(&s.as_ref()) {
            output.push(w);
        } else {
            own.push(w);
        }
    }
    (own, output)
}

/// The ids of the flags every transforming command shares (inputs, reading,
/// output, report), taken from `convert`, which has only those.
fn shared_ids() -> Vec<String> {
    let cmd = Cli::command();
    let convert = cmd.find_subcommand("convert").expect("convert exists");
    convert
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|id| id != "help" && id != "version")
        .collect()
}

/// The command-line words of the flags in `matches` that were given on the
/// command line (not defaulted), for `ids` (or all but `ids` when `except`).
fn given(
    command: &str,
    matches: &ArgMatches,
    ids: &[String],
    except: bool,
) -> Vec<(String, Vec<OsString>)> {
    let cmd = Cli::command();
    let Some(sub) = cmd.find_subcommand(command) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for arg in sub.get_arguments() {
        let id = arg.get_id().as_str();
        if ids.iter().any(|i| i == id) == except || id == "help" || id == "version" {
            continue;
        }
        if matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let mut words = Vec::new();
        match (arg.get_long(), arg.get_action()) {
            (Some(long), ArgAction::SetTrue) => words.push(format!("--{long}").into()),
            (Some(long), _) => {
                for v in matches.get_raw(id).into_iter().flatten() {
                    words.push(format!("--{long}").into());
                    words.push(v.to_os_string());
                }
            }
            (None, _) => words.extend(
                matches
                    .get_raw(id)
                    .into_iter()
                    .flatten()
                    .map(|v| v.to_os_string()),
            ),
        }
        out.push((id.to_string(), words));
    }
    out
}

/// Runs a chain (a command alone is a chain of one). `extra` are shared
/// flags from elsewhere (`apply`'s command line), as `(id, words, where)`.
pub(crate) fn run(
    segments: Vec<Segment>,
    extra: Vec<(String, Vec<OsString>, String)>,
) -> anyhow::Result<()> {
    transform(plan(segments, extra)?)
}

/// The run a chain asks for: its steps checked, the flags of the run
/// merged from every step, the pipeline built.
pub(crate) fn plan(
    segments: Vec<Segment>,
    extra: Vec<(String, Vec<OsString>, String)>,
) -> anyhow::Result<Run> {
    let n = segments.len();
    let mut stats: Option<StatsArgs> = None;
    for (k, s) in segments.iter().enumerate() {
        match &s.command {
            Command::Filter(_) | Command::CompactTools(_) | Command::Trim(_) | Command::Summarize(_) => {}
            Command::Convert(_) if n > 1 => {}
            Command::Convert(_) => {}
            Command::Stats(a) if k == n - 1 && n > 1 => {
                super::stats::spec(a)?;
                stats = Some(a.clone())
            }
            Command::Stats(_) => {
                return Err(UsageError("stats may end a chain (`then stats`), nowhere else".into()).into())
            }
            other => {
                return Err(UsageError(format!(
                    "{} cannot be a step of a chain: filter, compact-tools, trim, summarize and convert can (and stats at the end)",
                    name_of(other)
                ))
                .into())
            }
        }
    }
    // The shared flags: from whichever step gives them, once.
    let ids = shared_ids();
    let mut shared: Vec<(String, Vec<OsString>, String)> = extra;
    for s in &segments {
        for (id, words) in given(s.name(), &s.matches, &ids, false) {
            shared.push((id, words, s.name().to_string()));
        }
    }
    let mut argv: Vec<OsString> = vec!["ctxclean".into(), "convert".into()];
    let mut positional: Vec<OsString> = Vec::new();
    let mut seen: Vec<(String, Vec<OsString>, String)> = Vec::new();
    for (id, words, at) in shared {
        if let Some((_, first, first_at)) = seen.iter().find(|(i, _, _)| *i == id) {
            if *first != words {
                let show = |w: &[OsString]| {
                    w.iter()
                        .map(|x| x.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                return Err(UsageError(format!(
                    "{} given twice with different values: `{}` ({first_at}) and `{}` ({at})",
                    if id == "inputs" {
                        "inputs".to_string()
                    } else {
                        format!("--{}", id.replace('_', "-"))
                    },
                    show(first),
                    show(&words)
                ))
                .into());
            }
            continue;
        }
        if id == "inputs" {
            positional.extend(words.iter().cloned());
        } else {
            argv.extend(words.iter().cloned());
        }
        seen.push((id, words, at));
    }
    argv.push("--".into());
    argv.extend(positional);
    let merged = Cli::command()
        .try_get_matches_from(&argv)
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| UsageError(first_line(&e.to_string())))?;
    let Command::Convert(ConvertArgs { input, output }) = merged.command else {
        unreachable!("parsed as convert");
    };
    // Written by `transform` once the paths are checked: never over an
    // input, the output or a report.
    let recipe = output
        .save_recipe
        .as_ref()
        .map(|_| recipe_text(&segments, &ids));
    let (model, _) = super::model_and_encoding(&input)?;
    let mut pipeline = ctxclean::ops::Pipeline::new();
    let mut names = Vec::new();
    for s in &segments {
        if let Some(op) =
            ctxclean::recipe::ops::operation(&s.command, &output, model.as_ref(), &|e| {
                super::ops::spinning(e, output.quiet)
            })?
        {
            pipeline.push_boxed(op);
        }
        if !matches!(s.command, Command::Stats(_)) {
            names.push(s.name());
        }
    }
    // `convert` steps run nothing: a chain of them is one convert.
    let name = if pipeline.names().len() > 1 {
        pipeline.names().join("→")
    } else {
        names
            .iter()
            .copied()
            .find(|n| *n != "convert")
            .unwrap_or("convert")
            .to_string()
    };
    let reads = reads_of(&segments, &input);
    Ok(Run {
        name,
        input,
        output,
        pipeline,
        stats,
        recipe,
        reads,
    })
}

/// The files a chain reads besides its inputs: `--prices`, a Hugging Face
/// tokenizer, a summary prompt.
fn reads_of(segments: &[Segment], input: &InputArgs) -> Vec<(String, PathBuf)> {
    let mut reads = Vec::new();
    if let Some(p) = &input.prices {
        reads.push(("the --prices file".to_string(), p.clone()));
    }
    if let Some(crate::cli::TokenizerChoice::Hf(p)) = &input.tokenizer {
        reads.push(("the tokenizer".to_string(), p.clone()));
    }
    for s in segments {
        if let Command::Summarize(a) = &s.command {
            if let Some(p) = &a.prompt_file {
                reads.push(("the --prompt-file".to_string(), p.clone()));
            }
        }
    }
    reads
}

/// The steps of a chain for requests in flight, from its words (`filter
/// --previous-cycles then trim --max-tokens 100000`), as `replay
/// --suggest` writes them as a recipe; `trim` cuts in steps of half its
/// budget unless --step says otherwise. Errors are usage errors.
pub(crate) fn serve_steps(chain: &[OsString]) -> anyhow::Result<Vec<Segment>> {
    let mut segments = Vec::new();
    for words in chain.split(|w| w == "then") {
        let full = std::iter::once(OsString::from("ctxclean")).chain(words.iter().cloned());
        let m = Cli::command().try_get_matches_from(full).map_err(|e| {
            UsageError(format!(
                "the chain after --: {}",
                first_line(&e.to_string())
            ))
        })?;
        let cli = Cli::from_arg_matches(&m).map_err(|e| UsageError(first_line(&e.to_string())))?;
        segments.push(Segment::new(cli.command, m));
    }
    for s in &mut segments {
        match &mut s.command {
            Command::Trim(a) => a.step_by_default = true,
            Command::Filter(_)
            | Command::CompactTools(_)
            | Command::Summarize(_)
            | Command::Convert(_) => {}
            other => {
                return Err(UsageError(format!(
                    "serve runs filter, compact-tools, trim, summarize; not {}",
                    name_of(other)
                ))
                .into())
            }
        }
    }
    Ok(segments)
}

use std::io::Write as _;

/// A recipe holding the steps of `segments` (their own flags; shared flags
/// stay on the command line).
pub(crate) fn recipe_text(segments: &[Segment], shared: &[String]) -> String {
    let mut out = String::from(
        "# A ctxclean recipe: run it with `ctxclean apply THIS_FILE [INPUTS] [OUTPUT FLAGS]`.\n",
    );
    // The shared flags that change what comes out go into the recipe, in
    // the step that gave them; the rest (inputs, where output goes) stay on
    // the command line.
    const SAVED: [&str; 6] = ["from", "tokenizer", "model", "to", "strict", "skip_invalid"];
    let shared: Vec<String> = shared
        .iter()
        .filter(|id| !SAVED.contains(&id.as_str()))
        .cloned()
        .collect();
    let shared = shared.as_slice();
    let cmd = Cli::command();
    for s in segments {
        out.push_str("\n[[step]]\n");
        out.push_str(&format!("op = {}\n", toml_string(s.name())));
        let Some(sub) = cmd.find_subcommand(s.name()) else {
            continue;
        };
        for (id, _) in given(s.name(), &s.matches, shared, true) {
            let Some(arg) = sub.get_arguments().find(|a| a.get_id() == id.as_str()) else {
                continue;
            };
            let Some(long) = arg.get_long() else { continue };
            if matches!(arg.get_action(), ArgAction::SetTrue) {
                out.push_str(&format!("{long} = true\n"));
                continue;
            }
            let values: Vec<String> = s
                .matches
                .get_raw(id.as_str())
                .into_iter()
                .flatten()
                .map(|v| toml_scalar(&v.to_string_lossy()))
                .collect();
            match values.as_slice() {
                [one] if !matches!(arg.get_action(), ArgAction::Append) => {
                    out.push_str(&format!("{long} = {one}\n"))
                }
                many => out.push_str(&format!("{long} = [{}]\n", many.join(", "))),
            }
        }
    }
    out
}

/// A value as TOML: an integer or a float when it reads as one, else a
/// string.
fn toml_scalar(v: &str) -> String {
    if v.parse::<i64>().is_ok() && !v.starts_with('+') && !(v.len() > 1 && v.starts_with('0')) {
        return v.to_string();
    }
    if v.parse::<f64>().is_ok() && v.contains('.') && !v.starts_with('.') && !v.ends_with('.') {
        return v.to_string();
    }
    toml_string(v)
}

fn toml_string(v: &str) -> String {
    toml::Value::String(v.to_string()).to_string()
}

/// `ctxclean apply RECIPE`: the recipe's steps, with the command line's
/// inputs and output flags.
pub(crate) fn apply(args: ApplyArgs, matches: ArgMatches) -> anyhow::Result<()> {
    let steps = read_recipe(&args.recipe)?;
    if args.print_chain {
        let mut words: Vec<String> = vec!["ctxclean".into()];
        for (k, (_, argv)) in steps.iter().enumerate() {
            if k > 0 {
                words.push("then".into());
            }
            words.extend(argv.iter().map(|w| shell_quote(&w.to_string_lossy())));
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", words.join(" ")).context("writing to standard output")?;
        return Ok(());
    }
    let mut segments = Vec::new();
    for (line, argv) in steps {
        let full = std::iter::once(OsString::from("ctxclean")).chain(argv.iter().cloned());
        let m = Cli::command()
            .try_get_matches_from(full)
            .map_err(|e| recipe_error(&args.recipe, &line, &e))?;
        let cli = Cli::from_arg_matches(&m).map_err(|e| recipe_error(&args.recipe, &line, &e))?;
        segments.push(Segment::new(cli.command, m));
    }
    let sub = matches
        .subcommand()
        .map(|(_, m)| m.clone())
        .unwrap_or(matches);
    let extra = given("apply", &sub, &shared_ids(), false)
        .into_iter()
        .map(|(id, w)| (id, w, "the command line".to_string()))
        .collect();
    let mut run = plan(segments, extra)?;
    run.reads.push((
        format!("the recipe {}", args.recipe.display()),
        args.recipe.clone(),
    ));
    transform(run)
}

/// A word as a POSIX shell reads it back.
fn shell_quote(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}
