//! The shared path of every transforming command and chain, as its stages:
//! set up (flags checked, model, tokenizer, inputs, target), clean each
//! input with the library's [`Engine`], write the output ([`Sinks`]), count
//! and tell ([`Accounts`]), and end with the report and the summary line.

use std::io::{self, Write};

use anyhow::Context;
use ctxclean::engine::{CleanError, Cleaned, Engine, Options};
use ctxclean::io::write_atomic;
use ctxclean::models::Found;
use ctxclean::ops::{Accounting, Pipeline};
use ctxclean::report::{self, TransformReport};

use super::accounts::{is_stderr, Accounts, StatsFiles};
use super::output::{check_target, Target};
use super::sink::Sinks;
use super::{failed, prefetch, prepare, stdout_open, UsageError};
use crate::cli::{InputArgs, OutputArgs};
use crate::run::{drive, Event};

/// A transforming run: one command or a chain of them.
pub(crate) struct Run {
    /// The command (`trim`), or the steps of a chain (`filter→trim`), for
    /// the summary line and the report.
    pub(crate) name: String,
    /// The inputs and how they are read.
    pub(crate) input: InputArgs,
    /// Where the output goes.
    pub(crate) output: OutputArgs,
    /// The operations, in order.
    pub(crate) pipeline: Pipeline,
    /// `then stats` at the end: its flags.
    pub(crate) stats: Option<crate::cli::StatsArgs>,
    /// The recipe text `--save-recipe` writes, once the paths are checked.
    pub(crate) recipe: Option<String>,
    /// The files the run reads besides its inputs (the recipe, `--prices`,
    /// …), with what they are: nothing the run writes may go over them.
    pub(crate) reads: Vec<(String, std::path::PathBuf)>,
}

pub(crate) fn transform(run: Run) -> anyhow::Result<()> {
    let Run {
        name,
        input,
        output,
        pipeline,
        stats: stats_step,
        recipe,
        reads,
    } = run;
    let (command, steps) = (name.as_str(), pipeline.names());
    if output.backup.as_deref() == Some("") {
        return Err(UsageError(
            "--backup needs a suffix (--backup .bak): an empty one names the input itself".into(),
        )
        .into());
    }
    let (model, encoding) = super::model_and_encoding(&input)?;
    let image_rule = model.as_ref().and_then(Found::image_rule);
    let (tok_name, make_tokenizer) = super::tokenizer_maker(&input, encoding, image_rule)?;
    let (sources, mut settings) =
        prepare(command, &input, output.quiet, output.out_dir.as_deref())?;
    settings.lock = output.in_place;
    let target = open_target(&output, &sources, recipe.as_deref(), &reads)?;
    let accounting = accounting(&output);
    if accounting == Accounting::Full
        || (accounting == Accounting::Delta && !steps.is_empty())
        || pipeline.counts_tokens()
    {
        prefetch(encoding);
    }
    let mut stats_spec = stats_step.as_ref().map(super::stats::spec).transpose()?;
    if let Some(spec) = stats_spec.as_mut() {
        spec.model = model.clone();
    }
    let engine = Engine::new(Options {
        pipeline,
        to: output.to,
        strict: output.strict,
        accounting,
        stats: stats_spec,
    });
    let mut sinks = Sinks::open(target, &sources)?;
    let report_jsonl = output.report_jsonl.as_deref();
    let mut acc = Accounts::new(command, &tok_name, output.report.is_some(), report_jsonl)?;
    let inputs = sources.len();
    let failures = drive(
        &sources,
        &settings,
        make_tokenizer,
        |tok, doc| clean(&engine, tok, doc, inputs),
        |event, progress| {
            match event {
                Event::Chunk(f, chunk, whole) => {
                    sinks.chunk(f, &chunk, whole)?;
                    acc.chunk(|| sources[f].name(), chunk, progress)?;
                    progress.update();
                }
                Event::Failed => {
                    sinks.failed();
                    acc.failed();
                }
                Event::End(stamp) => {
                    sinks.end(stamp)?;
                    acc.end()?;
                }
            }
            Ok(())
        },
    )?;
    sinks.finish()?;
    acc.commit_rows()?;
    let end = End {
        command,
        steps: &steps,
        tokenizer: &tok_name,
        model: model.as_ref(),
        input: &input,
        output: &output,
        stats_step: stats_step.as_ref(),
        inputs,
        passed_over: &settings.passed_over,
    };
    end.tell(acc)?;
    failed(failures, &sources)
}

/// One parsed document (or chunk) through the engine, on a worker. A usage
/// error stays one (exit 2); the rest fail the input (exit 1).
fn clean(
    engine: &Engine,
    tok: &mut ctxclean::tokens::Tokenizer,
    doc: ctxclean::format::Document,
    inputs: usize,
) -> anyhow::Result<Cleaned> {
    engine
        .clean_document_then(doc, tok, |d| super::release(d, inputs))
        .map_err(|e| match e {
            CleanError::Usage(m) => UsageError(m).into(),
            CleanError::Write(e) => anyhow::Error::from(e),
            other => anyhow::anyhow!(other.to_string()),
        })
}

/// Where the output goes, checked against the inputs and the reports
/// before anything is read; the recipe of `--save-recipe` is written once
/// that holds.
fn open_target(
    output: &OutputArgs,
    sources: &[ctxclean::batch::Source],
    recipe: Option<&str>,
    reads: &[(String, std::path::PathBuf)],
) -> anyhow::Result<Target> {
    let target = Target::of(output);
    let mut report_paths: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(p) = output.report.as_deref().filter(|p| !is_stderr(p)) {
        report_paths.push(("--report", p));
    }
    if let Some(p) = output.report_jsonl.as_deref().filter(|p| !is_stderr(p)) {
        report_paths.push(("--report-jsonl", p));
    }
    if let Some(p) = &output.save_recipe {
        report_paths.push(("--save-recipe", p));
    }
    check_target(&target, sources, &report_paths, reads)?;
    if let (Some(path), Some(text)) = (&output.save_recipe, recipe) {
        write_atomic(path, |w| w.write_all(text.as_bytes()))
            .with_context(|| format!("writing the recipe {}", path.display()))?;
    }
    if matches!(target, Target::Stdout) {
        stdout_open()?;
    }
    Ok(target)
}

/// Tokens are counted only when a summary or report shows them, or when
/// the operations need them. Every conversation is counted only when a
/// report or -v asks; the default summary line counts only the messages
/// that changed.
fn accounting(output: &OutputArgs) -> Accounting {
    if output.report.is_some() || output.report_jsonl.is_some() || output.verbose {
        Accounting::Full
    } else if !output.quiet {
        Accounting::Delta
    } else {
        Accounting::None
    }
}

/// The end of a run: `then stats`, the report file, the notes, the
/// summary line.
struct End<'a> {
    command: &'a str,
    steps: &'a [&'static str],
    tokenizer: &'a str,
    model: Option<&'a Found>,
    input: &'a InputArgs,
    output: &'a OutputArgs,
    stats_step: Option<&'a crate::cli::StatsArgs>,
    inputs: usize,
    /// What the directory walk passed over (said at the start): in the
    /// report's notes.
    passed_over: &'a [String],
}

impl End<'_> {
    fn tell(&self, acc: Accounts<'_>) -> anyhow::Result<()> {
        let Accounts {
            reports,
            tally,
            notes,
            warned,
            losses,
            stats_files,
            ..
        } = acc;
        let chain = self.steps.len() > 1;
        let mut report = TransformReport::from_tally(self.command, self.tokenizer, reports, tally);
        report.notes = report.tally.notes(self.command, chain);
        let own = report.notes.len();
        report.notes.extend(self.passed_over.iter().cloned());
        self.then_stats(&mut report, stats_files)?;
        if let Some(path) = &self.output.report {
            let write = |w: &mut dyn Write| {
                serde_json::to_writer_pretty(&mut *w, &report)?;
                w.write_all(b"\n")
            };
            if is_stderr(path) {
                write(&mut io::stderr().lock()).context("writing the report to standard error")?;
            } else {
                write_atomic(path, |w| write(w))
                    .with_context(|| format!("writing the report to {}", path.display()))?;
            }
        }
        let command = self.command;
        for note in &report.notes[..own] {
            if !note.starts_with("no changes: ") {
                say!("ctxclean {command}: note: {note}");
            }
        }
        let reporting = self.output.report.is_some() || self.output.report_jsonl.is_some();
        notes.finish(reporting);
        warned.finish(reporting);
        if let Some(err) = &report.tally.cache_error {
            say!("ctxclean {command}: warning: the summary cache: {err}");
        }
        if !self.output.quiet {
            say!(
                "{}{}{}",
                self.summary_line(&report),
                priced(&report, self.model),
                report::loss_summary(&losses)
            );
        } else if !losses.is_empty() {
            // -q leaves the summary out, never what was lost.
            let lost = report::loss_summary(&losses);
            say!("ctxclean {command}: {}", lost.trim_start_matches("; "));
        }
        Ok(())
    }

    /// `then stats`: into the report with `--json` and `--report`, else the
    /// table (or the JSON) on stderr, while the transcript goes to the output.
    fn then_stats(&self, report: &mut TransformReport, files: StatsFiles) -> anyhow::Result<()> {
        let Some(args) = self.stats_step else {
            return Ok(());
        };
        let mut buf = Vec::new();
        super::stats::render(
            args,
            self.model,
            self.input,
            self.tokenizer,
            files,
            &mut buf,
        )?;
        if args.json && self.output.report.is_some() {
            let raw = serde_json::value::RawValue::from_string(
                String::from_utf8_lossy(&buf).into_owned(),
            )
            .context("the stats of the result")?;
            report.stats = Some(raw);
        } else {
            let _ = io::stderr().write_all(&buf);
        }
        Ok(())
    }

    /// The summary line, in the words of the command.
    fn summary_line(&self, report: &TransformReport) -> String {
        if let Some(why) = report
            .notes
            .iter()
            .find_map(|n| n.strip_prefix("no changes: "))
        {
            return report.unchanged_summary(why);
        }
        match self.command {
            _ if self.steps.len() > 1 => report.chain_summary(self.steps, self.inputs),
            "summarize" => report.summarize_summary(),
            "filter" => report.rule_summary(),
            "compact-tools" => report.compact_summary(),
            _ => report.summary(),
        }
    }
}

/// With `--model`: what the change is worth at its input price, as the end
/// of the summary line: `, $0.0049 → $0.0014 per call at claude-sonnet-4-5`
/// (every conversation counted) or `, −$0.0036 per call at …` (only what
/// changed).
fn priced(report: &TransformReport, model: Option<&Found>) -> String {
    let Some(m) = model else {
        return String::new();
    };
    let Some(price) = m.model.input else {
        return format!(", no input price for {}", m.name);
    };
    let t = &report.total;
    match t.delta {
        Some(d) => {
            let usd = d as f64 * price;
            let sign = if usd < 0.0 {
                "−"
            } else if usd > 0.0 {
                "+"
            } else {
                ""
            };
            format!(
                ", {sign}{} per call at {}",
                ctxclean::models::dollars(usd.abs()),
                m.name
            )
        }
        None => format!(
            ", {} → {} per call at {}",
            ctxclean::models::dollars(t.before.tokens as f64 * price),
            ctxclean::models::dollars(t.after.tokens as f64 * price),
            m.name
        ),
    }
}
