//! The `ctxclean` binary: parse flags, read inputs, call the library, write
//! outputs, map errors to exit codes. All behaviour lives in the library.

mod cli;

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use ctxclean::format::{read_document, write_document, Document, ReadOptions};
use ctxclean::io::{write_atomic, Input};
use ctxclean::ops::Pipeline;
use ctxclean::report::{self, Action, Change, TransformReport};
use ctxclean::stats::{self, StatsReport, StatsSpec};
use ctxclean::summary::cache::Cache;
use ctxclean::summary::extractive::Extractive;
use ctxclean::summary::http::{Api, HttpEngine};
use ctxclean::summary::{Engine, EngineError, Request};
use ctxclean::tokens::Tokenizer;

use cli::{
    Cli, Command, EngineArg, InputArgs, OutputArgs, PlacementArg, StrategyArg, SummarizeArgs,
};
use ctxclean::ops::compact_tools::CompactSpec;
use ctxclean::ops::filter::FilterSpec;
use ctxclean::ops::summarize::{Placement, Summarize, SummarizeSpec};
use ctxclean::ops::trim::{Strategy, TrimSpec};

/// Exit codes, in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exit {
    /// Bad input data or an I/O error.
    Data = 1,
    /// The flags do not make sense together (clap exits 2 for its own errors).
    Usage = 2,
}

/// A usage error found after parsing, e.g. several JSON documents to one output.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`ctxclean stats | head`) is not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ctxclean: {err:#}");
            let code = if err.is::<UsageError>() {
                Exit::Usage
            } else {
                Exit::Data
            };
            ExitCode::from(code as u8)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Stats(args) => {
            let tok = Tokenizer::new(args.input.tokenizer.into())?;
            let spec = StatsSpec {
                per_message: args.per_message,
                tools: args.tools,
                large_context: args.large_context,
                ..StatsSpec::default()
            };
            let mut conversations = Vec::new();
            let mut skipped = 0;
            for doc in read_inputs(&args.input)? {
                skipped += doc.skipped.len();
                conversations.extend(stats::stats(&doc, &tok, &spec));
            }
            let report = StatsReport {
                tokenizer: tok.encoding().name().to_string(),
                total: stats::totals(&conversations, skipped),
                conversations,
            };
            let mut out = io::BufWriter::new(io::stdout().lock());
            if args.json {
                report::render_stats_json(&report, &mut out)?;
            } else {
                report::render_stats_text(&report, &mut out)?;
            }
            out.flush()?;
            Ok(())
        }
        Command::CompactTools(args) => {
            let spec = CompactSpec {
                max_result_tokens: args.max_result_tokens,
                max_total_tokens: args.max_total_tokens,
                keep_last: args.keep_last,
                exclude_tools: args.exclude_tools,
                only_tools: args.only_tools,
                trigger_tokens: args.trigger_tokens,
                clear_at_least: args.clear_at_least,
                truncate_items: args.truncate_items,
                preview_chars: args.preview_chars,
                clear_inputs: args.clear_inputs,
            };
            let mut pipeline = Pipeline::new();
            pipeline.push(spec);
            transform("compact-tools", &args.input, &args.output, pipeline)
        }
        Command::Filter(args) => {
            let spec = FilterSpec {
                previous_cycles: args.previous_cycles,
                agent: args.agent,
                chat_id: args.chat_id,
                supersede: args.supersede,
                strip_processed_images: args.strip_processed_images,
                dedupe_tool_results: args.dedupe_tool_results,
                drop_thinking: args.drop_thinking,
                keep_thinking_turns: args.keep_thinking_turns,
                include_roles: args.include_roles,
                exclude_roles: args.exclude_roles,
                include_names: args.include_names,
                exclude_names: args.exclude_names,
                exclude_tools: args.exclude_tools,
                exclude_tool_calls: args.exclude_tool_calls,
            };
            let mut pipeline = Pipeline::new();
            pipeline.push(spec);
            transform("filter", &args.input, &args.output, pipeline)
        }
        Command::Trim(args) => {
            if args.strategy == StrategyArg::First && args.start_on.is_some() {
                return Err(UsageError("--start-on goes with --strategy last only".into()).into());
            }
            let spec = TrimSpec {
                max_tokens: args.max_tokens,
                strategy: match args.strategy {
                    StrategyArg::Last => Strategy::Last,
                    StrategyArg::First => Strategy::First,
                },
                start_on: args.start_on,
                end_on: args.end_on,
                no_system: args.no_system,
                allow_partial: args.allow_partial,
                max_messages: args.max_messages,
                max_turns: args.max_turns,
            };
            let mut pipeline = Pipeline::new();
            pipeline.push(spec);
            transform("trim", &args.input, &args.output, pipeline)
        }
        Command::Summarize(args) => summarize(args),
        Command::Convert(args) => transform("convert", &args.input, &args.output, Pipeline::new()),
        Command::Completions(args) => {
            let mut out = io::stdout().lock();
            clap_complete::generate(args.shell, &mut Cli::command(), "ctxclean", &mut out);
            Ok(())
        }
    }
}

/// `ctxclean summarize`: build the engine (with a spinner on a terminal),
/// then the shared transform path.
fn summarize(args: SummarizeArgs) -> anyhow::Result<()> {
    let api = match args.engine {
        EngineArg::Extractive => {
            if args.url.is_some() || args.model.is_some() {
                return Err(UsageError(
                    "--url and --model go with --engine ollama or openai".into(),
                )
                .into());
            }
            None
        }
        EngineArg::Ollama => Some(Api::Ollama),
        EngineArg::Openai => Some(Api::OpenAi),
    };
    let prompt = match &args.prompt_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the prompt file {}", path.display()))?,
        None => ctxclean::summary::DEFAULT_PROMPT.to_string(),
    };
    let engine: Box<dyn Engine> = match api {
        None => Box::new(Extractive),
        Some(api) => {
            // The key is read here and only sent as a header: it never
            // reaches output, report or errors.
            let key = match api {
                Api::OpenAi => std::env::var(&args.api_key_env).ok(),
                Api::Ollama => None,
            };
            let engine = HttpEngine::new(
                api,
                args.url.as_deref().unwrap_or(api.default_url()),
                args.model.as_deref().unwrap_or(api.default_model()),
                key,
                Duration::from_secs_f64(args.timeout),
            );
            if io::stderr().is_terminal() && !args.output.quiet {
                Box::new(Spinner(engine))
            } else {
                Box::new(engine)
            }
        }
    };
    let spec = SummarizeSpec {
        threshold: args.threshold,
        keep: args.keep,
        min_keep: args.min_keep,
        max_summary_tokens: args.max_summary_tokens,
        max_input_tokens: args.max_input_tokens,
        placement: match args.placement {
            PlacementArg::System => Placement::System,
            PlacementArg::User => Placement::User,
        },
        prompt,
        ..SummarizeSpec::default()
    };
    let mut pipeline = Pipeline::new();
    pipeline.push(Summarize {
        spec,
        engine,
        cache: args.cache.map(Cache::new),
    });
    transform("summarize", &args.input, &args.output, pipeline)
}

/// An engine shown as a spinner on standard error while it works.
struct Spinner<E>(E);

impl<E: Engine> Engine for Spinner<E> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn summarize(&self, request: &Request<'_>) -> Result<String, EngineError> {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(format!(
            "Summarizing conversation ({} tokens)…",
            report::thousands(request.tokens())
        ));
        bar.enable_steady_tick(Duration::from_millis(100));
        let result = self.0.summarize(request);
        bar.finish_and_clear();
        result
    }
}

/// Reads every input, locating errors by file and line.
fn read_inputs(args: &InputArgs) -> anyhow::Result<Vec<Document>> {
    let opts = ReadOptions {
        from: args.from,
        skip_invalid: args.skip_invalid,
    };
    Input::from_args(&args.inputs)
        .into_iter()
        .map(|input| {
            let bytes = input.read()?;
            Ok(read_document(&input.name(), bytes, &opts)?)
        })
        .collect()
}

/// The shared path of every transforming command: read, run the pipeline,
/// write the transcript, the report and the summary line.
fn transform(
    command: &str,
    input: &InputArgs,
    output: &OutputArgs,
    pipeline: Pipeline,
) -> anyhow::Result<()> {
    let tok = Tokenizer::new(input.tokenizer.into())?;
    let mut docs = read_inputs(input)?;
    if docs.len() > 1 {
        if let Some(doc) = docs
            .iter()
            .find(|d| !d.layout.is_jsonl() && !d.conversations.is_empty())
        {
            return Err(UsageError(format!(
                "{} is a JSON document: several inputs can share one output only when they are JSONL; \
                 give JSON documents one at a time",
                doc.source
            ))
            .into());
        }
    }
    let mut reports = Vec::new();
    let mut skipped = 0;
    for doc in &mut docs {
        if let Some(format) = output.to {
            doc.format = format;
        }
        skipped += doc.skipped.len();
        // Tokens are counted only when a summary or report shows them.
        let account = !output.quiet || output.report.is_some();
        reports.extend(pipeline.run(doc, &tok, account));
    }
    let mut losses = Vec::new();
    let mut write_all = |w: &mut dyn Write| -> io::Result<()> {
        for doc in &docs {
            losses.extend(write_document(doc, w)?);
        }
        w.flush()
    };
    match &output.output {
        Some(path) => write_atomic(path, write_all)?,
        None => {
            let stdout = io::stdout();
            if stdout.is_terminal() {
                write_all(&mut stdout.lock())?;
            } else {
                write_all(&mut io::BufWriter::new(stdout.lock()))?;
            }
        }
    }
    // What a conversion could not express is reported, never silently dropped.
    for (report, lost) in reports.iter_mut().zip(losses) {
        for loss in lost {
            report
                .changes
                .push(Change::new(loss.index, Action::Modified, loss.reason));
        }
    }
    let report = TransformReport::new(command, tok.encoding().name(), reports, skipped);
    if let Some(path) = &output.report {
        write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &report)?;
            w.write_all(b"\n")
        })
        .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    // A failed engine is worth a warning even with -q: the run goes on.
    for c in &report.conversations {
        if let Some(reason) = c.flags.get("fallback_reason").and_then(|v| v.as_str()) {
            eprintln!(
                "ctxclean: warning: {}: summarization failed ({reason}); older messages truncated instead",
                c.source
            );
        }
        if let Some(err) = c.flags.get("cache_error").and_then(|v| v.as_str()) {
            eprintln!("ctxclean: warning: the summary cache: {err}");
        }
    }
    if !output.quiet {
        if command == "summarize" {
            eprintln!("{}", report.summarize_summary());
        } else if command == "filter" {
            eprintln!("{}", report.rule_summary());
        } else if command == "compact-tools" {
            eprintln!("{}", report.compact_summary());
        } else {
            eprintln!("{}", report.summary());
        }
    }
    Ok(())
}

/// Whether an error is a closed pipe, anywhere in its chain.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(|e| e.io_error_kind())
                .is_some_and(|k| k == io::ErrorKind::BrokenPipe)
    })
}
