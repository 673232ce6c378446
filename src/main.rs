//! The `ctxclean` binary: parse flags, read inputs, call the library, write
//! outputs, map errors to exit codes. All behaviour lives in the library.

mod cli;
mod run;

use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use ctxclean::batch::{discover, Source, Walk};
use ctxclean::format::{sniff_jsonl, write_document, Format, Loss, ReadOptions};
use ctxclean::io::{write_atomic, AtomicFile, Output, OutputError, Spool};
use ctxclean::ops::Pipeline;
use ctxclean::report::{
    self, plural, thousands, Action, Change, ConversationReport, StatsWriter, TransformReport,
};
use ctxclean::stats::{self, FileStats, StatsSpec, Totals};
use ctxclean::summary::cache::Cache;
use ctxclean::summary::extractive::Extractive;
use ctxclean::summary::http::{Api, HttpEngine};
use ctxclean::summary::{Engine, EngineError, Request};
use ctxclean::tokens::{Encoding, Tokenizer};

use cli::{
    ByArg, Cli, Command, EngineArg, InputArgs, OutputArgs, PlacementArg, ProviderArg, StrategyArg,
    SummarizeArgs, ValidateArgs,
};
use ctxclean::ops::compact_tools::CompactSpec;
use ctxclean::ops::filter::FilterSpec;
use ctxclean::ops::summarize::{Placement, Summarize, SummarizeSpec};
use ctxclean::ops::trim::{Strategy, TrimSpec};
use run::{drive, Event, Failure, Settings};

/// Prints a line on standard error; a standard error that cannot be
/// written to (closed, full) is not a reason to fail, let alone panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

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
    signals();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`ctxclean stats | head`) is not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            say!("ctxclean: {err:#}");
            let code = if err.is::<UsageError>() {
                Exit::Usage
            } else {
                Exit::Data
            };
            ExitCode::from(code as u8)
        }
    }
}

/// Signals: SIGXFSZ (a file size limit) is ignored, so the write fails with
/// an error naming the file instead of killing the process; SIGINT, SIGTERM
/// and SIGHUP are taken by a thread of their own, which removes the run's
/// temporary files and exits 128 + the signal's number.
fn signals() {
    // SAFETY: plain libc calls on a signal set owned here, made before any
    // other thread exists, so every thread inherits the mask.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiter = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || loop {
                let mut sig: libc::c_int = 0;
                if libc::sigwait(&set, &mut sig) == 0 {
                    ctxclean::io::remove_live_temporaries();
                    std::process::exit(128 + sig);
                }
            });
        if waiter.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// Whether standard output was closed when the process started (`>&-`).
/// Rust's runtime opens /dev/null on a closed standard descriptor before
/// `main`, so output would be thrown away with exit 0; this is checked
/// before, from the program's constructors.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn check_stdout() {
    // SAFETY: F_GETFD on descriptor 1 only reads its flags.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[used]
#[link_section = ".init_array"]
static CHECK_STDOUT: extern "C" fn() = check_stdout;

/// Fails when standard output is closed: there is nowhere to write.
fn stdout_open() -> anyhow::Result<()> {
    if STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed) {
        anyhow::bail!("standard output is closed: there is nowhere to write (use -o PATH)");
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Stats(args) => stats_command(args),
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
                user_first: false,
                no_placeholder: args.no_placeholder,
            };
            let mut pipeline = Pipeline::new();
            pipeline.push(spec);
            transform("trim", &args.input, &args.output, pipeline)
        }
        Command::Summarize(args) => summarize(args),
        Command::Validate(args) => validate_command(args),
        Command::Convert(args) => transform("convert", &args.input, &args.output, Pipeline::new()),
        Command::Completions(args) => {
            stdout_open()?;
            // Generated in memory: clap_complete panics on a failed write.
            let mut buf = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "ctxclean", &mut buf);
            let mut out = io::stdout().lock();
            out.write_all(&buf)
                .and_then(|()| out.flush())
                .context("writing to standard output")
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

/// The run settings and inputs shared by every command.
fn prepare(
    input: &InputArgs,
    quiet: bool,
    out_dir: Option<&std::path::Path>,
) -> anyhow::Result<(Vec<Source>, Settings)> {
    let walk = Walk {
        globs: if input.glob.is_empty() {
            Walk::default().globs
        } else {
            input.glob.clone()
        },
        hidden: input.hidden,
        skip: out_dir
            .and_then(ctxclean::io::identity)
            .into_iter()
            .collect(),
    };
    let sources = discover(&input.inputs, &walk)?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let jobs = match input.jobs {
        Some(n) if usize::from(n) > cores * 4 => {
            say!(
                "ctxclean: note: -j {n}: using {} workers (at most 4 per core)",
                cores * 4
            );
            cores * 4
        }
        Some(n) => usize::from(n),
        None => cores,
    };
    let settings = Settings {
        read: ReadOptions {
            from: input.from,
            skip_invalid: input.skip_invalid,
            chunk: None,
        },
        jobs,
        keep_going: input.keep_going,
        progress: !quiet && io::stderr().is_terminal(),
        lock: false,
    };
    Ok((sources, settings))
}

/// Starts loading the encoding's vocabulary on a thread of its own, while
/// the inputs are read and parsed.
fn prefetch(encoding: Encoding) {
    std::thread::spawn(move || ctxclean::tokens::preload(encoding));
}

/// Ends a run: the list of failed files, as the error that makes exit 1.
fn failed(failures: Vec<Failure>, files: usize) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = failures
        .iter()
        .map(|f| format!("  {:#}", f.error))
        .collect();
    anyhow::bail!(
        "{} of {} failed:\n{}",
        plural(failures.len(), "file"),
        thousands(files),
        list.join("\n")
    )
}

/// `ctxclean stats`: counted chunk by chunk on the workers, printed in order.
fn stats_command(args: cli::StatsArgs) -> anyhow::Result<()> {
    stdout_open()?;
    let (sources, settings) = prepare(&args.input, false, None)?;
    let encoding: Encoding = args.input.tokenizer.into();
    let tok_name = encoding.name();
    prefetch(encoding);
    let spec = StatsSpec {
        per_message: args.per_message,
        tools: args.tools,
        large_context: args.large_context,
        ..StatsSpec::default()
    };
    let by_file = args.by == ByArg::File;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut writer = StatsWriter::begin(&mut out, tok_name, args.json, by_file)?;
    let mut total = Totals::default();
    // Per file: its rows, held until the file is known to be good.
    let mut spool: Option<Spool> = None;
    let mut file_stats: Option<FileStats> = None;
    let mut notes = Teller::new("stats", "note");
    let failures = drive(
        &sources,
        &settings,
        || Tokenizer::new(encoding),
        |tok, doc| Ok((stats::stats(&doc, tok, &spec), doc.skipped.len())),
        |event, progress| {
            match event {
                Event::Chunk(f, (convs, skipped)) => {
                    let spool = spool.get_or_insert_with(|| Spool::new(spool_bytes()));
                    let fs = file_stats.get_or_insert_with(|| FileStats::new(&sources[f].name()));
                    fs.skipped_lines += skipped;
                    // Indices count over the whole file, not the chunk.
                    let offset = fs.conversations;
                    for mut c in convs {
                        c.index += offset;
                        notes.tell_all(&c.source, c.index, &c.notes);
                        fs.add(&c);
                        progress.conversations += 1;
                        progress.before += c.tokens;
                        if !by_file {
                            writer.conversation(spool, &c)?;
                        }
                    }
                    progress.update();
                }
                Event::Failed => {
                    spool = None;
                    file_stats = None;
                }
                Event::End(_) => {
                    if let Some(fs) = file_stats.take() {
                        total.add_file(&fs);
                        if by_file {
                            writer.file(&mut out, &fs)?;
                        }
                    }
                    if let Some(spool) = spool.take() {
                        spool.copy_to(&mut out)?;
                    }
                    out.flush()?;
                }
            }
            Ok(())
        },
    )?;
    writer.finish(&mut out, tok_name, &total)?;
    out.flush()?;
    drop(out);
    notes.finish(args.json);
    failed(failures, sources.len())
}

/// `ctxclean validate`: problems per conversation, in input order.
fn validate_command(args: ValidateArgs) -> anyhow::Result<()> {
    use ctxclean::validate::{validate, Problem, Provider};
    stdout_open()?;
    let (sources, settings) = prepare(&args.input, false, None)?;
    let forced = args.provider.map(|p| match p {
        ProviderArg::Openai => Provider::OpenAi,
        ProviderArg::Anthropic => Provider::Anthropic,
        ProviderArg::Gemini => Provider::Gemini,
        ProviderArg::Responses => Provider::Responses,
    });
    #[derive(serde::Serialize)]
    struct Found {
        source: String,
        conversation: usize,
        provider: &'static str,
        #[serde(flatten)]
        problem: Problem,
    }
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut found: Vec<Found> = Vec::new();
    let mut pending: Vec<Found> = Vec::new();
    let (mut conversations, mut invalid) = (0usize, 0usize);
    // The current file's conversations and invalid ones, counted in at its end.
    let (mut file_conversations, mut file_invalid) = (0usize, 0usize);
    let failures = drive(
        &sources,
        &settings,
        || Ok(()),
        |_, doc| {
            let provider = forced.unwrap_or(Provider::for_format(doc.source_format));
            let per: Vec<Vec<Problem>> = doc
                .conversations
                .iter()
                .map(|c| validate(c, doc.source_format, provider))
                .collect();
            Ok((doc.source, provider, per))
        },
        |event, progress| {
            match event {
                Event::Chunk(_, (source, provider, per)) => {
                    for problems in per {
                        progress.conversations += 1;
                        file_invalid += usize::from(!problems.is_empty());
                        for problem in problems {
                            pending.push(Found {
                                source: source.clone(),
                                conversation: file_conversations,
                                provider: provider.name(),
                                problem,
                            });
                        }
                        file_conversations += 1;
                    }
                    progress.update();
                }
                Event::Failed => {
                    pending.clear();
                    progress.conversations = conversations;
                    (file_conversations, file_invalid) = (0, 0);
                }
                Event::End(_) => {
                    conversations += file_conversations;
                    invalid += file_invalid;
                    (file_conversations, file_invalid) = (0, 0);
                    for f in pending.drain(..) {
                        if args.json {
                            found.push(f);
                        } else {
                            let at = match f.problem.message {
                                Some(m) => format!("message {m}"),
                                None => "conversation".to_string(),
                            };
                            writeln!(
                                out,
                                "{}:conversation {}:{at}: {}",
                                f.source, f.conversation, f.problem.problem
                            )?;
                        }
                    }
                    out.flush()?;
                }
            }
            Ok(())
        },
    )?;
    if args.json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "valid": found.is_empty() && failures.is_empty(),
                "conversations": conversations,
                "invalid_conversations": invalid,
                "problems": found,
            }),
        )?;
        writeln!(out)?;
    }
    out.flush()?;
    drop(out);
    failed(failures, sources.len())?;
    if invalid > 0 {
        // Exit 1, like bad input: the transcripts are not valid.
        anyhow::bail!(
            "{} of {} invalid",
            plural(invalid, "conversation"),
            thousands(conversations)
        );
    }
    Ok(())
}

/// Notes from reading (a dangling reference followed another way, …) or
/// warnings about a conversation (over budget, summarization failed), told
/// on standard error as they come, up to a limit, then counted:
/// `ctxclean trim: warning: FILE: conversation 3: …`.
struct Teller<'a> {
    command: &'a str,
    kind: &'static str,
    told: usize,
    more: usize,
}

impl<'a> Teller<'a> {
    const LIMIT: usize = 10;

    fn new(command: &'a str, kind: &'static str) -> Teller<'a> {
        Teller {
            command,
            kind,
            told: 0,
            more: 0,
        }
    }

    fn tell(&mut self, source: &str, conversation: usize, text: &str) {
        if self.told < Self::LIMIT {
            say!(
                "ctxclean {}: {}: {source}: conversation {conversation}: {text}",
                self.command,
                self.kind
            );
            self.told += 1;
        } else {
            self.more += 1;
        }
    }

    fn tell_all(&mut self, source: &str, conversation: usize, texts: &[String]) {
        for t in texts {
            self.tell(source, conversation, t);
        }
    }

    fn finish(self, report: bool) {
        if self.more > 0 {
            let r#where = if report {
                "listed in the report"
            } else {
                "see --report"
            };
            say!(
                "ctxclean {}: {}: {} more ({where})",
                self.command,
                self.kind,
                plural(self.more, self.kind)
            );
        }
    }
}

/// What a conversation's report flags say is worth a warning: over budget,
/// a rule that could not hold, a summary that fell back to truncation, an
/// emptied conversation.
fn warnings(c: &ConversationReport) -> Vec<String> {
    let text = |key: &str| c.flags.get(key).and_then(|v| v.as_str());
    let mut out = Vec::new();
    if c.flags.get("over_budget") == Some(&serde_json::Value::Bool(true)) {
        out.push(format!(
            "over budget ({}): {} tokens kept",
            text("over_budget_reason").unwrap_or("kept over the budget"),
            thousands(c.after.tokens)
        ));
    }
    if let Some(w) = text("warning") {
        out.push(w.to_string());
    }
    if let Some(reason) = text("fallback_reason") {
        out.push(format!(
            "summarization failed ({reason}); older messages truncated instead"
        ));
    }
    if let Some(reason) = text("emptied_reason") {
        out.push(format!("no messages left ({reason})"));
    }
    out
}

/// Output held in memory per file before it spills to a temporary file in
/// TMPDIR (`CTXCLEAN_SPOOL_BYTES` sets it, for tests).
fn spool_bytes() -> usize {
    std::env::var("CTXCLEAN_SPOOL_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32 << 20)
}

/// Where a transforming command writes.
enum Target {
    /// Standard output.
    Stdout,
    /// `-o PATH`, for all inputs.
    File(PathBuf),
    /// `--out-dir DIR`, mirroring inputs.
    OutDir(PathBuf),
    /// `--in-place`, with an optional backup suffix.
    InPlace(Option<String>),
}

/// One chunk, transformed on a worker.
struct Transformed {
    out: Vec<u8>,
    reports: Vec<ConversationReport>,
    skipped: usize,
    lost: Vec<Loss>,
}

/// Where the current file's output goes until it is done.
enum FileSink {
    Spool(Spool),
    Atomic(AtomicFile),
}

/// The shared path of every transforming command: read, run the pipeline,
/// write the transcript, the report and the summary line.
fn transform(
    command: &str,
    input: &InputArgs,
    output: &OutputArgs,
    pipeline: Pipeline,
) -> anyhow::Result<()> {
    if output.backup.as_deref() == Some("") {
        return Err(UsageError(
            "--backup needs a suffix (--backup .bak): an empty one names the input itself".into(),
        )
        .into());
    }
    let (sources, mut settings) = prepare(input, output.quiet, output.out_dir.as_deref())?;
    settings.lock = output.in_place;
    let target = if output.in_place {
        Target::InPlace(output.backup.clone())
    } else if let Some(dir) = &output.out_dir {
        Target::OutDir(dir.clone())
    } else if let Some(path) = &output.output {
        Target::File(path.clone())
    } else {
        Target::Stdout
    };
    check_target(&target, &sources, output.report.as_deref())?;
    if matches!(target, Target::Stdout) {
        stdout_open()?;
    }
    let encoding: Encoding = input.tokenizer.into();
    let tok_name = encoding.name();
    // Tokens are counted only when a summary or report shows them, or when
    // the operations need them; only then is the vocabulary loaded.
    let account = !output.quiet || output.report.is_some();
    if account || pipeline.counts_tokens() {
        prefetch(encoding);
    }
    let to = output.to;
    let strict = output.strict;
    // Losses over the whole run, by what and why, for the summary line.
    let mut losses: Vec<(String, String, usize)> = Vec::new();

    let mut run_file = match &target {
        Target::File(path) => Some(Output::open(path)?),
        _ => None,
    };
    let stdout = io::stdout();
    let mut stdout_w = io::BufWriter::new(stdout.lock());
    let mut sink: Option<FileSink> = None;
    let mut reports: Vec<ConversationReport> = Vec::new();
    // The current file's reports start here; its skipped lines are counted in at its end.
    let (mut skipped, mut file_skipped) = (0, 0);
    let mut first_report_of_file = 0;
    // Several inputs sharing one output: only the first may open it with a
    // byte order mark.
    let mut shared_started = false;
    let failures = drive(
        &sources,
        &settings,
        || Tokenizer::new(encoding),
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
            let mut reports = pipeline.run(&mut doc, tok, account);
            let mut out = Vec::new();
            let written = write_document(&doc, &mut out)?;
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
            Ok(Transformed {
                out,
                reports,
                skipped: doc.skipped.len(),
                lost,
            })
        },
        |event, progress| {
            match event {
                Event::Chunk(f, chunk) => {
                    if sink.is_none() {
                        sink = Some(match &target {
                            Target::Stdout | Target::File(_) => {
                                FileSink::Spool(Spool::new(spool_bytes()))
                            }
                            Target::OutDir(dir) => FileSink::Atomic(
                                AtomicFile::create(&dir.join(&sources[f].relative), true)
                                    .map_err(OutputError)?,
                            ),
                            Target::InPlace(_) => FileSink::Atomic(
                                AtomicFile::create(
                                    sources[f].path.as_deref().expect("checked: files only"),
                                    false,
                                )
                                .map_err(OutputError)?,
                            ),
                        });
                    }
                    match sink.as_mut().expect("just set") {
                        FileSink::Spool(s) => {
                            let out = match chunk.out.strip_prefix(ctxclean::format::BOM) {
                                Some(rest) if shared_started => rest,
                                _ => &chunk.out[..],
                            };
                            shared_started |= !out.is_empty();
                            s.write_all(out).with_context(|| {
                                format!("holding the output of {}", sources[f].name())
                            })?
                        }
                        FileSink::Atomic(a) => {
                            let target = a.target().display().to_string();
                            a.write_all(&chunk.out)
                                .with_context(|| format!("writing {target}"))
                                .map_err(OutputError)?
                        }
                    }
                    // Indices count over the whole file, not the chunk.
                    let offset = reports.len() - first_report_of_file;
                    for mut r in chunk.reports {
                        r.index += offset;
                        progress.conversations += 1;
                        progress.before += r.before.tokens;
                        *progress.after.get_or_insert(0) += r.after.tokens;
                        reports.push(r);
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
                    sink = None; // an unfinished temporary file is removed
                    reports.truncate(first_report_of_file);
                    file_skipped = 0;
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
                    first_report_of_file = reports.len();
                    skipped += std::mem::take(&mut file_skipped);
                }
            }
            Ok(())
        },
    )?;
    if let Some(file) = run_file {
        file.commit()?;
    }
    stdout_w.flush().context("writing to standard output")?;
    drop(stdout_w);

    let report = TransformReport::new(command, tok_name, reports, skipped);
    if let Some(path) = &output.report {
        write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &report)?;
            w.write_all(b"\n")
        })
        .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    // Notes and warnings are worth telling even with -q.
    let mut notes = Teller::new(command, "note");
    let mut warned = Teller::new(command, "warning");
    let mut cache_error = None;
    for c in &report.conversations {
        notes.tell_all(&c.source, c.index, &c.notes);
        warned.tell_all(&c.source, c.index, &warnings(c));
        cache_error = cache_error.or(c.flags.get("cache_error").and_then(|v| v.as_str()));
    }
    notes.finish(output.report.is_some());
    warned.finish(output.report.is_some());
    if let Some(err) = cache_error {
        say!("ctxclean {command}: warning: the summary cache: {err}");
    }
    if !output.quiet {
        let line = if command == "summarize" {
            report.summarize_summary()
        } else if command == "filter" {
            report.rule_summary()
        } else if command == "compact-tools" {
            report.compact_summary()
        } else {
            report.summary()
        };
        say!("{line}{}", report::loss_summary(&losses));
    }
    failed(failures, sources.len())
}

/// Checks that the inputs can go where the flags say, before anything is read.
fn check_target(
    target: &Target,
    sources: &[Source],
    report: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use ctxclean::io::identity;
    let stdin = sources.iter().any(|s| s.path.is_none());
    let usage = |m: String| -> anyhow::Result<()> { Err(UsageError(m).into()) };
    // The report never goes over an input or the output: compared as files
    // (device and inode), not as spellings.
    if let Some(id) = report.and_then(identity) {
        let report = report.expect("it has an identity").display();
        for s in sources {
            if s.path.as_deref().and_then(identity) == Some(id) {
                return usage(format!(
                    "--report {report} is the input {}: the report would overwrite it",
                    s.name()
                ));
            }
        }
        if let Target::File(out) = target {
            if identity(out) == Some(id) && fs_is_regular(out) {
                return usage(format!(
                    "--report {report} is the output {}: one would overwrite the other",
                    out.display()
                ));
            }
        }
    }
    if let Target::InPlace(_) = target {
        let mut seen: Vec<((u64, u64), String)> = Vec::new();
        for s in sources {
            let Some(path) = &s.path else { continue };
            let meta =
                std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
            if !meta.is_file() {
                return usage(format!(
                    "--in-place rewrites regular files only; {} is {}",
                    path.display(),
                    ctxclean::io::kind(&meta)
                ));
            }
            let id = ctxclean::io::Stamp::of(&meta).id;
            if let Some((_, first)) = seen.iter().find(|(i, _)| *i == id) {
                return usage(format!(
                    "{first} and {} are the same file: --in-place would rewrite it twice",
                    path.display()
                ));
            }
            seen.push((id, path.display().to_string()));
        }
    }
    if let Target::OutDir(dir) = target {
        if let Some(id) = identity(dir) {
            for s in sources {
                let Some(path) = &s.path else { continue };
                // The directory the input was found in, walked from the command line.
                let mut root = path.clone();
                for _ in s.relative.components() {
                    root.pop();
                }
                if identity(&root) == Some(id) {
                    return usage(format!(
                        "--out-dir {} is where the inputs are: use --in-place to rewrite them",
                        dir.display()
                    ));
                }
            }
        }
    }
    match target {
        Target::InPlace(_) if stdin => {
            Err(UsageError("--in-place rewrites files; standard input is not one".into()).into())
        }
        Target::OutDir(_) if stdin => Err(UsageError(
            "--out-dir takes files; give a file or directory, not standard input".into(),
        )
        .into()),
        Target::OutDir(dir) => {
            let mut seen = std::collections::HashSet::new();
            for s in sources {
                if !seen.insert(&s.relative) {
                    return Err(UsageError(format!(
                        "two inputs would both be written to {}",
                        dir.join(&s.relative).display()
                    ))
                    .into());
                }
            }
            Ok(())
        }
        Target::Stdout | Target::File(_) if sources.len() > 1 => {
            // Several outputs can share one stream only as JSONL.
            for s in sources {
                let Some(path) = &s.path else { continue };
                let mut prefix = Vec::new();
                std::fs::File::open(path)
                    .and_then(|f| f.take(1 << 16).read_to_end(&mut prefix))
                    .with_context(|| format!("reading {}", path.display()))?;
                if !prefix.iter().all(u8::is_ascii_whitespace) && !sniff_jsonl(&prefix) {
                    return Err(UsageError(format!(
                        "{} is a JSON document: several inputs can share one output only when \
                         they are JSONL; use --out-dir DIR or --in-place",
                        path.display()
                    ))
                    .into());
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether `path` is a regular file (following links).
fn fs_is_regular(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
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
