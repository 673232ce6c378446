//! The commands of the binary. Each module turns a command's flags into a
//! spec and calls the library; what they all share is here: the inputs and
//! run settings, usage errors, signals, notes and warnings on stderr.

pub(crate) mod accounts;
pub(crate) mod bill;
pub(crate) mod chain;
pub(crate) mod ops;
pub(crate) mod output;
pub(crate) mod replay;
pub(crate) mod serve;
pub(crate) mod sink;
pub(crate) mod stats;
pub(crate) mod transform;
pub(crate) mod validate;

use std::io::{self, IsTerminal};

use ctxclean::batch::{discover, Source, Walk};
use ctxclean::format::ReadOptions;
use ctxclean::report::{plural, thousands};
use ctxclean::tokens::Encoding;

use crate::cli::InputArgs;
use crate::run::{Failure, Settings};

pub(crate) use ctxclean::recipe::{model_and_encoding, tokenizer_maker, UsageError};
pub(crate) use ctxclean::report::warnings;

/// A failure already told on standard error: exit 1 with nothing more said.
#[derive(Debug)]
pub(crate) struct Told;

impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(told)")
    }
}

impl std::error::Error for Told {}

/// Signals: SIGXFSZ (a file size limit) is ignored, so the write fails with
/// an error naming the file instead of killing the process; SIGINT, SIGTERM
/// and SIGHUP are taken by a thread of their own, which removes the run's
/// temporary files and exits 128 + the signal's number (unless `terminate`
/// is false: the proxy handles those itself).
pub(crate) fn signals(terminate: bool) {
    // SAFETY: plain libc calls on a signal set owned here, made before any
    // other thread exists, so every thread inherits the mask.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        if !terminate {
            return;
        }
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
pub(crate) static STDOUT_CLOSED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

extern "C" fn check_stdout() {
    // SAFETY: F_GETFD on descriptor 1 only reads its flags.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[used]
#[link_section = ".init_array"]
pub(crate) static CHECK_STDOUT: extern "C" fn() = check_stdout;

/// Lets go of a document a worker is done with. The document of a single
/// input read whole is left to the operating system, which takes it back at
/// exit at once: freeing a large document object by object costs about a
/// tenth of reading it (a 200 MB document: ~0.8 s of CPU). Every other
/// document (one of several inputs, a chunk of a stream) is freed as usual,
/// so memory stays bounded.
pub(crate) fn release(doc: ctxclean::format::Document, inputs: usize) {
    if inputs == 1 && doc.layout != ctxclean::format::Layout::JsonlConversations {
        std::mem::forget(doc);
    }
}

/// Fails when standard output is closed: there is nowhere to write.
pub(crate) fn stdout_open() -> anyhow::Result<()> {
    if STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed) {
        anyhow::bail!("standard output is closed: there is nowhere to write (use -o PATH)");
    }
    Ok(())
}

/// The run settings and inputs shared by every command.
pub(crate) fn prepare(
    command: &str,
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
    let mut passed_over = Vec::new();
    let sources = discover(&input.inputs, &walk, &mut passed_over)?;
    for line in passed_over.iter().take(Teller::LIMIT) {
        say!("ctxclean {command}: note: {line}");
    }
    if passed_over.len() > Teller::LIMIT {
        say!(
            "ctxclean {command}: note: {} more passed over by the directory walk",
            plural(passed_over.len() - Teller::LIMIT, "path")
        );
    }
    // A terminal on standard input is most likely a forgotten file name:
    // say what is being waited for.
    if sources.iter().any(|s| s.is_stdin()) && io::stdin().is_terminal() {
        say!("ctxclean {command}: reading standard input… (Ctrl-D to end)");
    }
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
            recall: None,
        },
        jobs,
        keep_going: input.keep_going,
        progress: !quiet && io::stderr().is_terminal(),
        lock: false,
        passed_over,
    };
    Ok((sources, settings))
}

/// Starts building what the encoding's first count needs (the Unicode
/// classes of its pre-tokenizer, the pages of its vocabulary's table read
/// in) on a thread of its own, while the inputs are read and parsed.
pub(crate) fn prefetch(encoding: Encoding) {
    std::thread::spawn(move || ctxclean::tokens::preload(encoding));
}

/// Ends a run: the list of failed inputs, as the error that makes exit 1.
/// They are files, unless some are sessions of an agent's store (then
/// inputs).
pub(crate) fn failed(failures: Vec<Failure>, sources: &[Source]) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = failures
        .iter()
        .map(|f| format!("  {:#}", f.error))
        .collect();
    let noun = if sources.iter().any(|s| s.assembled.is_some()) {
        "input"
    } else {
        "file"
    };
    anyhow::bail!(
        "{} of {} failed:\n{}",
        plural(failures.len(), noun),
        thousands(sources.len()),
        list.join("\n")
    )
}

/// Notes from reading (a dangling reference followed another way, …) or
/// warnings about a conversation (over budget, summarization failed), told
/// on standard error as they come, up to a limit, then counted:
/// `ctxclean trim: warning: FILE: conversation 3: …`.
pub(crate) struct Teller<'a> {
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

    /// Tells what a file held, at its end.
    fn release(&mut self, held: Held) {
        for (source, conversation, text) in held.items {
            self.tell(&source, conversation, &text);
        }
        self.more += held.more;
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

/// Notes or warnings of one file, held until its end: the first few as
/// they will be told, the rest counted (memory stays bounded).
#[derive(Default)]
pub(crate) struct Held {
    items: Vec<(String, usize, String)>,
    more: usize,
}

impl Held {
    pub(crate) fn tell_all(&mut self, source: &str, conversation: usize, texts: &[String]) {
        for t in texts {
            if self.items.len() < Teller::LIMIT {
                self.items
                    .push((source.to_string(), conversation, t.clone()));
            } else {
                self.more += 1;
            }
        }
    }
}

/// Whether an error is a closed pipe, anywhere in its chain.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
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

/// A table's lines: `head` and `rows` in columns as wide as their widest
/// cell, the first `left` columns aligned left, the others right.
pub(crate) fn aligned(head: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .chain([head[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        cells
            .enumerate()
            .map(|(i, c)| {
                let w = widths.get(i).copied().unwrap_or(0);
                if i < left {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = vec![line(&mut head.iter().copied())];
    out.extend(rows.iter().map(|r| line(&mut r.iter().map(String::as_str))));
    out
}
