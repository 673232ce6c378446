//! Outputs that never leave a partial file behind, and output held back
//! until its input is known to be good.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Writes a file whole or not at all: into a temporary file beside `path`,
/// flushed and synced, then renamed over it. On any error `path` is untouched.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    let mut file = AtomicFile::create(path, false)?;
    write(&mut file).with_context(|| format!("writing {}", path.display()))?;
    file.commit(None)
}

/// A file written whole or not at all: bytes go to a temporary file beside
/// the target; [`AtomicFile::commit`] flushes, syncs and renames it into
/// place (keeping the permissions of a file it replaces); dropping it
/// without committing removes the temporary file.
pub struct AtomicFile {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<io::BufWriter<fs::File>>,
}

impl AtomicFile {
    /// Creates the temporary file beside `target` (creating missing parent
    /// directories when `create_dirs`).
    pub fn create(target: &Path, create_dirs: bool) -> anyhow::Result<AtomicFile> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if create_dirs {
            fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let name = target
            .file_name()
            .with_context(|| format!("{}: not a file path", target.display()))?;
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(
            ".{}.ctxclean-{}-{n}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            tmp,
            file: Some(io::BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// The file the output is for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, syncs and renames the temporary file over the target. With
    /// `backup`, the target's previous content is kept at TARGET+SUFFIX first.
    pub fn commit(mut self, backup: Option<&str>) -> anyhow::Result<()> {
        let result = (|| -> anyhow::Result<()> {
            let w = self.file.take().expect("not committed twice");
            let file = w
                .into_inner()
                .map_err(|e| e.into_error())
                .with_context(|| format!("writing {}", self.tmp.display()))?;
            if let Ok(meta) = fs::metadata(&self.target) {
                fs::set_permissions(&self.tmp, meta.permissions())?;
                if let Some(suffix) = backup {
                    let mut name = self.target.clone().into_os_string();
                    name.push(suffix);
                    let backup = PathBuf::from(name);
                    let _ = fs::remove_file(&backup);
                    if fs::hard_link(&self.target, &backup).is_err() {
                        fs::copy(&self.target, &backup)
                            .with_context(|| format!("writing the backup {}", backup.display()))?;
                    }
                }
            }
            file.sync_all()
                .with_context(|| format!("syncing {}", self.tmp.display()))?;
            fs::rename(&self.tmp, &self.target).with_context(|| {
                format!(
                    "renaming {} to {}",
                    self.tmp.display(),
                    self.target.display()
                )
            })
        })();
        if result.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        result
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().expect("open until committed").write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file
            .as_mut()
            .expect("open until committed")
            .write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("open until committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Output held back until its input is known to be good: in memory up to a
/// limit, then in an anonymous temporary file, so memory stays bounded.
pub struct Spool {
    mem: Vec<u8>,
    file: Option<fs::File>,
    limit: usize,
}

impl Spool {
    /// A spool keeping up to `limit` bytes in memory.
    pub fn new(limit: usize) -> Spool {
        Spool {
            mem: Vec::new(),
            file: None,
            limit,
        }
    }

    /// Copies everything spooled to `out`.
    pub fn copy_to(mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(mut file) = self.file.take() {
            use std::io::Seek;
            file.write_all(&self.mem)?;
            file.seek(io::SeekFrom::Start(0))?;
            io::copy(&mut io::BufReader::new(file), out)?;
        } else {
            out.write_all(&self.mem)?;
        }
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        if self.file.is_none() {
            let dir = std::env::temp_dir();
            static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.join(format!(".ctxclean-spool-{}-{n}", std::process::id()));
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            // Anonymous from here on: removed when closed.
            let _ = fs::remove_file(&path);
            self.file = Some(file);
        }
        let file = self.file.as_mut().expect("just created");
        file.write_all(&self.mem)?;
        self.mem.clear();
        Ok(())
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.mem.extend_from_slice(buf);
        if self.mem.len() > self.limit {
            self.spill()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_writes_leave_the_target_untouched() {
        let dir = std::env::temp_dir().join(format!("ctxclean-io-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("t.json");
        fs::write(&target, "before").unwrap();
        let err = write_atomic(&target, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("reader failed on line 9"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "before");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        write_atomic(&target, |w| w.write_all(b"after")).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "after");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn atomic_files_commit_or_vanish() {
        let dir = std::env::temp_dir().join(format!("ctxclean-atomic-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let target = dir.join("sub/t.json");
        let mut f = AtomicFile::create(&target, true).unwrap();
        f.write_all(b"one").unwrap();
        drop(f);
        assert!(!target.exists());
        assert_eq!(fs::read_dir(dir.join("sub")).unwrap().count(), 0);
        let mut f = AtomicFile::create(&target, true).unwrap();
        f.write_all(b"one").unwrap();
        f.commit(None).unwrap();
        let mut f = AtomicFile::create(&target, false).unwrap();
        f.write_all(b"two").unwrap();
        f.commit(Some(".bak")).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "two");
        assert_eq!(
            fs::read_to_string(dir.join("sub/t.json.bak")).unwrap(),
            "one"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn spools_spill_and_copy_back() {
        let mut s = Spool::new(10);
        for i in 0..100 {
            write!(s, "{i},").unwrap();
        }
        let mut out = Vec::new();
        s.copy_to(&mut out).unwrap();
        let want: String = (0..100).map(|i| format!("{i},")).collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
