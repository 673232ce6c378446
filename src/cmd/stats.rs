//! `ctxclean stats`: token counts per conversation or file, as a table or
//! JSON, streamed.

use std::io::{self, Write};

use ctxclean::report::StatsWriter;
use ctxclean::stats::{self, FileStats, Totals};

use super::output::spool_bytes;
use super::{failed, prefetch, prepare, stdout_open, Teller};
use crate::cli::{self, ByArg};
use crate::run::{drive, Event};
use ctxclean::io::Spool;
pub(crate) use ctxclean::recipe::stats::{priced, spec, style};

/// `then stats`: as the library renders it, with bars as wide as the terminal leaves.
pub(crate) fn render(
    args: &cli::StatsArgs,
    model: Option<&ctxclean::models::Found>,
    input: &cli::InputArgs,
    tok_name: &str,
    files: Vec<(String, Vec<ctxclean::stats::ConversationStats>, usize)>,
    out: &mut dyn Write,
) -> io::Result<()> {
    ctxclean::recipe::stats::render(args, model, input, tok_name, files, out, bar_width())
}

/// `ctxclean stats`: counted chunk by chunk on the workers, printed in order.
pub(crate) fn run(args: cli::StatsArgs) -> anyhow::Result<()> {
    let mut spec = spec(&args)?;
    let (model, encoding) = super::model_and_encoding(&args.input)?;
    if let Some(m) = &model {
        say_model_notes(m, &args.input);
    }
    spec.model = model.clone();
    let image_rule = model.as_ref().and_then(ctxclean::models::Found::image_rule);
    let (tok_name, make_tokenizer) = super::tokenizer_maker(&args.input, encoding, image_rule)?;
    let tok_name = tok_name.as_str();
    stdout_open()?;
    let (sources, settings) = prepare("stats", &args.input, args.quiet, None)?;
    super::output::check_files(&sources, &super::output::named("--svg", &args.svg), &[])?;
    prefetch(encoding);
    let by_file = args.by == ByArg::File;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut writer =
        StatsWriter::begin(&mut out, tok_name, style(&args), by_file)?.with_bars(bar_width());
    let mut total = Totals {
        passed_over: settings.passed_over.clone(),
        ..Totals::default()
    };
    // Per file: its rows, held until the file is known to be good.
    let mut spool: Option<Spool> = None;
    let mut file_stats: Option<FileStats> = None;
    let mut notes = Teller::new("stats", "note");
    // --svg: each conversation's timeline, in order.
    let mut charts: Vec<(String, ctxclean::stats::Timeline)> = Vec::new();
    let failures = drive(
        &sources,
        &settings,
        make_tokenizer,
        |tok, doc| {
            // Images are charged by the provider of the document's format.
            tok.set_format(doc.source_format);
            let found = (stats::stats(&doc, tok, &spec), doc.skipped.len());
            super::release(doc, sources.len());
            Ok(found)
        },
        |event, progress| {
            match event {
                Event::Chunk(f, (convs, skipped), _) => {
                    let spool = spool.get_or_insert_with(|| Spool::new(spool_bytes()));
                    let fs = file_stats.get_or_insert_with(|| FileStats::new(&sources[f].name()));
                    fs.skipped_lines += skipped;
                    // Indices count over the whole file, not the chunk.
                    let offset = fs.conversations;
                    for mut c in convs {
                        c.index += offset;
                        if args.svg.is_some() {
                            if let Some(t) = &c.timeline {
                                charts.push((
                                    format!("{} · conversation {}", c.source, c.index),
                                    t.clone(),
                                ));
                            }
                        }
                        if !args.timeline {
                            c.timeline = None;
                        }
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
    priced(&mut total, spec.model.as_ref(), &args.input);
    writer.finish(&mut out, tok_name, &total)?;
    if args.jsonl && !args.quiet {
        // The rows have no totals: they are said on standard error.
        say!(
            "ctxclean stats: {}{}",
            ctxclean::report::total_counts(&total, tok_name),
            ctxclean::report::skipped_suffix(total.skipped_lines)
        );
    }
    if let Some(path) = &args.svg {
        let svg = ctxclean::report::timeline_svg(&charts);
        super::output::write_file(path, "the chart", svg.as_bytes())?;
    }
    out.flush()?;
    drop(out);
    notes.finish(args.json || args.jsonl);
    failed(failures, &sources)
}

/// What `--model` means for the counts and the prices, said once.
fn say_model_notes(m: &ctxclean::models::Found, input: &cli::InputArgs) {
    if m.family() != "openai" && input.tokenizer.is_none() {
        say!(
            "ctxclean stats: note: {} counts with its own tokenizer, which is not public; \
             these are o200k_base counts",
            m.name
        );
    }
    if m.name != m.asked {
        say!(
            "ctxclean stats: note: --model {}: priced as {}",
            m.asked,
            m.name
        );
    }
}

/// The width of the bars of the stats tables: what the terminal leaves
/// beside the numbers (10 to 40 characters), 20 on a pipe or a file.
fn bar_width() -> usize {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() {
        return 20;
    }
    // SAFETY: TIOCGWINSZ fills a winsize this function owns.
    let cols = unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 {
            usize::from(ws.ws_col)
        } else {
            80
        }
    };
    cols.saturating_sub(50).clamp(10, 40)
}
