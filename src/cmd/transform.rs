//! The shared path of every transforming command and chain: read, run the
//! pipeline, write the transcript, the report and the summary line.

use std::io::{self, Write};

use anyhow::Context;
use ctxclean::format::{write_document_into, Format, Loss};
use ctxclean::io::{write_atomic, AtomicFile, Output, OutputError, Spool};
use ctxclean::ops::{Accounting, Pipeline};
use ctxclean::report::{self, plural, Action, Change, ConversationReport, Tally, TransformReport};

use super::output::{check_target, spool_bytes, FileSink, Target};
use super::{failed, prefetch, prepare, stdout_open, warnings, Held, Teller, UsageError};
use crate::cli::{InputArgs, OutputArgs};
use crate::run::{drive, Event};

/// One chunk, transformed on a worker.
struct Transformed {
    out: Vec<u8>,
    /// What follows `out`: the text of a document in which nothing
    /// changed, handed over rather than copied.
    original: Option<std::sync::Arc<String>>,
    reports: Vec<ConversationReport>,
    skipped: usize,
    lost: Vec<Loss>,
    /// `then stats`: the chunk's stats after the steps.
    stats: Option<Vec<ctxclean::stats::ConversationStats>>,
}

/// The shared path of every transforming command: read, run the pipeline,
/// write the transcript, the report and the summary line.
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
}

pub(crate) fn transform(run: Run) -> anyhow::Result<()> {
    let Run {
        name,
        input,
        output,
        pipeline,
        stats: stats_step,
        recipe,
    } = run;
    let (input, output) = (&input, &output);
    let command = name.as_str();
    let steps = pipeline.names();
    let chain = steps.len() > 1;
    if output.backup.as_deref() == Some("") {
        return Err(UsageError(
            "--backup needs a suffix (--backup .bak): an empty one names the input itself".into(),
        )
        .into());
    }
    let (model, encoding) = super::model_and_encoding(input)?;
    let image_rule = model.as_ref().and_then(ctxclean::models::Found::image_rule);
    let (tok_name, make_tokenizer) = super::tokenizer_maker(input, encoding, image_rule.clone())?;
    let tok_name = tok_name.as_str();
    let (sources, mut settings) = prepare(command, input, output.quiet, output.out_dir.as_deref())?;
    settings.lock = output.in_place;
    let target = Target::of(output);
    let mut report_paths: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(p) = &output.report {
        report_paths.push(("--report", p));
    }
    if let Some(p) = output.report_jsonl.as_deref().filter(|p| !is_stderr(p)) {
        report_paths.push(("--report-jsonl", p));
    }
    if let Some(p) = &output.save_recipe {
        report_paths.push(("--save-recipe", p));
    }
    check_target(&target, &sources, &report_paths)?;
    if let (Some(path), Some(text)) = (&output.save_recipe, &recipe) {
        ctxclean::io::write_atomic(path, |w| w.write_all(text.as_bytes()))
            .with_context(|| format!("writing the recipe {}", path.display()))?;
    }
    if matches!(target, Target::Stdout) {
        stdout_open()?;
    }
    // Tokens are counted only when a summary or report shows them, or when
    // the operations need them; only then is the vocabulary loaded.
    // Every conversation is counted only when a report or -v asks; the
    // default summary line counts only the messages that changed.
    let reporting = output.report.is_some() || output.report_jsonl.is_some();
    let accounting = if reporting || output.verbose {
        Accounting::Full
    } else if !output.quiet {
        Accounting::Delta
    } else {
        Accounting::None
    };
    let delta_counts = accounting == Accounting::Delta && !pipeline.names().is_empty();
    if accounting == Accounting::Full || delta_counts || pipeline.counts_tokens() {
        prefetch(encoding);
    }
    let to = output.to;
    let strict = output.strict;
    let mut stats_spec = stats_step.as_ref().map(super::stats::spec).transpose()?;
    if let Some(spec) = stats_spec.as_mut() {
        spec.model = model.clone();
    }
    // `then stats`: per file, its conversations' stats and skipped lines.
    let mut stats_files: Vec<(String, Vec<ctxclean::stats::ConversationStats>, usize)> = Vec::new();
    let mut file_stats: Option<(String, Vec<ctxclean::stats::ConversationStats>)> = None;
    // Losses over the whole run, by what and why, for the summary line.
    let mut losses: Vec<(String, String, usize)> = Vec::new();

    // --report-jsonl: a file's rows are held until it is known to be good.
    let mut row_sink = match output.report_jsonl.as_deref() {
        Some(p) if is_stderr(p) => Some(RowSink::Stderr),
        Some(p) => {
            Some(RowSink::File(Output::open(p).with_context(|| {
                format!("opening the report {}", p.display())
            })?))
        }
        None => None,
    };
    let mut file_rows: Option<Spool> = None;
    let mut run_file = match &target {
        Target::File(path) => Some(Output::open(path)?),
        _ => None,
    };
    let stdout = io::stdout();
    let mut stdout_w = io::BufWriter::new(stdout.lock());
    let mut sink: Option<FileSink> = None;
    // Every conversation's report is kept only for --report; the summary
    // line needs only the tally, folded as they come (a file's at its end),
    // so a stream of millions of conversations runs in bounded memory.
    let keep_reports = output.report.is_some();
    let mut reports: Vec<ConversationReport> = Vec::new();
    let (mut tally, mut file_tally) = (Tally::default(), Tally::default());
    // The current file's reports start here; its skipped lines are counted in at its end.
    let (mut file_conversations, mut file_skipped) = (0, 0);
    let mut first_report_of_file = 0;
    // Notes and warnings are worth telling even with -q, as they come.
    let mut notes = Teller::new(command, "note");
    let mut warned = Teller::new(command, "warning");
    // What a file tells is held until the file is known to be good: a
    // file that fails says only why it failed.
    let (mut file_notes, mut file_warned) = (Held::default(), Held::default());
    // Several inputs sharing one output: only the first may open it with a
    // byte order mark.
    let mut shared_started = false;
    let failures = drive(
        &sources,
        &settings,
        make_tokenizer,
        |tok, mut doc| {
            if let Some(format) = to {
                doc.format = format;
            }
            if let Some(format) = to {
                if format != doc.source_format && !format.is_request() {
                    return Err(UsageError(format!(
                        "--to {format}: {format} is written only from {format} input, and {} is {}; \
                         convert to a request format instead: {}",
                        doc.source,
                        doc.source_format,
                        Format::REQUEST.map(Format::name).join(", ")
                    ))
                    .into());
                }
            }
            // Images are charged by the provider of the format written.
            tok.set_format(doc.format);
            let mut reports = pipeline.run_with(&mut doc, tok, accounting);
            // `summarize --on-failure fail`: the input fails, nothing is written.
            if let Some(r) = reports
                .iter()
                .find(|r| r.flags.get("on_failure").and_then(|v| v.as_str()) == Some("fail"))
            {
                let text = |key: &str| r.flags.get(key).and_then(|v| v.as_str()).unwrap_or("");
                anyhow::bail!(
                    "{}: summarizer {}: {} (--on-failure fail: nothing written for this input)",
                    doc.source,
                    text("failure_kind"),
                    text("summarize_failed")
                );
            }
            let stats = stats_spec
                .as_ref()
                .map(|spec| ctxclean::stats::stats(&doc, tok, spec));
            let mut out = Vec::new();
            let (written, original) = write_document_into(&mut doc, &mut out)?;
            // What a conversion could not express is reported, never silently dropped.
            let mut lost = Vec::new();
            for (report, w) in reports.iter_mut().zip(written) {
                for loss in w.losses {
                    match loss.index {
                        Some(i) => {
                            let mut c = Change::new(i, Action::Modified, loss.describe());
                            c.detail.insert("lost".into(), loss.what.clone().into());
                            report.changes.push(c);
                        }
                        None => report.lost.push(loss.describe()),
                    }
                    lost.push(loss);
                }
                report.notes.extend(w.notes);
            }
            if strict && !lost.is_empty() {
                anyhow::bail!(
                    "{}: converting to {} would lose {} (--strict): {}",
                    doc.source,
                    doc.format,
                    plural(lost.len(), "thing"),
                    lost.iter()
                        .take(3)
                        .map(Loss::describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                );
            }
            let skipped = doc.skipped.len();
            super::release(doc, sources.len());
            Ok(Transformed {
                out,
                original,
                reports,
                skipped,
                lost,
                stats,
            })
        },
        |event, progress| {
            match event {
                Event::Chunk(f, chunk, whole) => {
                    let original = chunk.original.as_deref().map_or("", String::as_str);
                    // Standard output and `-o` take every input's output:
                    // only the first keeps its byte order mark.
                    let shared = matches!(target, Target::Stdout | Target::File(_));
                    let out = match chunk.out.strip_prefix(ctxclean::format::BOM) {
                        Some(rest) if shared && shared_started => rest,
                        _ => &chunk.out[..],
                    };
                    if shared {
                        shared_started |= !out.is_empty() || !original.is_empty();
                    }
                    // A whole input's output is complete: to standard output
                    // or `-o`, it goes straight there, not through a spool
                    // (which would copy a large document to TMPDIR and back).
                    // A file streamed in chunks is held until it ends, so that
                    // a later chunk failing leaves nothing of it written.
                    if whole && shared && sink.is_none() {
                        match run_file.as_mut() {
                            Some(file) => {
                                let path = file.path().display().to_string();
                                file.write_all(out)
                                    .and_then(|()| file.write_all(original.as_bytes()))
                                    .with_context(|| format!("writing {path}"))?
                            }
                            None => stdout_w
                                .write_all(out)
                                .and_then(|()| stdout_w.write_all(original.as_bytes()))
                                .and_then(|()| stdout_w.flush())
                                .context("writing to standard output")?,
                        }
                    } else if sink.is_none() {
                        sink = Some(match &target {
                            Target::Stdout | Target::File(_) => {
                                FileSink::Spool(Spool::new(spool_bytes()))
                            }
                            Target::OutDir(dir) => FileSink::Atomic({
                                let mut a =
                                    AtomicFile::create(&dir.join(&sources[f].relative), true)
                                        .map_err(OutputError)?;
                                a.defer_sync();
                                a
                            }),
                            Target::InPlace(_) => FileSink::Atomic(
                                AtomicFile::create(
                                    sources[f].path.as_deref().expect("checked: files only"),
                                    false,
                                )
                                .map_err(OutputError)?,
                            ),
                        });
                    }
                    match sink.as_mut() {
                        None => {} // written above
                        Some(FileSink::Spool(s)) => s
                            .write_all(out)
                            .and_then(|()| s.write_all(original.as_bytes()))
                            .with_context(|| {
                                format!("holding the output of {}", sources[f].name())
                            })?,
                        Some(FileSink::Atomic(a)) => {
                            let target = a.target().display().to_string();
                            a.write_all(out)
                                .and_then(|()| a.write_all(original.as_bytes()))
                                .with_context(|| format!("writing {target}"))
                                .map_err(OutputError)?
                        }
                    }
                    if let Some(convs) = chunk.stats {
                        let fs = file_stats.get_or_insert_with(|| (sources[f].name(), Vec::new()));
                        let offset = fs.1.len();
                        fs.1.extend(convs.into_iter().map(|mut c| {
                            c.index += offset;
                            c
                        }));
                    }
                    // Indices count over the whole file, not the chunk.
                    let offset = file_conversations;
                    file_conversations += chunk.reports.len();
                    for mut r in chunk.reports {
                        r.index += offset;
                        progress.conversations += 1;
                        progress.before += r.before.tokens;
                        *progress.after.get_or_insert(0) += r.after.tokens;
                        file_notes.tell_all(&r.source, r.index, &r.notes);
                        file_warned.tell_all(&r.source, r.index, &warnings(&r));
                        file_tally.add(&r);
                        if row_sink.is_some() {
                            let rows = file_rows.get_or_insert_with(|| Spool::new(spool_bytes()));
                            serde_json::to_writer(&mut *rows, &r.row(command, tok_name))
                                .context("holding the report rows")?;
                            rows.write_all(b"\n").context("holding the report rows")?;
                        }
                        if keep_reports {
                            reports.push(r);
                        }
                    }
                    file_skipped += chunk.skipped;
                    for loss in chunk.lost {
                        match losses
                            .iter_mut()
                            .find(|(w, r, _)| *w == loss.what && *r == loss.reason)
                        {
                            Some((_, _, n)) => *n += 1,
                            None => losses.push((loss.what, loss.reason, 1)),
                        }
                    }
                    progress.update();
                }
                Event::Failed => {
                    file_stats = None;
                    sink = None; // an unfinished temporary file is removed
                    reports.truncate(first_report_of_file);
                    file_rows = None;
                    file_tally = Tally::default();
                    (file_notes, file_warned) = (Held::default(), Held::default());
                    (file_conversations, file_skipped) = (0, 0);
                }
                Event::End(stamp) => {
                    match sink.take() {
                        Some(FileSink::Spool(s)) => match run_file.as_mut() {
                            Some(file) => {
                                let path = file.path().display().to_string();
                                s.copy_to(file).with_context(|| format!("writing {path}"))?
                            }
                            None => s
                                .copy_to(&mut stdout_w)
                                .and_then(|()| stdout_w.flush())
                                .context("writing to standard output")?,
                        },
                        Some(FileSink::Atomic(mut a)) => {
                            let backup = match &target {
                                Target::InPlace(b) => b.as_deref(),
                                _ => None,
                            };
                            if let Some(stamp) = stamp {
                                a.expect(stamp);
                            }
                            a.commit(backup).map_err(OutputError)?;
                        }
                        None => {}
                    }
                    if let Some((name, convs)) = file_stats.take() {
                        stats_files.push((name, convs, file_skipped));
                    }
                    if let (Some(rows), Some(sink)) = (file_rows.take(), row_sink.as_mut()) {
                        sink.write(rows)?;
                    }
                    first_report_of_file = reports.len();
                    file_tally.skipped(std::mem::take(&mut file_skipped));
                    tally.merge(std::mem::take(&mut file_tally));
                    notes.release(std::mem::take(&mut file_notes));
                    warned.release(std::mem::take(&mut file_warned));
                    file_conversations = 0;
                }
            }
            Ok(())
        },
    )?;
    if let Some(file) = run_file {
        file.commit()?;
    }
    if let Some(RowSink::File(file)) = row_sink {
        file.commit().context("writing the report rows")?;
    }
    // --out-dir: the new files were renamed into place unsynced; one sync
    // makes the run durable.
    if let Target::OutDir(dir) = &target {
        if dir.exists() {
            ctxclean::io::sync_filesystem(dir)
                .with_context(|| format!("syncing the outputs in {}", dir.display()))?;
        }
    }
    stdout_w.flush().context("writing to standard output")?;
    drop(stdout_w);

    let mut report = TransformReport::from_tally(command, tok_name, reports, tally);
    report.notes = report.tally.notes(command, chain);
    if let Some(args) = &stats_step {
        let mut buf = Vec::new();
        super::stats::render(args, model.as_ref(), input, tok_name, stats_files, &mut buf)?;
        if args.json && output.report.is_some() {
            let raw = serde_json::value::RawValue::from_string(
                String::from_utf8_lossy(&buf).into_owned(),
            )
            .context("the stats of the result")?;
            report.stats = Some(raw);
        } else {
            // The table (or the JSON, with no report to hold it) on stderr,
            // while the transcript goes to the output.
            let _ = io::stderr().write_all(&buf);
        }
    }
    if let Some(path) = &output.report {
        write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &report)?;
            w.write_all(b"\n")
        })
        .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    for note in &report.notes {
        if !note.starts_with("no changes: ") {
            say!("ctxclean {command}: note: {note}");
        }
    }
    notes.finish(reporting);
    warned.finish(reporting);
    if let Some(err) = &report.tally.cache_error {
        say!("ctxclean {command}: warning: the summary cache: {err}");
    }
    if !output.quiet {
        let line = if let Some(why) = report
            .notes
            .iter()
            .find_map(|n| n.strip_prefix("no changes: "))
        {
            report.unchanged_summary(why)
        } else if chain {
            report.chain_summary(&steps, sources.len())
        } else if command == "summarize" {
            report.summarize_summary()
        } else if command == "filter" {
            report.rule_summary()
        } else if command == "compact-tools" {
            report.compact_summary()
        } else {
            report.summary()
        };
        say!(
            "{line}{}{}",
            priced(&report, model.as_ref()),
            report::loss_summary(&losses)
        );
    }
    failed(failures, sources.len())
}

/// With `--model`: what the change is worth at its input price, as the end
/// of the summary line: `, $0.0049 → $0.0014 per call at claude-sonnet-4-5`
/// (every conversation counted) or `, −$0.0036 per call at …` (only what
/// changed).
fn priced(report: &TransformReport, model: Option<&ctxclean::models::Found>) -> String {
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

/// `--report-jsonl -` writes to standard error.
fn is_stderr(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// Where `--report-jsonl` rows go.
enum RowSink {
    Stderr,
    File(Output),
}

impl RowSink {
    /// Appends one file's rows.
    fn write(&mut self, rows: Spool) -> anyhow::Result<()> {
        match self {
            RowSink::Stderr => {
                let mut err = io::stderr().lock();
                rows.copy_to(&mut err)
                    .and_then(|()| err.flush())
                    .context("writing the report rows to standard error")
            }
            RowSink::File(out) => {
                let path = out.path().display().to_string();
                rows.copy_to(out)
                    .with_context(|| format!("writing the report rows to {path}"))
            }
        }
    }
}
