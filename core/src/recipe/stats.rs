//! `stats` as the command line counts and writes it: its flags into a
//! spec, and the JSON or table of conversations' stats, priced.

use std::io::{self, Write};

use super::UsageError;
use crate::cli::{self, ByArg};
use crate::report::{StatsStyle, StatsWriter};
use crate::stats::{FileStats, StatsSpec, Totals};

/// Names the model and the sources of its prices in the totals.
pub fn priced(total: &mut Totals, model: Option<&crate::models::Found>, input: &cli::InputArgs) {
    if let Some(m) = model {
        total.model = Some(m.name.clone());
        let mut sources = crate::models::Catalog::builtin_sources();
        if let Some(p) = &input.prices {
            sources.push(crate::models::Source {
                source: format!("--prices {}", p.display()),
                date: String::new(),
            });
        }
        total.prices = sources;
    }
}

/// `then stats`: the stats of a chain's result, file by file in input
/// order, written as `stats` writes them (a table, or JSON with --json).
pub fn render(
    args: &cli::StatsArgs,
    model: Option<&crate::models::Found>,
    input: &cli::InputArgs,
    tok_name: &str,
    files: Vec<(String, Vec<crate::stats::ConversationStats>, usize)>,
    out: &mut dyn Write,
    bars: usize,
) -> io::Result<()> {
    let by_file = args.by == ByArg::File;
    let mut writer = StatsWriter::begin(out, tok_name, style(args), by_file)?.with_bars(bars);
    let mut total = Totals::default();
    for (name, convs, skipped) in files {
        let mut fs = FileStats::new(&name);
        fs.skipped_lines = skipped;
        for c in convs {
            fs.add(&c);
            if !by_file {
                writer.conversation(out, &c)?;
            }
        }
        total.add_file(&fs);
        if by_file {
            writer.file(out, &fs)?;
        }
    }
    priced(&mut total, model, input);
    writer.finish(out, tok_name, &total)
}

/// How `stats` is written, from its flags.
pub fn style(args: &cli::StatsArgs) -> StatsStyle {
    if args.jsonl {
        StatsStyle::Jsonl
    } else if args.json {
        StatsStyle::Json
    } else {
        StatsStyle::Table
    }
}

/// The spec `stats` counts with, from its flags; flags that cannot apply
/// together are a usage error.
pub fn spec(args: &cli::StatsArgs) -> Result<StatsSpec, UsageError> {
    if args.by == ByArg::File && (args.per_message || args.tools) {
        let flag = if args.per_message {
            "--per-message"
        } else {
            "--tools"
        };
        return Err(UsageError(format!(
            "{flag} lists each conversation's messages or calls; with --by file there are only \
             per-file sums (drop --by file, or {flag})"
        )));
    }
    if args.by == ByArg::File && args.jsonl {
        return Err(UsageError(
            "--jsonl writes one row per conversation; sum the rows by source for per-file figures \
             (drop --by file, or use --json)"
                .into(),
        ));
    }
    if args.max_tokens.is_some() && !args.timeline && args.svg.is_none() {
        return Err(UsageError(
            "--max-tokens draws a budget on --timeline or --svg; give one of them".into(),
        ));
    }
    if args.by == ByArg::File && (args.timeline || args.svg.is_some()) {
        return Err(UsageError(
            "--timeline and --svg draw each conversation; with --by file there are only per-file sums"
                .into(),
        ));
    }
    Ok(StatsSpec {
        per_message: args.per_message,
        tools: args.tools,
        large_context: args.large_context,
        timeline: args.timeline || args.svg.is_some(),
        budget: args.max_tokens,
        ..StatsSpec::default()
    })
}

/// What `stats` counts an input in memory with: its flags (`--json`,
/// `--model`, `--tokenizer`), spec, model, tokenizer and the tokenizer's name.
struct Counting {
    args: cli::StatsArgs,
    spec: StatsSpec,
    model: Option<crate::models::Found>,
    tok_name: String,
    tok: crate::tokens::Tokenizer,
}

/// The [`Counting`] of `--model` and `--tokenizer`, made once per thread
/// (the last few are kept): a front end that counts call after call (the
/// Python package) pays for the flags and the tokenizer once.
fn with_counting<T>(
    model: Option<&str>,
    tokenizer: Option<&str>,
    f: impl FnOnce(&Counting) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    type Key = (Option<String>, Option<String>);
    thread_local! {
        static MADE: std::cell::RefCell<Vec<(Key, std::rc::Rc<Counting>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let key: Key = (model.map(str::to_string), tokenizer.map(str::to_string));
    let found = MADE.with(|m| {
        m.borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, c)| c.clone())
    });
    let c = match found {
        Some(c) => c,
        None => {
            let c = std::rc::Rc::new(counting(model, tokenizer)?);
            MADE.with(|m| {
                let mut m = m.borrow_mut();
                if m.len() >= 8 {
                    m.remove(0);
                }
                m.push((key, c.clone()));
            });
            c
        }
    };
    f(&c)
}

fn counting(model: Option<&str>, tokenizer: Option<&str>) -> anyhow::Result<Counting> {
    use clap::{CommandFactory, FromArgMatches};
    let mut words = vec!["ctxclean", "stats", "--json"];
    if let Some(m) = model {
        words.extend(["--model", m]);
    }
    if let Some(t) = tokenizer {
        words.extend(["--tokenizer", t]);
    }
    let cli = cli::Cli::command()
        .try_get_matches_from(words)
        .and_then(|m| cli::Cli::from_arg_matches(&m))
        .map_err(|e| UsageError(super::text::first_line(&e.to_string())))?;
    let cli::Command::Stats(args) = cli.command else {
        unreachable!("parsed as stats");
    };
    let mut spec = spec(&args)?;
    let (found, encoding) = super::model_and_encoding(&args.input)?;
    spec.model = found.clone();
    let images = found.as_ref().and_then(crate::models::Found::image_rule);
    let (tok_name, make) = super::tokenizer_maker(&args.input, encoding, images)?;
    let tok = make()?;
    Ok(Counting {
        args,
        spec,
        model: found,
        tok_name,
        tok,
    })
}

/// Every conversation's stats of a whole input in memory, as `stats`
/// counts them, and the input's name and skipped lines.
fn counted(
    c: &Counting,
    source: &str,
    bytes: Vec<u8>,
    from: Option<crate::format::Format>,
) -> anyhow::Result<(String, Vec<crate::stats::ConversationStats>, usize)> {
    let read = crate::format::ReadOptions {
        from,
        ..crate::format::ReadOptions::default()
    };
    let doc = crate::format::read_document(source, bytes, &read)?;
    c.tok.set_format(doc.source_format);
    let convs = crate::stats::stats(&doc, &c.tok, &c.spec);
    Ok((doc.source.clone(), convs, doc.skipped.len()))
}

/// `ctxclean stats --json` of a whole input in memory (`source` names it),
/// read as `from` or detected, with `--model` and `--tokenizer`: the bytes
/// the command writes for it.
pub fn json(
    source: &str,
    bytes: Vec<u8>,
    from: Option<crate::format::Format>,
    model: Option<&str>,
    tokenizer: Option<&str>,
) -> anyhow::Result<Vec<u8>> {
    let c = counting(model, tokenizer)?;
    let files = vec![counted(&c, source, bytes, from)?];
    let mut out = Vec::new();
    render(
        &c.args,
        c.model.as_ref(),
        &c.args.input,
        &c.tok_name,
        files,
        &mut out,
        20,
    )?;
    Ok(out)
}

/// The tokens `stats` counts in a whole input in memory: of all its
/// conversations, or of `text` alone when given.
pub fn tokens(
    bytes: Vec<u8>,
    text: Option<&str>,
    from: Option<crate::format::Format>,
    model: Option<&str>,
    tokenizer: Option<&str>,
) -> anyhow::Result<usize> {
    with_counting(model, tokenizer, |c| {
        if let Some(text) = text {
            return Ok(c.tok.count_text(text));
        }
        let (_, convs, _) = counted(c, "<python>", bytes, from)?;
        Ok(convs.iter().map(|s| s.tokens).sum())
    })
}
