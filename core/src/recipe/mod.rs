//! Recipes into engines: how the steps of a chain or a recipe file
//! (command-line words, parsed by [`crate::cli`]) become the [`Pipeline`]
//! and the tokenizer every front end runs: the command line, `serve` and
//! the Python package make their engine here, so the same recipe does the
//! same thing in each.

pub mod ops;
pub mod stats;
pub mod text;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command, InputArgs, OutputArgs};
use crate::engine::{CleanError, Engine, Options};
use crate::format::{Format, Loss, ReadOptions};
use crate::models::Found;
use crate::ops::{Accounting, Pipeline};
use crate::report::TransformReport;
use crate::tokens::{Encoding, Tokenizer};

/// A usage error found after parsing, e.g. several JSON documents to one output.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `--model NAME` in the model table, with `--prices FILE` applied; an
/// unknown model is a usage error listing close names.
pub fn find_model(
    name: &str,
    prices: Option<&std::path::Path>,
) -> anyhow::Result<crate::models::Found> {
    let mut catalog = crate::models::Catalog::builtin();
    if let Some(path) = prices {
        catalog.load_overrides(path)?;
    }
    catalog.find(name).map_err(|close| {
        UsageError(format!(
            "--model {name}: not in the model table (LiteLLM snapshot{}); close names: {}; \
             --prices FILE adds models (the summarizer's own model is --engine-model)",
            catalog
                .sources
                .first()
                .map_or(String::new(), |s| format!(" of {}", s.date)),
            close.join(", ")
        ))
        .into()
    })
}

/// The model of `--model` (with `--prices` applied), and the encoding that
/// counts: `--tokenizer`, else the model's, else o200k_base. An unknown
/// model is a usage error listing close names.
pub fn model_and_encoding(
    input: &InputArgs,
) -> anyhow::Result<(Option<crate::models::Found>, Encoding)> {
    let model = input
        .model
        .as_deref()
        .map(|name| find_model(name, input.prices.as_deref()))
        .transpose()?;
    let encoding = match (&input.tokenizer, &model) {
        (Some(crate::cli::TokenizerChoice::Named(t)), _) => (*t).into(),
        (Some(crate::cli::TokenizerChoice::Hf(_)), _) => Encoding::Hf,
        (None, Some(m)) => m.encoding().0,
        (None, None) => Encoding::O200kBase,
    };
    Ok((model, encoding))
}

/// The tokenizer of a run, for each worker: the encoding's, or the Hugging
/// Face file's (`--tokenizer hf:PATH`, checked once before any input is
/// read), with the image rule of `--model`.
pub fn tokenizer_maker(
    input: &InputArgs,
    encoding: Encoding,
    images: Option<crate::images::ImageRule>,
) -> anyhow::Result<(
    String,
    impl Fn() -> anyhow::Result<crate::tokens::Tokenizer> + Sync,
)> {
    // A Hugging Face file is loaded once, here (before any input is read),
    // and shared by the workers.
    let hf = match &input.tokenizer {
        Some(crate::cli::TokenizerChoice::Hf(path)) => {
            Some((path.clone(), crate::tokens::Tokenizer::from_hf(path)?))
        }
        _ => None,
    };
    let name = match &hf {
        Some((path, t)) => format!(
            "hf:{} ({})",
            path.display(),
            t.template().map_or("unknown template", |t| t.name())
        ),
        None => encoding.name().to_string(),
    };
    let loaded = hf.map(|(_, t)| t);
    Ok((name, move || {
        let t = match loaded.as_ref().and_then(crate::tokens::Tokenizer::share_hf) {
            Some(t) => t,
            None => crate::tokens::Tokenizer::new(encoding)?,
        };
        Ok(t.with_images(images.clone()))
    }))
}

/// A recipe's operations, ready to run: what a front end that is not the
/// command line (the Python package) makes its engine from.
pub struct Recipe {
    /// The operations, in order.
    pub pipeline: Pipeline,
    /// The flags of the input the steps gave (`--model`, `--tokenizer`).
    pub input: InputArgs,
    /// The format to write (`--to` of a step), else the input's.
    pub to: Option<Format>,
    /// The budget of its last `trim`, when given in tokens: what a
    /// conversation held in flight may grow to (see [`crate::inflight`]).
    pub budget: Option<usize>,
    /// Whether that budget is in the provider's tokens (`--budget-in billed`).
    pub budget_billed: bool,
}

impl Recipe {
    /// A recipe from its steps, each the words of one command (`["trim",
    /// "--max-tokens", "8000"]`); `model` and `tokenizer` are `--model` and
    /// `--tokenizer` unless a step gives them. Steps that read or write
    /// files (inputs, `-o`, `--report`, …) are a usage error: a recipe
    /// applied in memory has none.
    pub fn from_steps(
        steps: &[Vec<OsString>],
        model: Option<&str>,
        tokenizer: Option<&str>,
    ) -> anyhow::Result<Recipe> {
        Recipe::build(steps, model, tokenizer, false, &step_error)
    }

    /// A recipe for requests in flight, as `ctxclean serve` runs its steps:
    /// a `trim` cuts in steps of half its budget unless given `--step`, with
    /// checkpoints every eighth of a step, so that a cut holds while the
    /// conversation grows; a conversion (`convert`, `--to`) is refused.
    pub fn from_steps_in_flight(
        steps: &[Vec<OsString>],
        model: Option<&str>,
        tokenizer: Option<&str>,
    ) -> anyhow::Result<Recipe> {
        Recipe::build(steps, model, tokenizer, true, &step_error)?.for_flight()
    }

    /// [`Recipe::from_steps_in_flight`] with `trim` cutting to its budget on
    /// every call, as the command does, not in `serve`'s steps: the method
    /// a baseline reproduces (LangChain's `trim_messages` on each call).
    pub fn from_steps_in_flight_unstepped(
        steps: &[Vec<OsString>],
        model: Option<&str>,
        tokenizer: Option<&str>,
    ) -> anyhow::Result<Recipe> {
        Recipe::build(steps, model, tokenizer, false, &step_error)?.for_flight()
    }

    /// [`Recipe::from_steps_in_flight`] from a recipe file: a step's error
    /// names the file and the line of the key at fault.
    pub fn from_file_in_flight(path: &std::path::Path) -> anyhow::Result<Recipe> {
        let (lines, steps): (Vec<text::StepLines>, Vec<Vec<OsString>>) =
            text::read_recipe(path)?.into_iter().unzip();
        let located = |k: usize, e: &clap::Error| text::recipe_error(path, &lines[k], e);
        Recipe::build(&steps, None, None, true, &located)?.for_flight()
    }

    /// The recipe, unless it converts: a request in flight goes on in its
    /// own format.
    fn for_flight(self) -> anyhow::Result<Recipe> {
        if self.to.is_some() || self.pipeline.names().contains(&"convert") {
            return Err(UsageError(
                "a request in flight goes on in its own format: a recipe for it does not convert"
                    .into(),
            )
            .into());
        }
        Ok(self)
    }

    fn build(
        steps: &[Vec<OsString>],
        model: Option<&str>,
        tokenizer: Option<&str>,
        in_flight: bool,
        step_error: &dyn Fn(usize, &clap::Error) -> anyhow::Error,
    ) -> anyhow::Result<Recipe> {
        if steps.is_empty() {
            return Err(UsageError("a recipe needs at least one step".into()).into());
        }
        let mut commands = Vec::new();
        for (k, words) in steps.iter().enumerate() {
            let full = std::iter::once(OsString::from("ctxclean")).chain(words.iter().cloned());
            let mut cli = Cli::command()
                .try_get_matches_from(full)
                .and_then(|m| Cli::from_arg_matches(&m))
                .map_err(|e| step_error(k, &e))?;
            if let Command::Trim(a) = &mut cli.command {
                a.step_by_default = in_flight;
            }
            commands.push(cli.command);
        }
        let budget = trim_budget(commands.iter()).map(|(n, _)| n);
        let budget_billed = trim_billed(commands.iter());
        let mut input: Option<InputArgs> = None;
        let mut to = None;
        for c in &commands {
            let Some((i, o)) = flags_of(c) else {
                return Err(UsageError(
                    "a recipe's steps are filter, compact-tools, trim, summarize and convert"
                        .into(),
                )
                .into());
            };
            if let Some(what) = file_flag(i, o) {
                return Err(UsageError(format!(
                    "{what} has no place in a recipe applied in memory"
                ))
                .into());
            }
            to = to.or(o.to);
            if input.is_none() || i.model.is_some() || i.tokenizer.is_some() {
                input = Some(i.clone());
            }
        }
        let mut input = input.unwrap_or_else(|| unreachable!("at least one step"));
        if input.model.is_none() {
            input.model = model.map(str::to_string);
        }
        if input.tokenizer.is_none() {
            if let Some(t) = tokenizer {
                let choice = crate::cli::parse_tokenizer(t)
                    .map_err(|e| UsageError(format!("tokenizer {t}: {e}")))?;
                input.tokenizer = Some(choice);
            }
        }
        let (found, _) = model_and_encoding(&input)?;
        let mut pipeline = Pipeline::new();
        let plain: ops::Decorate<'_> = &|e| Box::new(e);
        for c in &commands {
            let Some((_, output)) = flags_of(c) else {
                continue;
            };
            if let Some(op) = ops::operation(c, output, found.as_ref(), plain)? {
                pipeline.push_boxed(op);
            }
        }
        Ok(Recipe {
            pipeline,
            input,
            to,
            budget,
            budget_billed,
        })
    }
}

/// A step's error, by its place among the steps.
fn step_error(k: usize, e: &clap::Error) -> anyhow::Error {
    UsageError(format!("step {}: {}", k + 1, text::clap_message(e))).into()
}

/// The budget of the last `trim` among `commands` (in tokens, when given
/// as a number), and its `--step`.
pub fn trim_budget<'a>(
    commands: impl DoubleEndedIterator<Item = &'a Command>,
) -> Option<(usize, Option<u64>)> {
    commands.rev().find_map(|c| match c {
        Command::Trim(a) => match a.max_tokens {
            Some(crate::cli::BudgetArg::Tokens(n)) => Some((n, a.step)),
            _ => None,
        },
        _ => None,
    })
}

/// Whether the last `trim` among `commands` counts its budget in the
/// provider's tokens (`--budget-in billed`).
pub fn trim_billed<'a>(commands: impl DoubleEndedIterator<Item = &'a Command>) -> bool {
    commands.rev().find_map(|c| match c {
        Command::Trim(a) => Some(a.budget_in == crate::cli::BudgetInArg::Billed),
        _ => None,
    }) == Some(true)
}

/// What a recipe made of an input in memory: the bytes `ctxclean apply`
/// writes for it, its `--report`, and what the output format could not
/// hold.
pub struct Applied {
    /// The cleaned input, in its format.
    pub out: Vec<u8>,
    /// The report, as `--report` writes it.
    pub report: TransformReport,
    /// What was lost (a conversion's), each once.
    pub lost: Vec<Loss>,
    /// What the command line warns of on standard error (a conversation
    /// kept over budget, a summary that fell back, an emptied
    /// conversation), each `conversation N: …`.
    pub warnings: Vec<String>,
    /// Per conversation, each record of its list as written: which input
    /// record it is, and whether it changed; `None` for one converted to
    /// another format.
    pub records: Vec<Option<Vec<crate::format::RecordOut>>>,
}

impl Recipe {
    /// The name of its run: the command (`trim`), or its steps (`filter→trim`).
    pub fn name(&self) -> String {
        let ops = self.pipeline.names();
        if ops.len() > 1 {
            ops.join("→")
        } else {
            ops.first().copied().unwrap_or("convert").to_string()
        }
    }

    /// The tokenizer it counts with (`--tokenizer`, else `--model`'s), and
    /// its name.
    pub fn tokenizer(&self) -> anyhow::Result<(String, Tokenizer)> {
        let (model, encoding) = model_and_encoding(&self.input)?;
        let images = model.as_ref().and_then(Found::image_rule);
        let (name, make) = tokenizer_maker(&self.input, encoding, images)?;
        Ok((name, make()?))
    }

    /// Applies the recipe to a whole input (`source` names it in errors
    /// and the report), read as `from` or detected: what `ctxclean apply`
    /// does with a file. A [`CleanError`] comes back inside the error.
    pub fn apply(
        self,
        source: &str,
        bytes: Vec<u8>,
        from: Option<Format>,
    ) -> anyhow::Result<Applied> {
        self.prepare(Accounting::Full)?.apply(source, bytes, from)
    }

    /// The recipe ready to apply to many inputs: its engine and tokenizer
    /// made once. `accounting`: [`Accounting::Full`] counts every
    /// conversation for the report, as `--report` does; with
    /// [`Accounting::None`] the report has what changed, and the tokens
    /// only where an operation counted them.
    pub fn prepare(self, accounting: Accounting) -> anyhow::Result<Prepared> {
        let (tok_name, tok) = self.tokenizer()?;
        let command = self.name();
        let chain = self.pipeline.names().len() > 1;
        let read = ReadOptions {
            from: self.input.from,
            skip_invalid: self.input.skip_invalid,
            chunk: None,
            recall: None,
        };
        let engine = Engine::new(Options {
            pipeline: self.pipeline,
            to: self.to,
            accounting,
            ..Options::default()
        });
        Ok(Prepared {
            engine,
            tok,
            tok_name,
            command,
            chain,
            read,
            budget: self.budget,
            budget_billed: self.budget_billed,
        })
    }
}

/// A recipe ready to apply: its engine, its tokenizer, how it reads.
pub struct Prepared {
    engine: Engine,
    tok: Tokenizer,
    tok_name: String,
    command: String,
    chain: bool,
    read: ReadOptions,
    budget: Option<usize>,
    budget_billed: bool,
}

impl Prepared {
    /// Applies it to a whole input, as [`Recipe::apply`].
    pub fn apply(
        &self,
        source: &str,
        bytes: Vec<u8>,
        from: Option<Format>,
    ) -> anyhow::Result<Applied> {
        let read = ReadOptions {
            from: from.or(self.read.from),
            ..self.read.clone()
        };
        let cleaned = self.engine.clean(source, bytes, &read, &self.tok)?;
        Ok(self.applied(cleaned))
    }

    /// Applies it to a document its caller holds already parsed, as
    /// [`Prepared::apply`] to the same value written as JSON on one line
    /// (see [`crate::format::read_value`]), but for the report's sizes in
    /// bytes. `Ok(None)` when the value is not read that way (not one
    /// conversation object, or a fault): apply it to its text instead.
    pub fn apply_value(
        &self,
        source: &str,
        value: serde_json::Value,
        from: Option<Format>,
    ) -> anyhow::Result<Option<Applied>> {
        let Some(doc) = crate::format::read_value(source, value, from.or(self.read.from)) else {
            return Ok(None);
        };
        let cleaned = self.engine.clean_document(doc, &self.tok)?;
        Ok(Some(self.applied(cleaned)))
    }

    /// The budget of its last `trim`, in tokens (see [`Recipe::budget`]).
    pub fn budget(&self) -> Option<usize> {
        self.budget
    }

    /// Whether [`Prepared::budget`] is in the provider's tokens.
    pub fn budget_billed(&self) -> bool {
        self.budget_billed
    }

    /// Cleans one request body of `format` in flight, as `ctxclean serve`
    /// does (see [`crate::inflight::clean_request`]): never made invalid
    /// for its provider, and with `holds`, a conversation seen before goes
    /// on as it went with the new messages appended, until the budget or
    /// the model's cache prices say to clean it again.
    pub fn clean_request(
        &self,
        format: Format,
        body: &[u8],
        holds: Option<&crate::inflight::Holds>,
    ) -> Result<crate::inflight::Outcome, CleanError> {
        crate::inflight::clean_request(&self.engine, format, body, &self.tok, false, holds)
    }

    /// The same on a body already read and listed, with what was found of
    /// it (see [`crate::inflight::clean_listed_request`]).
    pub fn clean_listed_request(
        &self,
        format: Format,
        read: (
            std::borrow::Cow<'_, crate::format::Document>,
            Option<&crate::inflight::Listed>,
            &crate::inflight::Came,
        ),
        holds: Option<&crate::inflight::Holds>,
    ) -> Result<crate::inflight::Outcome, CleanError> {
        crate::inflight::clean_listed_request(&self.engine, format, read, &self.tok, false, holds)
    }

    /// What the engine made, with its report and the warnings of it.
    fn applied(&self, cleaned: crate::engine::Cleaned) -> Applied {
        let out = cleaned.bytes();
        let mut report = TransformReport::new(
            &self.command,
            &self.tok_name,
            cleaned.reports,
            cleaned.skipped,
        );
        report.notes = report.tally.notes(&self.command, self.chain);
        let warnings = report
            .conversations
            .iter()
            .flat_map(|c| {
                crate::report::warnings(c)
                    .into_iter()
                    .map(move |w| format!("conversation {}: {w}", c.index))
            })
            .collect();
        Applied {
            out,
            report,
            lost: cleaned.lost,
            warnings,
            records: cleaned.records,
        }
    }
}

/// A transforming step's input and output flags; `None` for the others.
fn flags_of(c: &Command) -> Option<(&InputArgs, &OutputArgs)> {
    match c {
        Command::Filter(a) => Some((&a.input, &a.output)),
        Command::CompactTools(a) => Some((&a.input, &a.output)),
        Command::Trim(a) => Some((&a.input, &a.output)),
        Command::Summarize(a) => Some((&a.input, &a.output)),
        Command::Convert(a) => Some((&a.input, &a.output)),
        _ => None,
    }
}

/// The first flag of files given (inputs, `-o`, `--out-dir`,
/// `--in-place`, `--report`, `--report-jsonl`, `--save-recipe`): a recipe
/// applied in memory (the proxy, the Python package) has no files.
pub fn file_flag(i: &InputArgs, o: &OutputArgs) -> Option<&'static str> {
    let given = [
        (!i.inputs.is_empty(), "input files"),
        (o.output.is_some(), "-o"),
        (o.out_dir.is_some(), "--out-dir"),
        (o.in_place, "--in-place"),
        (o.report.is_some(), "--report"),
        (o.report_jsonl.is_some(), "--report-jsonl"),
        (o.save_recipe.is_some(), "--save-recipe"),
    ];
    given.iter().find(|(on, _)| *on).map(|(_, what)| *what)
}

/// One problem `validate --json` lists: where, for which provider, what.
#[derive(Debug, serde::Serialize)]
pub struct Problem {
    /// The input's name.
    pub source: String,
    /// The conversation's index in it.
    pub conversation: usize,
    /// The provider whose rules it breaks.
    pub provider: &'static str,
    /// The problem.
    #[serde(flatten)]
    pub problem: crate::validate::Problem,
}

/// The problems of every conversation of a whole input in memory, for
/// `provider` (`openai`, `anthropic`, `gemini`, `responses`) or the one of
/// its format, as `validate --json` lists them.
pub fn validate(
    source: &str,
    bytes: Vec<u8>,
    from: Option<Format>,
    provider: Option<&str>,
) -> anyhow::Result<Vec<Problem>> {
    use crate::validate::Provider;
    let forced = match provider {
        None => None,
        Some("openai") => Some(Provider::OpenAi),
        Some("anthropic") => Some(Provider::Anthropic),
        Some("gemini") => Some(Provider::Gemini),
        Some("responses") => Some(Provider::Responses),
        Some(other) => {
            return Err(UsageError(format!(
                "provider {other}: one of openai, anthropic, gemini, responses"
            ))
            .into())
        }
    };
    let read = ReadOptions {
        from,
        ..ReadOptions::default()
    };
    let doc = crate::format::read_document(source, bytes, &read)?;
    let provider = forced.unwrap_or(Provider::for_format(doc.source_format));
    let mut found = Vec::new();
    for (k, c) in doc.conversations.iter().enumerate() {
        for problem in crate::validate::validate(c, doc.source_format, provider) {
            found.push(Problem {
                source: doc.source.clone(),
                conversation: k,
                provider: provider.name(),
                problem,
            });
        }
    }
    Ok(found)
}
