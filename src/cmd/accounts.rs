//! What a transforming run tells about what it did, file after file: the
//! reports (kept for `--report`, rows for `--report-jsonl`), the tally the
//! summary line needs, notes and warnings, losses, and `then stats`. What a
//! file tells is held until the file is known to be good.

use std::io::{self, Write};

use anyhow::Context;
use ctxclean::engine::Cleaned;
use ctxclean::io::{Output, Spool};
use ctxclean::report::{ConversationReport, Tally};
use ctxclean::stats::ConversationStats;

use super::output::spool_bytes;
use super::{warnings, Held, Teller};
use crate::run::Progress;

/// `then stats`: per file, its name, conversations' stats and skipped lines.
pub(crate) type StatsFiles = Vec<(String, Vec<ConversationStats>, usize)>;

/// The accounts of a run.
pub(crate) struct Accounts<'a> {
    command: &'a str,
    tokenizer: &'a str,
    /// Every conversation's report, kept only for `--report`; the summary
    /// line needs only the tally, so a stream of millions of conversations
    /// runs in bounded memory.
    keep_reports: bool,
    pub(crate) reports: Vec<ConversationReport>,
    pub(crate) tally: Tally,
    file_tally: Tally,
    /// The current file's conversations so far (indices count over the
    /// whole file, not the chunk), its skipped lines, its first report.
    file_conversations: usize,
    file_skipped: usize,
    first_report_of_file: usize,
    /// Notes and warnings are worth telling even with -q, as they come; a
    /// file's are held until it is known to be good.
    pub(crate) notes: Teller<'a>,
    pub(crate) warned: Teller<'a>,
    file_notes: Held,
    file_warned: Held,
    /// Losses over the whole run, by what and why, for the summary line.
    pub(crate) losses: Vec<(String, String, usize)>,
    pub(crate) stats_files: StatsFiles,
    file_stats: Option<(String, Vec<ConversationStats>)>,
    /// `--report-jsonl`: where rows go, and the current file's, held.
    row_sink: Option<RowSink>,
    file_rows: Option<Spool>,
}

impl<'a> Accounts<'a> {
    /// Empty accounts; `report_jsonl` is opened now (`-` is standard error).
    pub(crate) fn new(
        command: &'a str,
        tokenizer: &'a str,
        keep_reports: bool,
        report_jsonl: Option<&std::path::Path>,
    ) -> anyhow::Result<Accounts<'a>> {
        let row_sink = match report_jsonl {
            Some(p) if is_stderr(p) => Some(RowSink::Stderr),
            Some(p) => {
                Some(RowSink::File(Output::open(p).with_context(|| {
                    format!("opening the report {}", p.display())
                })?))
            }
            None => None,
        };
        Ok(Accounts {
            command,
            tokenizer,
            keep_reports,
            reports: Vec::new(),
            tally: Tally::default(),
            file_tally: Tally::default(),
            file_conversations: 0,
            file_skipped: 0,
            first_report_of_file: 0,
            notes: Teller::new(command, "note"),
            warned: Teller::new(command, "warning"),
            file_notes: Held::default(),
            file_warned: Held::default(),
            losses: Vec::new(),
            stats_files: Vec::new(),
            file_stats: None,
            row_sink,
            file_rows: None,
        })
    }

    /// Counts in one cleaned chunk of the current file (`name`).
    pub(crate) fn chunk(
        &mut self,
        name: impl FnOnce() -> String,
        chunk: Cleaned,
        progress: &mut Progress,
    ) -> anyhow::Result<()> {
        if let Some(convs) = chunk.stats {
            let fs = self.file_stats.get_or_insert_with(|| (name(), Vec::new()));
            let offset = fs.1.len();
            fs.1.extend(convs.into_iter().map(|mut c| {
                c.index += offset;
                c
            }));
        }
        let offset = self.file_conversations;
        self.file_conversations += chunk.reports.len();
        for mut r in chunk.reports {
            r.index += offset;
            progress.conversations += 1;
            progress.before += r.before.tokens;
            *progress.after.get_or_insert(0) += r.after.tokens;
            self.report(r)?;
        }
        self.file_skipped += chunk.skipped;
        for loss in chunk.lost {
            match self
                .losses
                .iter_mut()
                .find(|(w, r, _)| *w == loss.what && *r == loss.reason)
            {
                Some((_, _, n)) => *n += 1,
                None => self.losses.push((loss.what, loss.reason, 1)),
            }
        }
        Ok(())
    }

    /// One conversation's report: told, tallied, rowed, kept.
    fn report(&mut self, r: ConversationReport) -> anyhow::Result<()> {
        self.file_notes.tell_all(&r.source, r.index, &r.notes);
        self.file_warned.tell_all(&r.source, r.index, &warnings(&r));
        self.file_tally.add(&r);
        if self.row_sink.is_some() {
            let rows = self
                .file_rows
                .get_or_insert_with(|| Spool::new(spool_bytes()));
            serde_json::to_writer(&mut *rows, &r.row(self.command, self.tokenizer))
                .context("holding the report rows")?;
            rows.write_all(b"\n").context("holding the report rows")?;
        }
        if self.keep_reports {
            self.reports.push(r);
        }
        Ok(())
    }

    /// The current file failed: what was made of it is dropped.
    pub(crate) fn failed(&mut self) {
        self.file_stats = None;
        self.reports.truncate(self.first_report_of_file);
        self.file_rows = None;
        self.file_tally = Tally::default();
        (self.file_notes, self.file_warned) = (Held::default(), Held::default());
        (self.file_conversations, self.file_skipped) = (0, 0);
    }

    /// The current file is done and good: what it held is told and counted.
    pub(crate) fn end(&mut self) -> anyhow::Result<()> {
        if let Some((name, convs)) = self.file_stats.take() {
            self.stats_files.push((name, convs, self.file_skipped));
        }
        if let (Some(rows), Some(sink)) = (self.file_rows.take(), self.row_sink.as_mut()) {
            sink.write(rows)?;
        }
        self.first_report_of_file = self.reports.len();
        self.file_tally
            .skipped(std::mem::take(&mut self.file_skipped));
        self.tally.merge(std::mem::take(&mut self.file_tally));
        self.notes.release(std::mem::take(&mut self.file_notes));
        self.warned.release(std::mem::take(&mut self.file_warned));
        self.file_conversations = 0;
        Ok(())
    }

    /// The run is done: the rows file is put in place.
    pub(crate) fn commit_rows(&mut self) -> anyhow::Result<()> {
        if let Some(RowSink::File(file)) = self.row_sink.take() {
            file.commit().context("writing the report rows")?;
        }
        Ok(())
    }
}

/// `--report-jsonl -` writes to standard error.
pub(crate) fn is_stderr(path: &std::path::Path) -> bool {
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
