//! Where transforming commands write: standard output, `-o`, `--out-dir`
//! or `--in-place`, checked before anything is read; one place every
//! command uses.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use ctxclean::batch::Source;
use ctxclean::format::sniff_jsonl;
use ctxclean::io::{AtomicFile, Spool};

use super::UsageError;
use crate::cli::OutputArgs;

/// Output held in memory per file before it spills to a temporary file in
/// TMPDIR (`CTXCLEAN_SPOOL_BYTES` sets it, for tests).
pub(crate) fn spool_bytes() -> usize {
    std::env::var("CTXCLEAN_SPOOL_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32 << 20)
}

/// Where a transforming command writes.
pub(crate) enum Target {
    /// Standard output.
    Stdout,
    /// `-o PATH`, for all inputs.
    File(PathBuf),
    /// `--out-dir DIR`, mirroring inputs.
    OutDir(PathBuf),
    /// `--in-place`, with an optional backup suffix.
    InPlace(Option<String>),
}

/// Where the current file's output goes until it is done.
pub(crate) enum FileSink {
    Spool(Spool),
    Atomic(AtomicFile),
}

impl Target {
    /// The target the output flags name.
    pub(crate) fn of(output: &OutputArgs) -> Target {
        if output.in_place {
            Target::InPlace(output.backup.clone())
        } else if let Some(dir) = &output.out_dir {
            Target::OutDir(dir.clone())
        } else if let Some(path) = &output.output {
            Target::File(path.clone())
        } else {
            Target::Stdout
        }
    }
}

/// Whether two paths name the same file: the same device and inode when
/// both exist, else the same place (the canonical folder and the name).
fn same_place(a: &std::path::Path, b: &std::path::Path) -> bool {
    use ctxclean::io::identity;
    if let (Some(x), Some(y)) = (identity(a), identity(b)) {
        return x == y;
    }
    let place = |p: &std::path::Path| {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Some((std::fs::canonicalize(dir).ok()?, p.file_name()?.to_owned()))
    };
    place(a).is_some_and(|x| Some(x) == place(b))
}

/// Checks that the inputs can go where the flags say, before anything is
/// read. `reports` are the other files the run writes (`--report`, …), with
/// their flags; `reads` the files it reads besides its inputs (the recipe,
/// `--prices`, …), with what they are.
pub(crate) fn check_target(
    target: &Target,
    sources: &[Source],
    reports: &[(&str, &std::path::Path)],
    reads: &[(String, PathBuf)],
) -> anyhow::Result<()> {
    let stdin = sources.iter().any(Source::is_stdin);
    if let (Target::InPlace(_), Some(s)) = (target, sources.iter().find(|s| s.assembled.is_some()))
    {
        let from = s.assembled.as_ref().map_or("", |a| a.from);
        return Err(UsageError(format!(
            "--in-place rewrites files; {} is read from {from}: write it with -o or --out-dir",
            s.name()
        ))
        .into());
    }
    if let Target::InPlace(_) = target {
        check_in_place(sources)?;
    }
    if let Target::OutDir(dir) = target {
        check_out_dir(dir, sources)?;
    }
    check_writes(target, sources, reports, reads)?;
    match target {
        Target::InPlace(_) if stdin => {
            Err(UsageError("--in-place rewrites files; standard input is not one".into()).into())
        }
        Target::OutDir(_) if stdin => Err(UsageError(
            "--out-dir takes files; give a file or directory, not standard input".into(),
        )
        .into()),
        Target::OutDir(dir) => {
            let mut seen = std::collections::HashSet::new();
            for s in sources {
                // Never outside the directory, whatever a name holds.
                let inside = s
                    .relative
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
                if !inside {
                    anyhow::bail!(
                        "{}: its output's name, {}, is not a path inside --out-dir",
                        s.name(),
                        s.relative.display()
                    );
                }
                if !seen.insert(&s.relative) {
                    return Err(UsageError(format!(
                        "two inputs would both be written to {}",
                        dir.join(&s.relative).display()
                    ))
                    .into());
                }
            }
            Ok(())
        }
        Target::Stdout | Target::File(_) if sources.len() > 1 => {
            // Several outputs can share one stream only as JSONL. A session
            // of a database or of OpenCode's storage is written as a JSON
            // document, in its own format or any `--to`: concatenated, they
            // would not read back.
            if let Some(a) = sources.iter().find_map(|s| s.assembled.as_ref()) {
                return Err(UsageError(format!(
                    "{}, read from {}, is written as a JSON document: several inputs (here {}) \
                     can share one output only when they are JSONL; use --out-dir DIR (a file \
                     each)",
                    a.name,
                    a.file.display(),
                    sources.len()
                ))
                .into());
            }
            for s in sources {
                let Some(path) = &s.path else { continue };
                let mut prefix = Vec::new();
                std::fs::File::open(path)
                    .and_then(|f| f.take(1 << 16).read_to_end(&mut prefix))
                    .with_context(|| format!("reading {}", path.display()))?;
                if !prefix.iter().all(u8::is_ascii_whitespace) && !sniff_jsonl(&prefix) {
                    return Err(UsageError(format!(
                        "{} is a JSON document: several inputs can share one output only when \
                         they are JSONL; use --out-dir DIR or --in-place",
                        path.display()
                    ))
                    .into());
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Nothing the run writes goes over a file it reads or over another file it
/// writes: each report, the saved recipe, the output (`-o`, each file of
/// `--out-dir`, each input of `--in-place`) and each backup, against the
/// inputs, the files of `reads` and each other. Compared as files (device
/// and inode) when they exist, else by where they would be made, never as
/// spellings. A backup is never made over a file that exists (it takes the
/// next free name), so it is checked against what is written later only.
fn check_writes(
    target: &Target,
    sources: &[Source],
    reports: &[(&str, &std::path::Path)],
    reads: &[(String, PathBuf)],
) -> anyhow::Result<()> {
    use ctxclean::io::identity;
    let in_place = matches!(target, Target::InPlace(_));
    let mut read: std::collections::HashMap<(u64, u64), String> = reads
        .iter()
        .filter_map(|(what, p)| Some((identity(p)?, what.clone())))
        .collect();
    for a in sources.iter().filter_map(|s| s.assembled.as_ref()) {
        if let Some(id) = identity(&a.file) {
            read.entry(id)
                .or_insert(format!("the input {}", a.file.display()));
        }
    }
    let files = sources.iter().filter_map(|s| Some((s, s.path.as_ref()?)));
    let mut outputs: Vec<Write> = Vec::new();
    for (s, path) in files {
        let name = s.name();
        match target {
            Target::OutDir(dir) => outputs.push(Write::output(
                format!("the output of {name} in --out-dir"),
                dir.join(&s.relative),
            )),
            Target::InPlace(suffix) => {
                outputs.push(Write::output(format!("the input {name}"), path.clone()));
                if let Some(suffix) = suffix {
                    let mut backup = path.as_os_str().to_os_string();
                    backup.push(suffix);
                    outputs.push(Write::backup(&name, PathBuf::from(backup)));
                }
            }
            _ => {}
        }
        if !in_place {
            if let Some(id) = identity(path) {
                read.entry(id).or_insert(format!("the input {name}"));
            }
        }
    }
    if let Target::File(out) = target {
        outputs.push(Write::output(
            format!("the output {}", out.display()),
            out.clone(),
        ));
    }
    let reports: Vec<Write> = reports
        .iter()
        .map(|&(flag, path)| Write::output(format!("{flag} {}", path.display()), path.into()))
        .collect();
    for w in reports.iter().chain(&outputs).filter(|w| !w.backup) {
        if let Some(what) = identity(&w.path).and_then(|id| read.get(&id)) {
            return Err(UsageError(format!("{} is {what}: it would overwrite it", w.what)).into());
        }
    }
    for (k, r) in reports.iter().enumerate() {
        for other in reports[..k].iter().chain(&outputs) {
            if r.over_write(other) {
                let m = if other.what.starts_with("the input ") {
                    format!("{} is {}: it would overwrite it", r.what, other.what)
                } else if other.what.starts_with("the output ") {
                    format!(
                        "{} is {}: one would overwrite the other",
                        r.what, other.what
                    )
                } else {
                    format!(
                        "{} is also {}: one would overwrite the other",
                        r.what, other.what
                    )
                };
                return Err(UsageError(m).into());
            }
        }
    }
    Ok(())
}

/// A file a run writes, for [`check_writes`].
struct Write {
    /// `--report FILE`, `the input a.json`, ….
    what: String,
    path: PathBuf,
    /// A backup: it may be made at PATH.1, PATH.2, … when PATH is taken.
    backup: bool,
}

impl Write {
    fn output(what: String, path: PathBuf) -> Write {
        Write {
            what,
            path,
            backup: false,
        }
    }

    fn backup(input: &str, path: PathBuf) -> Write {
        Write {
            what: format!("the backup of {input} ({})", path.display()),
            path,
            backup: true,
        }
    }

    /// Whether this and `other` would be written to one file (a device, as
    /// /dev/null, may take both).
    fn over_write(&self, other: &Write) -> bool {
        if same_place(&self.path, &other.path) {
            return ctxclean::io::identity(&self.path).is_none() || fs_is_regular(&self.path);
        }
        other.backup && backup_of(&other.path, &self.path)
    }
}

/// Whether `path` is where a backup at `base` may be made instead (BASE.N,
/// when BASE is taken).
fn backup_of(base: &std::path::Path, path: &std::path::Path) -> bool {
    let (Some(name), Some(other)) = (base.file_name(), path.file_name()) else {
        return false;
    };
    let (name, other) = (name.to_string_lossy(), other.to_string_lossy());
    let numbered = other
        .strip_prefix(name.as_ref())
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let dir = |p: &std::path::Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => std::fs::canonicalize(d).ok(),
        _ => std::fs::canonicalize(".").ok(),
    };
    (numbered || name == other) && dir(base).is_some() && dir(base) == dir(path)
}

/// `--in-place` rewrites regular files, each once.
fn check_in_place(sources: &[Source]) -> anyhow::Result<()> {
    let usage = |m: String| -> anyhow::Result<()> { Err(UsageError(m).into()) };
    let mut seen: Vec<((u64, u64), String)> = Vec::new();
    for s in sources {
        let Some(path) = &s.path else { continue };
        let meta =
            std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
        if !meta.is_file() {
            return usage(format!(
                "--in-place rewrites regular files only; {} is {}",
                path.display(),
                ctxclean::io::kind(&meta)
            ));
        }
        let id = ctxclean::io::Stamp::of(&meta).id;
        if let Some((_, first)) = seen.iter().find(|(i, _)| *i == id) {
            return usage(format!(
                "{first} and {} are the same file: --in-place would rewrite it twice",
                path.display()
            ));
        }
        seen.push((id, path.display().to_string()));
    }
    Ok(())
}

/// `--out-dir` is not where the inputs are.
fn check_out_dir(dir: &std::path::Path, sources: &[Source]) -> anyhow::Result<()> {
    use ctxclean::io::identity;
    let usage = |m: String| -> anyhow::Result<()> { Err(UsageError(m).into()) };
    if let Some(id) = identity(dir) {
        for s in sources {
            let Some(path) = &s.path else { continue };
            // The directory the input was found in, walked from the command line.
            let mut root = path.clone();
            for _ in s.relative.components() {
                root.pop();
            }
            if identity(&root) == Some(id) {
                return usage(format!(
                    "--out-dir {} is where the inputs are: use --in-place to rewrite them",
                    dir.display()
                ));
            }
        }
    }
    Ok(())
}

/// Whether `path` is a regular file (following links).
pub(crate) fn fs_is_regular(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The files a run writes besides a transformed output (a chart, a report,
/// a recipe), each with its flag, checked before anything is read by the
/// rules of `-o` and `--report`: none is an input, a file of `reads`, or
/// another of them.
pub(crate) fn check_files(
    sources: &[Source],
    files: &[(&str, &std::path::Path)],
    reads: &[(String, PathBuf)],
) -> anyhow::Result<()> {
    check_writes(&Target::Stdout, sources, files, reads)
}

/// `flag PATH` as [`check_files`] takes it, when the flag was given.
pub(crate) fn named<'a>(
    flag: &'a str,
    path: &'a Option<PathBuf>,
) -> Vec<(&'a str, &'a std::path::Path)> {
    path.iter().map(|p| (flag, p.as_path())).collect()
}

/// Writes one such file whole or not at all (see
/// [`ctxclean::io::write_atomic`]): through a temporary file beside it,
/// replacing only a regular file, directly into a FIFO or a device.
pub(crate) fn write_file(path: &std::path::Path, what: &str, bytes: &[u8]) -> anyhow::Result<()> {
    ctxclean::io::write_atomic(path, |w| w.write_all(bytes))
        .with_context(|| format!("writing {what} {}", path.display()))
}

/// A folder of files a run writes one by one (`replay --write-requests`):
/// checked before anything is read, and written without ever following a
/// link inside it or replacing a file it did not write, unless asked.
pub(crate) struct OutFolder {
    dir: PathBuf,
    replace: bool,
    written: std::collections::HashSet<std::ffi::OsString>,
}

impl OutFolder {
    /// `flag DIR`: a folder (made when missing), not one the inputs were
    /// found in; when it holds files already, refused unless `replace`.
    pub(crate) fn check(
        flag: &str,
        dir: &std::path::Path,
        sources: &[Source],
        replace: bool,
    ) -> anyhow::Result<OutFolder> {
        let usage = |m: String| -> anyhow::Result<OutFolder> { Err(UsageError(m).into()) };
        match std::fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return usage(format!("{flag} {}: not a folder", dir.display()));
            }
            Ok(_) => {
                check_out_dir(dir, sources).map_err(|e| UsageError(format!("{flag}: {e}")))?;
                let full = std::fs::read_dir(dir)
                    .with_context(|| format!("reading {}", dir.display()))?
                    .next()
                    .is_some();
                if full && !replace {
                    return usage(format!(
                        "{flag} {}: the folder has files already; give a new or empty one, or \
                         --replace-requests to replace the files of the same names",
                        dir.display()
                    ));
                }
            }
            Err(_) => {}
        }
        Ok(OutFolder {
            dir: dir.to_path_buf(),
            replace,
            written: Default::default(),
        })
    }

    /// Writes `name` in the folder: never through a link, never over what
    /// is not a regular file, never over a file this run wrote already.
    pub(crate) fn write(&mut self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let path = self.dir.join(name);
        if !self.written.insert(name.into()) {
            anyhow::bail!("{}: written twice in one run", path.display());
        }
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
                "{}: a symbolic link; ctxclean does not write through links in a folder it fills",
                path.display()
            ),
            Ok(m) if !m.is_file() => anyhow::bail!(
                "{}: {}, not a regular file; ctxclean replaces only regular files",
                path.display(),
                ctxclean::io::kind(&m)
            ),
            Ok(_) if !self.replace => anyhow::bail!(
                "{}: a file is there already (--replace-requests replaces it)",
                path.display()
            ),
            _ => {}
        }
        let mut f = AtomicFile::create(&path, true)?;
        use std::io::Write as _;
        f.write_all(bytes)
            .with_context(|| format!("writing {}", path.display()))?;
        f.commit(None).map(|_| ())
    }
}
