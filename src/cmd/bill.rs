//! `ctxclean bill`: the proxy's log added up (see `ctxclean::bill`).

use std::io::{self, BufRead, Write};

use anyhow::Context;
use ctxclean::bill::{self, Bill, Row};
use ctxclean::numbers::thousands;

use super::stdout_open;
use crate::cli::BillArgs;

pub(crate) fn run(args: BillArgs) -> anyhow::Result<()> {
    // Read a line at a time: a log may be hundreds of megabytes.
    let by_conversation = args.by == crate::cli::BillBy::Conversation;
    let mut tally = if by_conversation {
        bill::Tally::by_conversation()
    } else {
        bill::Tally::default()
    };
    let mut add = |reader: &mut dyn BufRead, name: &str| -> anyhow::Result<()> {
        let mut line = String::new();
        loop {
            line.clear();
            if reader
                .read_line(&mut line)
                .with_context(|| format!("reading {name}"))?
                == 0
            {
                return Ok(());
            }
            tally.add(&line);
        }
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
    if let Some(path) = &args.svg {
        std::fs::write(path, bill::svg(&b))
            .with_context(|| format!("writing {}", path.display()))?;
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
            format!("${:.4}", r.dollars),
            format!("${:.4}", r.dollars_as_came),
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
    writeln!(
        out,
        "saved (estimate): ${:.4} of ${:.4} the requests as they came would have cost",
        t.dollars_as_came - t.dollars,
        t.dollars_as_came
    )?;
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
    Ok(())
}
