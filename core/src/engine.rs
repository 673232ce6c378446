//! The engine call every front end shares: one input in, the cleaned
//! input, what changed and what was lost out.
//!
//! The CLI calls [`Engine::clean_document`] on every document (or chunk of a
//! streamed JSONL file) it reads; a front end holding a whole input in
//! memory (a request body in the proxy, a payload handed over by the Python
//! package) calls [`Engine::clean`]. Both run the same steps: convert if
//! asked, run the pipeline, refuse what the options forbid, write, and
//! turn what the writer could not express into reported losses. Nothing
//! here prints or touches a file.

use std::sync::Arc;

use crate::changes::{Action, Change, ConversationReport};
use crate::error::InputError;
use crate::format::{
    read_document, write_document_into, Document, Format, Loss, ReadOptions, RecordOut,
};
use crate::numbers::plural;
use crate::ops::{Accounting, Pipeline};
use crate::stats::{ConversationStats, StatsSpec};
use crate::tokens::Tokenizer;

/// What an [`Engine`] does to each input.
#[derive(Default)]
pub struct Options {
    /// The operations, in order (none: the input is only read and written,
    /// or converted).
    pub pipeline: Pipeline,
    /// `--to`: the format written, when not the input's own.
    pub to: Option<Format>,
    /// `--strict`: an input whose conversion would lose anything fails.
    pub strict: bool,
    /// How much token accounting the reports carry.
    pub accounting: Accounting,
    /// `then stats`: the stats of the result, per conversation.
    pub stats: Option<StatsSpec>,
}

/// One input, cleaned.
#[derive(Debug)]
pub struct Cleaned {
    /// The output's bytes, up to [`Cleaned::original`].
    pub out: Vec<u8>,
    /// What follows `out`: the input's own text, handed over rather than
    /// copied, when nothing of a large document changed.
    pub original: Option<Arc<String>>,
    /// One report per conversation, in input order.
    pub reports: Vec<ConversationReport>,
    /// What the format written could not express.
    pub lost: Vec<Loss>,
    /// Invalid lines skipped by the reader.
    pub skipped: usize,
    /// `then stats`: each conversation's stats after the steps.
    pub stats: Option<Vec<ConversationStats>>,
    /// Per conversation, each record of its list as written (see
    /// [`Written::records`](crate::format::Written::records)); `None` for
    /// one converted to another format.
    pub records: Vec<Option<Vec<RecordOut>>>,
}

impl Cleaned {
    /// The whole output: `out` followed by the original text, if any.
    pub fn bytes(&self) -> Vec<u8> {
        let mut all = self.out.clone();
        if let Some(text) = &self.original {
            all.extend_from_slice(text.as_bytes());
        }
        all
    }
}

/// Why an input could not be cleaned.
#[derive(Debug)]
pub enum CleanError {
    /// The input could not be read: its file (or `-`), line and why.
    Input(InputError),
    /// The options cannot apply to this input (a usage error: exit 2).
    Usage(String),
    /// The options forbid what cleaning this input would do (`--strict`,
    /// `--on-failure fail`): nothing is written for it.
    Refused(String),
    /// Writing the output failed.
    Write(std::io::Error),
}

impl std::fmt::Display for CleanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CleanError::Input(e) => e.fmt(f),
            CleanError::Usage(m) | CleanError::Refused(m) => f.write_str(m),
            CleanError::Write(e) => write!(f, "writing the output: {e}"),
        }
    }
}

impl std::error::Error for CleanError {}

/// The engine: its options, applied to input after input.
#[derive(Default)]
pub struct Engine {
    options: Options,
}

impl Engine {
    /// An engine with these options.
    pub fn new(options: Options) -> Engine {
        Engine { options }
    }

    /// Its options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Whether it cleans alike every time, asking no one (see
    /// [`crate::ops::Operation::deterministic`]).
    pub fn deterministic(&self) -> bool {
        self.options.pipeline.deterministic()
    }

    /// Reads a whole input (`source` names it in errors and reports) and
    /// cleans it.
    pub fn clean(
        &self,
        source: &str,
        bytes: Vec<u8>,
        read: &ReadOptions,
        tok: &Tokenizer,
    ) -> Result<Cleaned, CleanError> {
        let doc = read_document(source, bytes, read).map_err(CleanError::Input)?;
        self.clean_document(doc, tok)
    }

    /// Cleans one document read by the caller: converts it if asked, runs
    /// the pipeline, writes it, and reports what was lost.
    pub fn clean_document(&self, doc: Document, tok: &Tokenizer) -> Result<Cleaned, CleanError> {
        self.clean_document_then(doc, tok, drop)
    }

    /// [`Engine::clean_document`], handing the document, once written, to
    /// `dispose` (the CLI forgets a large single input rather than spend
    /// time freeing it just before it exits).
    pub fn clean_document_then(
        &self,
        mut doc: Document,
        tok: &Tokenizer,
        dispose: impl FnOnce(Document),
    ) -> Result<Cleaned, CleanError> {
        let o = &self.options;
        if let Some(format) = o.to {
            check_target(&doc, format)?;
            doc.format = format;
        }
        // Images are charged by the provider of the format written.
        tok.set_format(doc.format);
        let mut reports = o.pipeline.run_with(&mut doc, tok, o.accounting);
        refuse_failed_summary(&doc, &reports)?;
        let stats = o
            .stats
            .as_ref()
            .map(|spec| crate::stats::stats(&doc, tok, spec));
        let mut out = Vec::new();
        let (written, original) =
            write_document_into(&mut doc, &mut out).map_err(CleanError::Write)?;
        let mut lost = Vec::new();
        let mut records = Vec::with_capacity(written.len());
        for (report, w) in reports.iter_mut().zip(written) {
            records.push(w.records);
            for loss in w.losses {
                record_loss(report, &loss);
                lost.push(loss);
            }
            report.notes.extend(w.notes);
        }
        if o.strict && !lost.is_empty() {
            return Err(CleanError::Refused(strict_refusal(&doc, &lost)));
        }
        let skipped = doc.skipped.len();
        dispose(doc);
        Ok(Cleaned {
            out,
            original,
            reports,
            lost,
            skipped,
            stats,
            records,
        })
    }
}

/// `--to FORMAT` on an input of another format: only request formats are
/// written from any input.
fn check_target(doc: &Document, format: Format) -> Result<(), CleanError> {
    if format == doc.source_format || format.is_request() {
        return Ok(());
    }
    Err(CleanError::Usage(format!(
        "--to {format}: {format} is written only from {format} input, and {} is {}; \
         convert to a request format instead: {}",
        doc.source,
        doc.source_format,
        Format::REQUEST.map(Format::name).join(", ")
    )))
}

/// `summarize --on-failure fail`: the input fails, nothing is written.
fn refuse_failed_summary(doc: &Document, reports: &[ConversationReport]) -> Result<(), CleanError> {
    let Some(r) = reports
        .iter()
        .find(|r| r.flags.get("on_failure").and_then(|v| v.as_str()) == Some("fail"))
    else {
        return Ok(());
    };
    let text = |key: &str| r.flags.get(key).and_then(|v| v.as_str()).unwrap_or("");
    Err(CleanError::Refused(format!(
        "{}: summarizer {}: {} (--on-failure fail: nothing written for this input)",
        doc.source,
        text("failure_kind"),
        text("summarize_failed")
    )))
}

/// A loss goes into its conversation's report: a change of the message it
/// hit, or a line of `lost` when it hit no one message.
fn record_loss(report: &mut ConversationReport, loss: &Loss) {
    match loss.index {
        Some(i) => {
            let mut c = Change::new(i, Action::Modified, loss.describe());
            c.detail.insert("lost".into(), loss.what.clone().into());
            report.changes.push(c);
        }
        None => report.lost.push(loss.describe()),
    }
}

fn strict_refusal(doc: &Document, lost: &[Loss]) -> String {
    format!(
        "{}: converting to {} would lose {} (--strict): {}",
        doc.source,
        doc.format,
        plural(lost.len(), "thing"),
        lost.iter()
            .take(3)
            .map(Loss::describe)
            .collect::<Vec<_>>()
            .join("; ")
    )
}
