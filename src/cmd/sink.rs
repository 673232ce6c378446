//! Where a transforming run's transcripts go, file after file: standard
//! output, `-o`, `--out-dir` or `--in-place`. A file's output is held (in a
//! spool, or a temporary file beside its target) until the file is known to
//! be good, so a file that fails leaves nothing of itself written.

use std::io::{self, Write};

use anyhow::Context;
use ctxclean::batch::Source;
use ctxclean::engine::Cleaned;
use ctxclean::io::{AtomicFile, Output, OutputError, Spool};

use super::output::{spool_bytes, FileSink, Target};

/// The output side of a run.
pub(crate) struct Sinks<'a> {
    target: Target,
    sources: &'a [Source],
    /// `-o PATH`: the one file every input goes to.
    run_file: Option<Output>,
    stdout: io::BufWriter<io::StdoutLock<'static>>,
    /// The current file's output, until it ends.
    sink: Option<FileSink>,
    /// Several inputs sharing one output: only the first may open it with a
    /// byte order mark.
    shared_started: bool,
}

impl<'a> Sinks<'a> {
    /// Opens the run's output (`-o` is made now; the rest per file).
    pub(crate) fn open(target: Target, sources: &'a [Source]) -> anyhow::Result<Sinks<'a>> {
        let run_file = match &target {
            Target::File(path) => Some(Output::open(path)?),
            _ => None,
        };
        Ok(Sinks {
            target,
            sources,
            run_file,
            stdout: io::BufWriter::new(io::stdout().lock()),
            sink: None,
            shared_started: false,
        })
    }

    /// Writes one cleaned chunk of input `f`; `whole` when it is all of it.
    pub(crate) fn chunk(&mut self, f: usize, chunk: &Cleaned, whole: bool) -> anyhow::Result<()> {
        let original = chunk.original.as_deref().map_or("", String::as_str);
        // Standard output and `-o` take every input's output: only the
        // first keeps its byte order mark.
        let shared = matches!(self.target, Target::Stdout | Target::File(_));
        let out = match chunk.out.strip_prefix(ctxclean::format::BOM) {
            Some(rest) if shared && self.shared_started => rest,
            _ => &chunk.out[..],
        };
        if shared {
            self.shared_started |= !out.is_empty() || !original.is_empty();
        }
        // A whole input's output is complete: to standard output or `-o`, it
        // goes straight there, not through a spool (which would copy a large
        // document to TMPDIR and back). A file streamed in chunks is held
        // until it ends, so that a later chunk failing leaves nothing of it.
        if whole && shared && self.sink.is_none() {
            return self.write_direct(out, original);
        }
        if self.sink.is_none() {
            self.sink = Some(self.file_sink(f)?);
        }
        match self.sink.as_mut().expect("just made") {
            FileSink::Spool(s) => s
                .write_all(out)
                .and_then(|()| s.write_all(original.as_bytes()))
                .with_context(|| format!("holding the output of {}", self.sources[f].name())),
            FileSink::Atomic(a) => {
                let target = a.target().display().to_string();
                a.write_all(out)
                    .and_then(|()| a.write_all(original.as_bytes()))
                    .with_context(|| format!("writing {target}"))
                    .map_err(OutputError)
                    .map_err(anyhow::Error::from)
            }
        }
    }

    /// A whole input's output, to `-o` or standard output.
    fn write_direct(&mut self, out: &[u8], original: &str) -> anyhow::Result<()> {
        match self.run_file.as_mut() {
            Some(file) => {
                let path = file.path().display().to_string();
                file.write_all(out)
                    .and_then(|()| file.write_all(original.as_bytes()))
                    .with_context(|| format!("writing {path}"))
            }
            None => self
                .stdout
                .write_all(out)
                .and_then(|()| self.stdout.write_all(original.as_bytes()))
                .and_then(|()| self.stdout.flush())
                .context("writing to standard output"),
        }
    }

    /// Where input `f`'s output is held until it ends.
    fn file_sink(&self, f: usize) -> anyhow::Result<FileSink> {
        Ok(match &self.target {
            Target::Stdout | Target::File(_) => FileSink::Spool(Spool::new(spool_bytes())),
            Target::OutDir(dir) => FileSink::Atomic({
                let mut a = AtomicFile::create(&dir.join(&self.sources[f].relative), true)
                    .map_err(OutputError)?;
                a.defer_sync();
                a
            }),
            Target::InPlace(_) => FileSink::Atomic(
                AtomicFile::create(
                    self.sources[f]
                        .path
                        .as_deref()
                        .expect("checked: files only"),
                    false,
                )
                .map_err(OutputError)?,
            ),
        })
    }

    /// The current file failed: an unfinished temporary file is removed.
    pub(crate) fn failed(&mut self) {
        self.sink = None;
    }

    /// The current file is done: its held output goes where it belongs; an
    /// in-place rewrite checks the input is as it was when opened (`stamp`).
    pub(crate) fn end(&mut self, stamp: Option<ctxclean::io::Stamp>) -> anyhow::Result<()> {
        match self.sink.take() {
            Some(FileSink::Spool(s)) => match self.run_file.as_mut() {
                Some(file) => {
                    let path = file.path().display().to_string();
                    s.copy_to(file).with_context(|| format!("writing {path}"))
                }
                None => s
                    .copy_to(&mut self.stdout)
                    .and_then(|()| self.stdout.flush())
                    .context("writing to standard output"),
            },
            Some(FileSink::Atomic(mut a)) => {
                let backup = match &self.target {
                    Target::InPlace(b) => b.as_deref(),
                    _ => None,
                };
                if let Some(stamp) = stamp {
                    a.expect(stamp);
                }
                let target = a.target().display().to_string();
                if let ctxclean::io::Committed::Appended(n) =
                    a.commit(backup).map_err(OutputError)?
                {
                    // Said even with -q: the file holds more than was cleaned.
                    eprintln!(
                        "ctxclean: {target}: {n} bytes appended while it was being replaced were added to its end, as they came"
                    );
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The run is done: `-o` is put in place, `--out-dir` synced once,
    /// standard output flushed.
    pub(crate) fn finish(mut self) -> anyhow::Result<()> {
        if let Some(file) = self.run_file.take() {
            file.commit()?;
        }
        // --out-dir: the new files were renamed into place unsynced; one
        // sync makes the run durable.
        if let Target::OutDir(dir) = &self.target {
            if dir.exists() {
                ctxclean::io::sync_filesystem(dir)
                    .with_context(|| format!("syncing the outputs in {}", dir.display()))?;
            }
        }
        self.stdout.flush().context("writing to standard output")
    }
}
