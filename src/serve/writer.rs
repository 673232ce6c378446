//! Where the request log's lines go: a thread of the log's own writes
//! them, in order, from a bounded queue, so that a log that cannot keep up
//! (a pipe nobody reads, a terminal paused with Ctrl-S, a slow disk) never
//! holds a request, a runtime thread or an answer's tap. A line the queue
//! has no room for is lost, and that is never silent: it is said on
//! standard error (at most every [`SAY_LOST_EVERY`]) and counted in
//! `/metrics`, as a line the log could not take (a full disk) is.

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

/// Lines waiting to be written, at most (a line is a kilobyte or two).
pub(crate) const QUEUE: usize = 1024;

/// Lines waiting past which the log is behind: a line queued then is not
/// waited for (its answer's end does not wait for it to be written).
const BEHIND: usize = 64;

/// How often, at most, lines the log lost are said on standard error.
const SAY_LOST_EVERY: Duration = Duration::from_secs(10);

/// Told once a line is written, or could not be.
pub(crate) type Written = Box<dyn FnOnce() + Send>;

/// One line, and who waits for it.
struct Entry {
    text: Vec<u8>,
    written: Option<Written>,
}

/// The request log: lines queued here, written by the log's thread.
pub(crate) struct Log {
    queue: Mutex<Option<SyncSender<Entry>>>,
    /// Told by the log's thread when the queue is closed and written.
    finished: Mutex<Option<Receiver<()>>>,
    losses: Arc<Losses>,
    /// Lines queued and not written yet.
    waiting: Arc<AtomicUsize>,
}

/// The lines lost, and when that was said last.
struct Losses {
    /// The log as a failure names it.
    name: String,
    lost: AtomicU64,
    said: Mutex<Option<Instant>>,
}

impl Losses {
    /// One line lost, for `why`: counted, and said unless it was said less
    /// than [`SAY_LOST_EVERY`] ago.
    fn lose(&self, why: &str) {
        let lost = self.lost.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(mut said) = self.said.lock() else {
            return;
        };
        if said.is_none_or(|t| t.elapsed() >= SAY_LOST_EVERY) {
            *said = Some(Instant::now());
            say!("ctxclean serve: {why}; {lost} line(s) lost so far; serving goes on");
        }
    }
}

impl Log {
    /// `--log FILE` (appended to), else standard error; its thread started.
    pub(crate) fn open(path: Option<&std::path::Path>) -> anyhow::Result<Log> {
        let w: Box<dyn Write + Send> = match path {
            Some(p) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening the log {}", p.display()))?,
            ),
            None => Box::new(std::io::stderr()),
        };
        let name = path.map_or("standard error".into(), |p| p.display().to_string());
        Log::start(w, name)
    }

    /// A log into `w`, named `name` where a failure says it.
    fn start(w: Box<dyn Write + Send>, name: String) -> anyhow::Result<Log> {
        let losses = Arc::new(Losses {
            name,
            lost: AtomicU64::new(0),
            said: Mutex::new(None),
        });
        let (queue, lines) = sync_channel(QUEUE);
        let (finish, finished) = sync_channel(1);
        let waiting = Arc::new(AtomicUsize::new(0));
        let theirs = (losses.clone(), waiting.clone());
        std::thread::Builder::new()
            .name("ctxclean-log".into())
            .spawn(move || {
                write_lines(&lines, w, &theirs.0, &theirs.1);
                let _ = finish.send(());
            })
            .context("starting the log's thread")?;
        Ok(Log {
            queue: Mutex::new(Some(queue)),
            finished: Mutex::new(Some(finished)),
            losses,
            waiting,
        })
    }

    /// Lines that could not be written, or found no room in the queue.
    pub(crate) fn lost(&self) -> u64 {
        self.losses.lost.load(Ordering::Relaxed)
    }

    /// Queues a line, never waiting; `written` is told once it is written
    /// (or lost), or at once when the log is behind.
    pub(crate) fn write(&self, text: Vec<u8>, mut written: Option<Written>) {
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= BEHIND {
            if let Some(written) = written.take() {
                written();
            }
        }
        let entry = Entry { text, written };
        let sent = match self.queue.lock() {
            Ok(queue) => match queue.as_ref() {
                Some(queue) => queue.try_send(entry),
                None => Err(TrySendError::Disconnected(entry)),
            },
            Err(_) => Err(TrySendError::Disconnected(entry)),
        };
        let (why, entry) = match sent {
            Ok(()) => return,
            Err(TrySendError::Full(e)) => (
                format!(
                    "the log ({}) does not keep up: {QUEUE} lines wait to be written",
                    self.losses.name
                ),
                e,
            ),
            Err(TrySendError::Disconnected(e)) => {
                (format!("the log ({}) is closed", self.losses.name), e)
            }
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        self.losses.lose(&why);
        if let Some(written) = entry.written {
            written();
        }
    }

    /// Closes the queue and waits up to `wait` for the lines in it to be
    /// written; says how many were not.
    pub(crate) fn close(&self, wait: Duration) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.take();
        }
        let Some(finished) = self.finished.lock().ok().and_then(|mut f| f.take()) else {
            return;
        };
        if finished.recv_timeout(wait).is_err() {
            say!(
                "ctxclean serve: the log ({}) took no more lines for {} s: {} line(s) not written yet are lost",
                self.losses.name,
                wait.as_secs(),
                self.waiting.load(Ordering::SeqCst)
            );
        }
    }
}

/// The log's thread: each line written and flushed, in order, until the
/// queue closes.
fn write_lines(
    lines: &Receiver<Entry>,
    mut w: Box<dyn Write + Send>,
    losses: &Losses,
    waiting: &AtomicUsize,
) {
    while let Ok(Entry { text, written }) = lines.recv() {
        // A log that cannot be written (a full disk) is no reason to stop
        // serving, but it is said, and counted in /metrics.
        if let Err(e) = w.write_all(&text).and_then(|()| w.flush()) {
            losses.lose(&format!("cannot write to the log ({}): {e}", losses.name));
        }
        waiting.fetch_sub(1, Ordering::SeqCst);
        if let Some(written) = written {
            written();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that holds every write until it is let go.
    struct Stuck(Arc<std::sync::Barrier>);

    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.wait();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_log_loses_lines_past_its_queue_and_never_waits() {
        let gate = Arc::new(std::sync::Barrier::new(2));
        let log = Log::start(Box::new(Stuck(gate.clone())), "a test".into()).unwrap();
        let told = Arc::new(AtomicU64::new(0));
        // The first line is taken by the thread, which then waits; the
        // queue holds QUEUE more; the rest are lost, at once.
        for _ in 0..QUEUE + 11 {
            let told = told.clone();
            log.write(
                b"{}\n".to_vec(),
                Some(Box::new(move || {
                    told.fetch_add(1, Ordering::Relaxed);
                })),
            );
        }
        // The thread may not have taken the first line yet. Past BEHIND
        // lines waiting, a line queued is told at once, as one lost is.
        assert!((10..=11).contains(&log.lost()), "{}", log.lost());
        assert_eq!(told.load(Ordering::Relaxed), (QUEUE + 11 - BEHIND) as u64);
        // Let every write through: each waiting line is written, and told.
        let written = QUEUE + 11 - log.lost() as usize;
        for _ in 0..written {
            gate.wait();
        }
        log.close(Duration::from_secs(10));
        assert_eq!(told.load(Ordering::Relaxed), (QUEUE + 11) as u64);
        // Closed: a line is lost, and told.
        log.write(b"{}\n".to_vec(), None);
        assert_eq!(log.lost() as usize, QUEUE + 11 - written + 1);
    }
}
