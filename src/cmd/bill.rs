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
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    let mut n = 0;
    while let Some((over, _)) = next_line(&mut input, (crate::cli::MAX_BODY, false), &mut line)
        .context("reading standard input")?
    {
        n += 1;
        if over {
            anyhow::bail!(
                "standard input, line {n}: a body over {} MiB (the proxy's --max-body refuses it)",
                crate::cli::MAX_BODY >> 20
            );
        }
        let units = Units::of(args.format, &line, &tok, &sizes)
            .with_context(|| format!("standard input, line {n}: not a JSON object"))?;
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

/// Bytes read from one log without a line of the proxy's in them, after
/// which it is taken for what it is, not a log (`/dev/zero`, a binary file
/// named by mistake): an error, not a read without end.
const NOT_A_LOG: u64 = 64 << 20;

/// The next line of `reader` into `line` (cleared first, its newline
/// dropped), at most `max` bytes of it kept: `None` at the end; else
/// whether it was past `max` (`line` then empty, and with `skip`, the rest
/// of the line read and dropped; without, nothing more read), and the
/// bytes read.
fn next_line(
    reader: &mut dyn BufRead,
    (max, skip): (usize, bool),
    line: &mut Vec<u8>,
) -> io::Result<Option<(bool, u64)>> {
    line.clear();
    let (mut over, mut read) = (false, 0u64);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((read > 0).then_some((over, read)));
        }
        let (piece, used, ends) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        if !over && line.len() + piece.len() <= max {
            line.extend_from_slice(piece);
        } else if !over {
            over = true;
            *line = Vec::new();
            if !skip {
                return Ok(Some((over, read)));
            }
        }
        reader.consume(used);
        read += used as u64;
        if ends {
            return Ok(Some((over, read)));
        }
    }
}

/// Each line of `reader` into the tally: a line that is not UTF-8, or is
/// past [`MAX_LINE`], is skipped as a line that is not JSON is. Past
/// [`NOT_A_LOG`] bytes with no line of the proxy's, an error.
fn read_lines(reader: &mut dyn BufRead, tally: &mut bill::Tally) -> io::Result<()> {
    let mut line = Vec::new();
    let (mut read, mut n) = (0u64, 0u64);
    let before = tally.log_lines();
    loop {
        // Until a line of the proxy's is read, no further than the bound,
        // even within a line that never ends.
        let next = if tally.log_lines() == before {
            let mut bounded = io::Read::take(&mut *reader, NOT_A_LOG + 1 - read);
            next_line(&mut bounded, (MAX_LINE, true), &mut line)?
        } else {
            next_line(reader, (MAX_LINE, true), &mut line)?
        };
        let Some((over, bytes)) = next else {
            break;
        };
        (read, n) = (read + bytes, n + 1);
        match std::str::from_utf8(&line) {
            Ok(text) if !over => tally.add(text),
            _ => tally.skip(),
        }
        if read > NOT_A_LOG && tally.log_lines() == before {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "not a log of `ctxclean serve --log`: no line of one in its first {} MiB ({n} line(s) read)",
                    NOT_A_LOG >> 20
                ),
            ));
        }
    }
    Ok(())
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
