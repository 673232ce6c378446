//! `ctxclean bill`: the proxy's log added up (see `ctxclean::bill`).

use std::io::{self, BufRead, Write};

use anyhow::Context;
use ctxclean::bill::{self, Bill, Row};
use ctxclean::numbers::thousands;

use super::stdout_open;
use crate::cli::BillArgs;

pub(crate) fn run(args: BillArgs) -> anyhow::Result<()> {
    // The chart is checked against the logs before any is read.
    let logs: Vec<(String, std::path::PathBuf)> = args
        .logs
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .map(|p| (format!("the log {}", p.display()), p.clone()))
        .collect();
    super::output::check_files(&[], &super::output::named("--svg", &args.svg), &logs)?;
    // Read a line at a time: a log may be hundreds of megabytes.
    let by_conversation = args.by == crate::cli::BillBy::Conversation;
    let mut tally = if by_conversation {
        bill::Tally::by_conversation()
    } else {
        bill::Tally::default()
    };
    if let Some(prices) = model_prices(args.model.as_deref(), args.prices.as_deref())? {
        tally = tally.priced_at(prices);
    }
    let mut add = |reader: &mut dyn BufRead, name: &str| -> anyhow::Result<()> {
        read_lines(reader, &mut tally).with_context(|| format!("reading {name}"))
    };
    if args.logs.is_empty() || args.logs.iter().any(|p| p.as_os_str() == "-") {
        add(&mut io::stdin().lock(), "standard input")?;
    }
    for path in args.logs.iter().filter(|p| p.as_os_str() != "-") {
        let file = std::fs::File::open(path)
            .with_context(|| format!("reading the log {}", path.display()))?;
        add(
            &mut io::BufReader::new(file),
            &format!("the log {}", path.display()),
        )?;
    }
    let b = tally.finish();
    if b.total.requests == 0 {
        anyhow::bail!(
            "no request line of `ctxclean serve --log` in the input ({} other line(s))",
            b.skipped
        );
    }
    if b.implausible > 0 {
        say!(
            "ctxclean bill: note: {} request line(s) left out: a figure on them no proxy writes",
            b.implausible
        );
    }
    if let Some(path) = &args.svg {
        super::output::write_file(path, "the chart", bill::svg(&b).as_bytes())?;
    }
    stdout_open()?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &b)?;
        writeln!(out)?;
    } else {
        table(&mut out, &b, by_conversation)?;
    }
    out.flush().context("writing to standard output")
}

/// `ctxclean cache-units`: each body's units, as the meters see them, one
/// JSON line a body (`{"units": [{"part", "tokens"}], "total"}`).
pub(crate) fn cache_units(args: crate::cli::CacheUnitsArgs) -> anyhow::Result<()> {
    use ctxclean::inflight::cache::{Part, Sizes, Units};
    let tok = ctxclean::tokens::Tokenizer::new(args.tokenizer.into())?;
    tok.set_format(args.format);
    let sizes = Sizes::new(1 << 16);
    stdout_open()?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = line.context("reading standard input")?;
        let units = Units::of(args.format, line.as_bytes(), &tok, &sizes)
            .with_context(|| format!("standard input, line {}: not a JSON object", n + 1))?;
        let parts: Vec<serde_json::Value> = units
            .sizes()
            .map(|(part, tokens)| {
                let part = match part {
                    Part::Tools => "tools".to_string(),
                    Part::System => "system".to_string(),
                    Part::Item(i) => format!("item {i}"),
                };
                serde_json::json!({"part": part, "tokens": tokens})
            })
            .collect();
        let line = serde_json::json!({"units": parts, "total": units.total()});
        writeln!(out, "{line}")?;
    }
    out.flush().context("writing to standard output")
}

/// `--model NAME` (with `--prices FILE`) of `bill` and `serve`: the prices
/// every request is priced at; a usage error for a model the table does
/// not know or does not price.
pub(crate) fn model_prices(
    model: Option<&str>,
    prices: Option<&std::path::Path>,
) -> anyhow::Result<Option<ctxclean::replay::Prices>> {
    let Some(name) = model else {
        return Ok(None);
    };
    let found = ctxclean::recipe::find_model(name, prices)?;
    super::replay::prices_of(&found).map(Some)
}

/// A log line longer than this is skipped (a request line is a few
/// kilobytes), without being held.
const MAX_LINE: usize = 1 << 20;

/// Each line of `reader` into the tally: a line that is not UTF-8, or is
/// past [`MAX_LINE`], is skipped as a line that is not JSON is.
fn read_lines(reader: &mut dyn BufRead, tally: &mut bill::Tally) -> io::Result<()> {
    let mut line = Vec::new();
    let mut over = false;
    let mut end = |line: &mut Vec<u8>, over: &mut bool| {
        match std::str::from_utf8(line) {
            Ok(text) if !*over => tally.add(text),
            _ => tally.skip(),
        }
        line.clear();
        *over = false;
    };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if !line.is_empty() || over {
                end(&mut line, &mut over);
            }
            return Ok(());
        }
        let (piece, used, ends) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        if !over && line.len() + piece.len() <= MAX_LINE {
            line.extend_from_slice(piece);
        } else if !over {
            over = true;
            line = Vec::new();
        }
        reader.consume(used);
        if ends {
            end(&mut line, &mut over);
        }
    }
}

/// What the proxy saved, or what it cost more, the same line either way;
/// unpriced traffic said to be unpriced, never $0.
fn verdict(b: &Bill) -> Vec<String> {
    let t = &b.total;
    if t.priced == 0 {
        let mut models: Vec<&str> = b.rows.iter().map(|r| r.model.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        return vec![format!(
            "dollars: unpriced: no request named a model the price table knows ({}); \
             `ctxclean bill --model NAME` prices the billed tokens (`--prices FILE` adds a model), \
             as `ctxclean serve --model NAME` does as it logs",
            models.join(", ")
        )];
    }
    let diff = t.dollars_as_came - t.dollars;
    let mut out = vec![if diff >= 0.0 {
        format!(
            "saved (estimate): ${diff:.4} of ${:.4} the requests as they came would have cost",
            t.dollars_as_came
        )
    } else {
        format!(
            "cost more (estimate): ${:.4} more than the ${:.4} the requests as they came would have cost",
            -diff, t.dollars_as_came
        )
    }];
    if t.priced < t.requests {
        out.push(format!(
            "note: dollars are over the {} of {} request(s) priced (the others name a model without prices, or had no usage read; `--model NAME` prices every billed request)",
            t.priced, t.requests
        ));
    }
    if t.estimated < t.priced {
        out.push(format!(
            "note: {} priced request(s) carry no estimate of their cost as they came, and count as what they cost",
            t.priced - t.estimated
        ));
    }
    out
}

fn table(out: &mut dyn Write, b: &Bill, by_conversation: bool) -> io::Result<()> {
    let head = [
        if by_conversation {
            "conversation, from"
        } else {
            "day"
        },
        "model",
        "requests",
        "input",
        "cache read",
        "cache write",
        "output",
        "dollars",
        "as they came",
        "cache read share",
        "billed/counted",
    ];
    let cells = |r: &Row| -> Vec<String> {
        vec![
            match &r.conversation {
                Some(c) => format!("{c} {}", r.day),
                None => r.day.clone(),
            },
            r.model.clone(),
            format!(
                "{} ({} billed)",
                thousands(r.requests as usize),
                thousands(r.billed_requests as usize)
            ),
            thousands(r.input as usize),
            thousands(r.cache_read as usize),
            thousands(r.cache_write as usize),
            thousands(r.output as usize),
            if r.priced == 0 {
                "unpriced".into()
            } else {
                format!("${:.4}", r.dollars)
            },
            if r.priced == 0 {
                "-".into()
            } else {
                format!("${:.4}", r.dollars_as_came)
            },
            format!("{:.0}%", r.cache_read_share() * 100.0),
            r.billed_per_counted()
                .map_or("-".into(), |x| format!("{x:.2}")),
        ]
    };
    let mut rows: Vec<Vec<String>> = b.rows.iter().map(cells).collect();
    rows.push(cells(&b.total));
    for line in super::aligned(&head, &rows, 2) {
        writeln!(out, "{line}")?;
    }
    let t = &b.total;
    writeln!(out)?;
    for line in verdict(b) {
        writeln!(out, "{line}")?;
    }
    if t.dry_run > 0 {
        writeln!(out, "a --dry-run log: {} request(s) the proxy would have changed went as they came; the saving is what it would have been", t.dry_run)?;
    }
    if !t.misses.is_empty() {
        let misses: Vec<String> = t.misses.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(out, "cache misses: {}", misses.join(", "))?;
    }
    if b.skipped > 0 {
        writeln!(
            out,
            "note: {} line(s) were not request lines and were left out",
            b.skipped
        )?;
    }
    if b.implausible > 0 {
        writeln!(
            out,
            "note: {} request line(s) were left out: a figure on them no proxy writes",
            b.implausible
        )?;
    }
    Ok(())
}
