//! The output side: files written whole or not at all, never over what is
//! not a regular file, never over a file that changed while it was read,
//! never when nothing changed; output held back until its input is known to
//! be good; temporary files removed on errors, on signals, and when a later
//! run finds those of a dead process.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use anyhow::Context;

/// A file as it was when it was opened: identity, size and modification
/// time. A file rewritten in place must still match its stamp when the new
/// content goes in, or it changed while it was being processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Device and inode.
    pub id: (u64, u64),
    /// Size in bytes.
    pub len: u64,
    /// Modification time.
    pub mtime: Option<SystemTime>,
}

impl Stamp {
    /// The stamp of `meta`.
    pub fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            id: (meta.dev(), meta.ino()),
            len: meta.len(),
            mtime: meta.modified().ok(),
        }
    }
}

/// A file's identity (device, inode), following symbolic links.
pub fn identity(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The identity of standard output, when it is open.
pub fn stdout_identity() -> Option<(u64, u64)> {
    fs::metadata("/dev/stdout").ok().map(|m| (m.dev(), m.ino()))
}

/// What a file is, in words: `a FIFO`, `a character device`, ….
pub fn kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// An error of one file's output (a full disk, a file that changed while it
/// was read): with `--keep-going` the run goes on with the other files.
#[derive(Debug)]
pub struct OutputError(pub anyhow::Error);

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for OutputError {}

/// Writes a file whole or not at all (see [`Output::open`]): a regular file
/// (or a new one) through a temporary file renamed into place; a FIFO, a
/// device or a terminal directly. On any error a regular target is
/// untouched.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = Output::open(path)?;
    write(&mut out).with_context(|| format!("writing {}", path.display()))?;
    out.commit()
}

/// Where `-o` and `--report` write.
pub enum Output {
    /// A regular file, or one to create: replaced whole at the end.
    Atomic(AtomicFile),
    /// This process's standard output, named by a path (`/dev/stdout`, or
    /// the file it is redirected to): written through it, after what was
    /// written there already.
    Stdout(io::Stdout),
    /// Not a regular file (a FIFO, `/dev/null`, a terminal, a pipe such as
    /// `>(jq .)`): written directly, never replaced.
    Direct {
        /// The path, for errors.
        path: PathBuf,
        /// The open file.
        file: io::BufWriter<fs::File>,
    },
}

impl Output {
    /// Opens `path` for writing: directly when it is not a regular file,
    /// else through a temporary file beside it (beside the file a symbolic
    /// link points to, keeping the link), creating missing folders.
    pub fn open(path: &Path) -> anyhow::Result<Output> {
        if identity(path).is_some() && identity(path) == stdout_identity() {
            return Ok(Output::Stdout(io::stdout()));
        }
        match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                anyhow::bail!("{}: is a directory, not a file to write", path.display())
            }
            Ok(meta) if !meta.is_file() => {
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .with_context(|| format!("opening {} for writing", path.display()))?;
                Ok(Output::Direct {
                    path: path.to_path_buf(),
                    file: io::BufWriter::with_capacity(1 << 16, file),
                })
            }
            // Missing folders are created, as --out-dir does.
            _ => Ok(Output::Atomic(AtomicFile::create(path, true)?)),
        }
    }

    /// Finishes the output: renames the temporary file into place, or
    /// flushes a direct one.
    pub fn commit(self) -> anyhow::Result<()> {
        match self {
            Output::Atomic(a) => a.commit(None).map(|_| ()),
            Output::Stdout(mut out) => out.flush().context("writing to standard output"),
            Output::Direct { path, mut file } => file
                .flush()
                .with_context(|| format!("writing {}", path.display())),
        }
    }

    /// The path written to.
    pub fn path(&self) -> &Path {
        match self {
            Output::Atomic(a) => a.target(),
            Output::Stdout(_) => Path::new("/dev/stdout"),
            Output::Direct { path, .. } => path,
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Atomic(a) => a.write(buf),
            Output::Stdout(out) => out.write(buf),
            Output::Direct { file, .. } => file.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::Atomic(a) => a.write_all(buf),
            Output::Stdout(out) => out.write_all(buf),
            Output::Direct { file, .. } => file.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Atomic(a) => a.flush(),
            Output::Stdout(out) => out.flush(),
            Output::Direct { file, .. } => file.flush(),
        }
    }
}

/// Temporary files of this process not yet renamed or removed: what a
/// signal handler removes before the process exits.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Directories already searched for stale temporary files in this run.
static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Removes every temporary file of this process (from a signal handler
/// thread, before exiting).
pub fn remove_live_temporaries() {
    let live = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for p in live {
        let _ = fs::remove_file(p);
    }
}

fn forget(tmp: &Path) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|p| p != tmp);
    }
}

/// The longest file name most file systems take, in bytes.
const NAME_MAX: usize = 255;

/// The temporary name for `name`: `.NAME.ctxclean-PID-N.tmp`, with NAME cut
/// (at a character boundary) so the whole fits in [`NAME_MAX`] bytes.
fn temporary_name(name: &str, pid: u32, n: usize) -> String {
    let suffix = format!(".ctxclean-{pid}-{n}.tmp");
    let room = NAME_MAX - 1 - suffix.len();
    let mut cut = name.len().min(room);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(".{}{suffix}", &name[..cut])
}

/// The process id in a temporary name of ours, if it is one.
fn temporary_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let at = rest.rfind(".ctxclean-")?;
    let (pid, n) = rest[at + ".ctxclean-".len()..].split_once('-')?;
    n.parse::<usize>().ok()?;
    pid.parse().ok()
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes, once per directory and run, the temporary files that dead
/// ctxclean processes left in `dir` (a kill -9, a power cut).
/// Whether `dir` was swept (so it exists) in this run.
fn seen(dir: &Path) -> bool {
    SWEPT
        .lock()
        .map(|s| s.as_ref().is_some_and(|s| s.contains(dir)))
        .unwrap_or(false)
}

/// Makes everything written so far on the file system holding `path`
/// durable, in one call: the end of a run whose new files were not synced
/// one by one ([`AtomicFile::defer_sync`]).
pub fn sync_filesystem(path: &Path) -> io::Result<()> {
    let dir = fs::File::open(path)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs on a descriptor this function owns.
        if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        drop(dir);
        // SAFETY: sync takes no arguments and cannot fail.
        unsafe { libc::sync() };
    }
    Ok(())
}

fn sweep(dir: &Path) {
    {
        let Ok(mut swept) = SWEPT.lock() else { return };
        if !swept
            .get_or_insert_with(HashSet::new)
            .insert(dir.to_path_buf())
        {
            return;
        }
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = temporary_pid(&name.to_string_lossy()) else {
            continue;
        };
        if pid != std::process::id() && !alive(pid) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// A file written whole or not at all: bytes go to a temporary file beside
/// the target; [`AtomicFile::commit`] flushes, syncs and renames it into
/// place (keeping the owner, group and permissions of a file it replaces);
/// dropping it without committing removes the temporary file.
pub struct AtomicFile {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<io::BufWriter<fs::File>>,
    expect: Option<Stamp>,
    /// Whether a new file (one that replaces nothing) is synced before its
    /// rename; see [`AtomicFile::defer_sync`].
    sync_new: bool,
}

/// What a commit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Committed {
    /// The new content is in place.
    Written,
    /// The content was the same as the file's: the file was left as it was
    /// (same inode, same modification time), and no backup was made.
    Unchanged,
    /// The new content is in place, and this many bytes appended to the old
    /// file while it was being replaced were added to its end.
    Appended(u64),
}

impl AtomicFile {
    /// Creates the temporary file beside `target` (creating missing parent
    /// directories when `create_dirs`). A symbolic link is followed: the
    /// file it points to is the one replaced, and the link stays. A target
    /// that exists and is not a regular file is refused.
    pub fn create(target: &Path, create_dirs: bool) -> anyhow::Result<AtomicFile> {
        let target = match fs::symlink_metadata(target) {
            Ok(m) if m.file_type().is_symlink() => fs::canonicalize(target)
                .with_context(|| format!("{}: a symbolic link to nothing", target.display()))?,
            _ => target.to_path_buf(),
        };
        if let Ok(meta) = fs::metadata(&target) {
            if !meta.is_file() {
                anyhow::bail!(
                    "{}: {}, not a regular file; ctxclean replaces only regular files",
                    target.display(),
                    kind(&meta)
                );
            }
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Each folder is made (and swept) once per run, not once per file.
        if create_dirs && !seen(&dir) {
            fs::create_dir_all(&dir).with_context(|| {
                format!(
                    "cannot write {}: creating the folder {} failed",
                    target.display(),
                    dir.display()
                )
            })?;
        }
        sweep(&dir);
        let name = target
            .file_name()
            .with_context(|| format!("{}: not a file path", target.display()))?;
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(temporary_name(
            &name.to_string_lossy(),
            std::process::id(),
            n,
        ));
        if let Ok(mut live) = LIVE.lock() {
            live.push(tmp.clone());
        }
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| {
                forget(&tmp);
                format!(
                    "cannot write {}: creating a file in {} failed",
                    target.display(),
                    dir.display()
                )
            })?;
        Ok(AtomicFile {
            target,
            tmp,
            file: Some(io::BufWriter::with_capacity(1 << 16, file)),
            expect: None,
            sync_new: true,
        })
    }

    /// When the target does not exist yet, rename without syncing first:
    /// nothing is lost if the machine stops before the data reaches the
    /// disk, and the caller makes the run durable at its end with one
    /// [`sync_filesystem`] (`--out-dir`: thousands of new files, one sync).
    /// A file that replaces another is always synced before the rename: its
    /// old content is at stake.
    pub fn defer_sync(&mut self) {
        self.sync_new = false;
    }

    /// The file the output is for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Commits only if the target still matches `stamp` (taken when it was
    /// opened for reading): a file appended to meanwhile is left alone.
    pub fn expect(&mut self, stamp: Stamp) {
        self.expect = Some(stamp);
    }

    /// Flushes, syncs and renames the temporary file over the target. With
    /// `backup`, the target's previous content is kept at TARGET+SUFFIX
    /// first. When the content is the target's already, nothing is renamed.
    pub fn commit(mut self, backup: Option<&str>) -> anyhow::Result<Committed> {
        let result = self.commit_inner(backup);
        let _ = fs::remove_file(&self.tmp); // gone already after a rename
        forget(&self.tmp);
        result
    }

    fn commit_inner(&mut self, backup: Option<&str>) -> anyhow::Result<Committed> {
        let w = self.file.take().expect("not committed twice");
        let target = self.target.clone();
        let file = w
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", target.display()))?;
        let meta = fs::metadata(&target).ok();
        if self.sync_new || meta.is_some() {
            file.sync_all()
                .with_context(|| format!("writing {}", target.display()))?;
        }
        // A first look, before any work: a file appended to already fails here.
        check_stamp(&target, self.expect, meta.as_ref().map(Stamp::of))?;
        let mut made = None;
        if let Some(meta) = &meta {
            if meta.len() == file.metadata().map(|m| m.len()).unwrap_or(u64::MAX)
                && same_content(&self.tmp, &target).unwrap_or(false)
            {
                return Ok(Committed::Unchanged);
            }
            keep_owner_and_mode(&self.tmp, meta)
                .with_context(|| format!("setting the owner and mode of {}", target.display()))?;
            if let Some(suffix) = backup {
                made = Some(make_backup(&target, suffix)?);
            }
        }
        // The last look, just before the rename, on the file held open: what
        // is appended between this look and the rename lands in the held
        // file and is seen after it.
        let held = match self.expect {
            Some(want) => match last_look(&target, want) {
                Ok(held) => Some((held, want)),
                Err(e) => {
                    if let Some(b) = &made {
                        let _ = fs::remove_file(b); // the file stays as it is
                    }
                    return Err(e);
                }
            },
            None => None,
        };
        fs::rename(&self.tmp, &target)
            .with_context(|| format!("renaming {} to {}", self.tmp.display(), target.display()))?;
        match held {
            Some((old, want)) => after_rename(&target, old, want),
            None => Ok(Committed::Written),
        }
    }
}

/// Fails unless the file is as `want` (when there is one) says it was.
fn check_stamp(target: &Path, want: Option<Stamp>, now: Option<Stamp>) -> anyhow::Result<()> {
    let Some(want) = want else { return Ok(()) };
    if now == Some(want) {
        return Ok(());
    }
    anyhow::bail!(
        "{}: changed while processing (it was {}); left as it is",
        target.display(),
        match now {
            Some(n) if n.id != want.id => "replaced",
            Some(_) => "written to",
            None => "removed",
        }
    )
}

/// Opens the file about to be replaced and checks it is still as it was
/// read: the same file at the path, the same size and modification time.
fn last_look(target: &Path, want: Stamp) -> anyhow::Result<fs::File> {
    let held = fs::File::open(target).ok();
    let now = held
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map(|m| Stamp::of(&m))
        .filter(|s| identity(target) == Some(s.id));
    check_stamp(target, Some(want), now)?;
    if let Some(pid) = writers_of(want.id).first() {
        anyhow::bail!(
            "{}: open for writing by process {pid} (a live session?); left as it is, run again when it is closed",
            target.display()
        );
    }
    Ok(held.expect("checked: open"))
}

/// The other processes that hold the file `id` (device, inode) open for
/// writing, as far as /proc shows them (all of them to root, the user's own
/// otherwise; nothing where there is no /proc).
fn writers_of(id: (u64, u64)) -> Vec<u32> {
    let me = std::process::id();
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let same = fs::metadata(fd.path()).is_ok_and(|m| (m.dev(), m.ino()) == id);
            if same && opened_for_writing(&p.path().join("fdinfo").join(fd.file_name())) {
                found.push(pid);
                break;
            }
        }
    }
    found
}

/// Whether /proc's `fdinfo` file of a descriptor says write or read-write.
fn opened_for_writing(fdinfo: &Path) -> bool {
    let Ok(text) = fs::read_to_string(fdinfo) else {
        return true; // unknown: taken as a writer
    };
    text.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_none_or(|flags| flags & 0o3 != 0)
}

/// After the rename: bytes appended to the old file between the last look
/// and the rename are added to the end of the new one (nothing a writer
/// appended is lost); any other change keeps the old content beside it and
/// fails.
fn after_rename(target: &Path, mut old: fs::File, want: Stamp) -> anyhow::Result<Committed> {
    use std::io::{Seek, SeekFrom};
    // A writer that opened the file just before the rename writes to the
    // old file: wait for it to close (two seconds at most) before looking.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !writers_of(want.id).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let now = old
        .metadata()
        .map(|m| Stamp::of(&m))
        .with_context(|| format!("reading {}", target.display()))?;
    if now == want {
        return Ok(Committed::Written);
    }
    if now.len > want.len {
        old.seek(SeekFrom::Start(want.len))
            .and_then(|_| {
                let mut out = fs::OpenOptions::new().append(true).open(target)?;
                let n = io::copy(&mut old, &mut out)?;
                out.sync_all()?;
                Ok(n)
            })
            .map(Committed::Appended)
            .with_context(|| {
                format!(
                    "{}: written to while it was replaced; adding what was appended failed",
                    target.display()
                )
            })
    } else {
        old.seek(SeekFrom::Start(0))
            .with_context(|| format!("reading {}", target.display()))?;
        let kept = keep_copy(target, ".ctxclean-changed", &mut old)?;
        anyhow::bail!(
            "{}: rewritten by another program while it was replaced; its content then is kept in {}",
            target.display(),
            kept.display()
        )
    }
}

/// Keeps `target`'s content at TARGET+SUFFIX, or, when that name is taken
/// (an earlier backup, or anything else), at the first free TARGET+SUFFIX.1,
/// .2, …: a backup is never overwritten, and nothing already there is
/// followed or replaced. Returns the backup's path.
pub fn make_backup(target: &Path, suffix: &str) -> anyhow::Result<PathBuf> {
    for backup in free_names(target, suffix) {
        // A hard link is made only where nothing is; else a copy, created new.
        match fs::hard_link(target, &backup) {
            Ok(()) => return Ok(backup),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        let mut from = fs::File::open(target)
            .with_context(|| format!("writing the backup {}", backup.display()))?;
        match copy_new(&backup, &mut from) {
            Ok(true) => return Ok(backup),
            Ok(false) => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("writing the backup {}", backup.display()))
            }
        }
    }
    too_many(target, suffix)
}

/// Copies what `from` holds to the first free TARGET+SUFFIX[.N], made new.
fn keep_copy(target: &Path, suffix: &str, from: &mut fs::File) -> anyhow::Result<PathBuf> {
    for path in free_names(target, suffix) {
        match copy_new(&path, from) {
            Ok(true) => return Ok(path),
            Ok(false) => continue,
            Err(e) => return Err(e).with_context(|| format!("writing {}", path.display())),
        }
    }
    too_many(target, suffix)
}

/// Backups and kept copies of one file a run may find before it gives up.
const MOST_COPIES: usize = 10_000;

/// TARGET+SUFFIX, then TARGET+SUFFIX.1, .2, ….
fn free_names<'a>(target: &'a Path, suffix: &'a str) -> impl Iterator<Item = PathBuf> + 'a {
    (0..MOST_COPIES).map(move |n| {
        let mut name = target.as_os_str().to_os_string();
        name.push(suffix);
        if n > 0 {
            name.push(format!(".{n}"));
        }
        PathBuf::from(name)
    })
}

fn too_many<T>(target: &Path, suffix: &str) -> anyhow::Result<T> {
    anyhow::bail!(
        "{}: {MOST_COPIES} backups named {}{suffix}… exist already; remove some first",
        target.display(),
        target.display()
    )
}

/// Copies `from` to `path`, created new and synced; `false` when `path`
/// exists already (nothing is written there).
fn copy_new(path: &Path, from: &mut fs::File) -> io::Result<bool> {
    let mut out = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    let copied = io::copy(from, &mut out).and_then(|_| out.sync_all());
    if let Err(e) = copied {
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(true)
}

/// Whether two files hold the same bytes.
fn same_content(a: &Path, b: &Path) -> io::Result<bool> {
    use std::io::Read;
    let (mut a, mut b) = (fs::File::open(a)?, fs::File::open(b)?);
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = a.read(&mut x)?;
        if n == 0 {
            return Ok(b.read(&mut y[..1])? == 0);
        }
        let mut got = 0;
        while got < n {
            let m = b.read(&mut y[got..n])?;
            if m == 0 {
                return Ok(false);
            }
            got += m;
        }
        if x[..n] != y[..n] {
            return Ok(false);
        }
    }
}

/// Gives `tmp` the owner, group and mode of the file it replaces, as far as
/// the process may: a set-user-ID or set-group-ID bit is kept only with the
/// owner or group it was set for.
fn keep_owner_and_mode(tmp: &Path, old: &fs::Metadata) -> io::Result<()> {
    let mine = fs::metadata(tmp)?;
    let mut mode = old.mode() & 0o7777;
    let mut uid_kept = mine.uid() == old.uid();
    let mut gid_kept = mine.gid() == old.gid();
    if !(uid_kept && gid_kept) {
        if std::os::unix::fs::chown(tmp, Some(old.uid()), Some(old.gid())).is_ok() {
            uid_kept = true;
            gid_kept = true;
        } else if !gid_kept && std::os::unix::fs::chown(tmp, None, Some(old.gid())).is_ok() {
            gid_kept = true;
        }
    }
    if !uid_kept {
        mode &= !0o4000;
    }
    if !gid_kept {
        mode &= !0o2000;
    }
    fs::set_permissions(tmp, fs::Permissions::from_mode(mode))
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
            forget(&self.tmp);
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
                .open(&path)
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!(
                            "holding output in a temporary file in {} (TMPDIR): {e}",
                            dir.display()
                        ),
                    )
                })?;
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
        if self.mem.len() + buf.len() <= self.limit {
            self.mem.extend_from_slice(buf);
            return Ok(buf.len());
        }
        // Past the limit: what is held goes to the file, and `buf` after it,
        // never copied into memory first (a whole document's output is one
        // large write).
        self.spill()?;
        self.file.as_mut().expect("spilled").write_all(buf)?;
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

    #[test]
    fn a_write_past_the_limit_goes_to_the_file_in_order() {
        let mut s = Spool::new(10);
        let big = "x".repeat(1000);
        s.write_all(b"abc").unwrap();
        s.write_all(big.as_bytes()).unwrap();
        // Memory never holds more than the limit, even for one large write.
        assert!(s.mem.len() <= 10 && s.mem.capacity() <= 10);
        s.write_all(b"def").unwrap();
        let mut out = Vec::new();
        s.copy_to(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("abc{big}def"));
    }
}
