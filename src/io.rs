//! Inputs and outputs: standard input or files, and writes that never leave
//! a partial file behind.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Where a transcript comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Standard input (no input given, or `-`).
    Stdin,
    /// A file.
    Path(PathBuf),
}

impl Input {
    /// The inputs named on the command line: standard input when none is.
    pub fn from_args(paths: &[PathBuf]) -> Vec<Input> {
        if paths.is_empty() {
            return vec![Input::Stdin];
        }
        paths
            .iter()
            .map(|p| {
                if p.as_os_str() == "-" {
                    Input::Stdin
                } else {
                    Input::Path(p.clone())
                }
            })
            .collect()
    }

    /// How errors name this input: its path, or `-`.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_string(),
            Input::Path(p) => p.display().to_string(),
        }
    }

    /// Reads the whole input.
    pub fn read(&self) -> anyhow::Result<Vec<u8>> {
        match self {
            Input::Stdin => {
                let mut buf = Vec::new();
                io::stdin()
                    .lock()
                    .read_to_end(&mut buf)
                    .context("reading standard input")?;
                Ok(buf)
            }
            Input::Path(p) => {
                if p.is_dir() {
                    anyhow::bail!(
                        "{}: is a directory; name the transcript files inside it",
                        p.display()
                    );
                }
                fs::read(p).with_context(|| format!("reading {}", p.display()))
            }
        }
    }
}

/// Writes a file whole or not at all: into a temporary file beside `path`,
/// flushed and synced, then renamed over it. On any error `path` is untouched.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file path", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.ctxclean-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> anyhow::Result<()> {
        let file = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let mut w = io::BufWriter::new(file);
        write(&mut w).with_context(|| format!("writing {}", tmp.display()))?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        if let Ok(meta) = fs::metadata(path) {
            // Keep the permissions of a file we replace.
            fs::set_permissions(&tmp, meta.permissions())?;
        }
        file.sync_all()?;
        fs::rename(&tmp, path)
            .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_and_nothing_mean_stdin() {
        assert_eq!(Input::from_args(&[]), vec![Input::Stdin]);
        assert_eq!(Input::from_args(&["-".into()]), vec![Input::Stdin]);
        assert_eq!(Input::from_args(&["a.json".into()])[0].name(), "a.json");
    }

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
}
