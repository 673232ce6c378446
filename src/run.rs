//! The batch driver of the binary: inputs → chunks → parallel work →
//! ordered output, with `--keep-going` and a progress bar. What is done to a
//! chunk comes from the library (parsing, the pipeline, stats); this module
//! only moves bytes and tells the user.

use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::time::{Duration, Instant};

use ctxclean::batch::{ordered_map, Chunks, Source, Work};
use ctxclean::format::{Document, ReadOptions};
use ctxclean::report::{plural, thousands};

/// How a run reads and schedules its inputs.
pub(crate) struct Settings {
    pub(crate) read: ReadOptions,
    pub(crate) jobs: usize,
    pub(crate) keep_going: bool,
    /// Whether a progress bar may be shown (stderr a terminal, no `-q`).
    pub(crate) progress: bool,
    /// `--in-place`: lock each input while it is rewritten, and stamp it
    /// when it is opened (see [`Event::End`]).
    pub(crate) lock: bool,
    /// What the directory walk passed over (a FIFO, a device, a broken
    /// link, a link to a directory), a line each: said at the start, and
    /// in the report's notes.
    pub(crate) passed_over: Vec<String>,
}

/// An input opened for rewriting: its stamp, and the advisory lock held on
/// it until its output is in place.
struct Opened {
    stamp: ctxclean::io::Stamp,
    _lock: std::fs::File,
}

/// Locks `path` for rewriting and stamps it.
fn open_for_rewrite(path: &std::path::Path) -> anyhow::Result<Opened> {
    use anyhow::Context;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "{}: being rewritten by another ctxclean run (it holds a lock on it); run again when it is done",
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
    let meta = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(Opened {
        stamp: ctxclean::io::Stamp::of(&meta),
        _lock: file,
    })
}

/// Bytes per chunk of a streamed JSONL input.
const CHUNK_BYTES: usize = 1 << 18;

/// What the consumer hears about, in input order.
pub(crate) enum Event<R> {
    /// A chunk of `file`, processed; `true` when it is the whole input
    /// (then nothing more of the file can fail).
    Chunk(usize, R, bool),
    /// The current file failed (with `--keep-going`): drop what was made of it.
    Failed,
    /// The current file is done; with [`Settings::lock`], its stamp from
    /// when it was opened (the lock is held until this event is consumed).
    End(Option<ctxclean::io::Stamp>),
}

/// A file that failed under `--keep-going`.
pub(crate) struct Failure {
    pub(crate) error: anyhow::Error,
}

enum Item {
    Chunk(usize, anyhow::Result<Work>),
    End(usize),
}

enum Done<R> {
    Chunk(usize, usize, anyhow::Result<R>),
    End(usize),
}

/// The items of every input in order: each input's chunks, then its end.
/// Inputs marked failed stop being read.
struct Items<'a> {
    sources: &'a [Source],
    read: &'a ReadOptions,
    failed: &'a RefCell<Vec<bool>>,
    opened_files: &'a RefCell<Vec<Option<Opened>>>,
    lock: bool,
    file: usize,
    current: Option<Chunks<Box<dyn BufRead + Send>>>,
    opened: bool,
}

impl Iterator for Items<'_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        let f = self.file;
        let source = self.sources.get(f)?;
        if self.failed.borrow()[f] {
            self.current = None;
            self.opened = false;
            self.file += 1;
            return Some(Item::End(f));
        }
        if !self.opened {
            self.opened = true;
            if let (true, Some(path)) = (self.lock, &source.path) {
                match open_for_rewrite(path) {
                    Ok(o) => self.opened_files.borrow_mut()[f] = Some(o),
                    Err(e) => return Some(Item::Chunk(f, Err(e))),
                }
            }
            match source.open() {
                Ok(reader) => {
                    self.current = Some(Chunks::new(&source.name(), reader, self.read, CHUNK_BYTES))
                }
                Err(e) => return Some(Item::Chunk(f, Err(e))),
            }
        }
        match self.current.as_mut().and_then(Iterator::next) {
            Some(work) => Some(Item::Chunk(f, work)),
            None => {
                self.current = None;
                self.opened = false;
                self.file += 1;
                Some(Item::End(f))
            }
        }
    }
}

/// Processes every input: `work` turns each parsed chunk into an `R` on a
/// worker thread (with per-thread state from `init`); `consume` gets the
/// results in input order. Returns the files that failed (with
/// `--keep-going`; without it the first failure is the error).
pub(crate) fn drive<S, R: Send>(
    sources: &[Source],
    settings: &Settings,
    init: impl Fn() -> anyhow::Result<S> + Sync,
    work: impl Fn(&mut S, Document) -> anyhow::Result<R> + Sync,
    mut consume: impl FnMut(Event<R>, &mut Progress) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Failure>> {
    let failed = RefCell::new(vec![false; sources.len()]);
    let opened_files = RefCell::new((0..sources.len()).map(|_| None).collect());
    let items = Items {
        sources,
        read: &settings.read,
        failed: &failed,
        opened_files: &opened_files,
        lock: settings.lock,
        file: 0,
        current: None,
        opened: false,
    };
    let mut progress = Progress::new(sources, settings.progress);
    let mut failures = Vec::new();
    let names: Vec<String> = sources.iter().map(Source::name).collect();
    // Each worker builds its state (its tokenizer) only when its first
    // chunk is parsed, so that loading overlaps with reading and parsing.
    let result = ordered_map(
        items,
        settings.jobs,
        || Ok(None),
        |state: &mut Option<S>, item| match item {
            Item::End(f) => Done::End(f),
            Item::Chunk(f, work_item) => {
                let whole = matches!(work_item, Ok(Work::Whole(_)));
                let parsed = work_item.and_then(|w| {
                    let len = w.len();
                    w.parse(&names[f], &settings.read)
                        .map(|doc| (len, doc))
                        .map_err(anyhow::Error::from)
                });
                let result = parsed.and_then(|(len, doc)| {
                    if state.is_none() {
                        *state = Some(init()?);
                    }
                    let state = state.as_mut().expect("just built");
                    work(state, doc).map(|r| (len, r))
                });
                match result {
                    Ok((len, r)) => Done::Chunk(f, len, Ok((r, whole))),
                    Err(e) => Done::Chunk(f, 0, Err(e)),
                }
            }
        },
        |done| {
            // An error of one file's output (a full disk, a file changed
            // while read) fails that file only, with --keep-going.
            let failure = match done {
                Done::End(f) => {
                    let opened = opened_files.borrow_mut()[f].take();
                    let mut failure = None;
                    if !failed.borrow()[f] {
                        let stamp = opened.as_ref().map(|o| o.stamp);
                        if let Err(e) = consume(Event::End(stamp), &mut progress) {
                            failure = Some((f, output_error(e)?));
                        }
                    }
                    drop(opened); // the lock goes once the output is in place
                    progress.file_done();
                    failure
                }
                Done::Chunk(f, _, _) if failed.borrow()[f] => None,
                Done::Chunk(f, len, Ok((r, whole))) => {
                    progress.bytes(len);
                    match consume(Event::Chunk(f, r, whole), &mut progress) {
                        Ok(()) => None,
                        Err(e) => Some((f, output_error(e)?)),
                    }
                }
                Done::Chunk(f, _, Err(e)) => Some((f, e)),
            };
            if let Some((f, e)) = failure {
                // A usage error is the command's, not one file's.
                if !settings.keep_going || e.is::<crate::UsageError>() {
                    return Err(e);
                }
                failed.borrow_mut()[f] = true;
                consume(Event::Failed, &mut progress)?;
                failures.push(Failure { error: e });
            }
            Ok(true)
        },
    );
    progress.finish();
    result?;
    Ok(failures)
}

/// The error of one file's output inside `e`, or `e` itself as the run's
/// error.
fn output_error(e: anyhow::Error) -> anyhow::Result<anyhow::Error> {
    match e.downcast::<ctxclean::io::OutputError>() {
        Ok(ctxclean::io::OutputError(inner)) => Ok(inner),
        Err(e) => Err(e),
    }
}

/// The progress bar: on stderr when it is a terminal, after a moment.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    shown: bool,
    start: Instant,
    delay: Duration,
    files: usize,
    files_done: usize,
    /// Conversations processed so far.
    pub(crate) conversations: usize,
    /// Tokens before, so far.
    pub(crate) before: usize,
    /// Tokens after, so far (`None` for `stats`).
    pub(crate) after: Option<usize>,
}

impl Progress {
    fn new(sources: &[Source], enabled: bool) -> Progress {
        let total: u64 = sources.iter().map(|s| s.size).sum();
        let bar = enabled.then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::hidden(),
            );
            let style = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} · {msg} · ETA {eta}",
            )
            .expect("a valid template");
            bar.set_style(style);
            bar
        });
        // Shown only when the work is more than a moment.
        let delay = std::env::var("CTXCLEAN_PROGRESS_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::from_millis(300), Duration::from_millis);
        Progress {
            bar,
            shown: false,
            start: Instant::now(),
            delay,
            files: sources.len(),
            files_done: 0,
            conversations: 0,
            before: 0,
            after: None,
        }
    }

    fn bytes(&mut self, n: usize) {
        if let Some(bar) = &self.bar {
            bar.inc(n as u64);
        }
        self.update();
    }

    fn file_done(&mut self) {
        self.files_done += 1;
        self.update();
    }

    /// Redraws the message (and shows the bar once the delay has passed).
    pub(crate) fn update(&mut self) {
        let Some(bar) = &self.bar else { return };
        if !self.shown && self.start.elapsed() >= self.delay && std::io::stderr().is_terminal() {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
            self.shown = true;
        }
        let tokens = match self.after {
            Some(after) => format!("{} → {} tokens", thousands(self.before), thousands(after)),
            None => format!("{} tokens", thousands(self.before)),
        };
        bar.set_message(format!(
            "{}/{} files · {} · {}",
            self.files_done,
            self.files,
            plural(self.conversations, "conversation"),
            tokens
        ));
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
