//! Batch work: which files to read, how to cut them into chunks that can be
//! processed apart, and an ordered parallel map to process them with.
//!
//! - [`discover`] expands the inputs: files as given, directories walked
//!   recursively (sorted, hidden entries skipped unless asked, files matched
//!   by glob patterns on their names).
//! - [`Chunks`] reads one input as a sequence of [`Work`] items. A JSONL
//!   input with one conversation per line is streamed: cut into chunks of
//!   whole lines, each parsed and written on its own, so memory stays bounded
//!   whatever the file's size. Anything else (a JSON document, a JSONL log
//!   whose lines are the messages of one conversation) is one item, held
//!   whole.
//! - [`ordered_map`] runs a function over items on N threads, each with its
//!   own state (its tokenizer), and hands the results back in input order,
//!   with a bounded number of items in flight.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::format::{read_document, ChunkStart, Document, Format, Layout, ReadOptions};
use crate::InputError;

/// One input to process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The file, or `None` for standard input.
    pub path: Option<PathBuf>,
    /// Its path relative to the directory it was found in (its file name
    /// when given as a file): where `--out-dir` puts its output.
    pub relative: PathBuf,
    /// Its size in bytes (0 for standard input).
    pub size: u64,
    /// An input put together from many files or read from a database when
    /// it is opened: an OpenCode session of its storage directory, named by
    /// its session file, or a session of an agent's database. `None` for a
    /// file or standard input.
    pub assembled: Option<Assembled>,
}

/// How an assembled input's text is had: put together when the input is
/// opened, so that a folder or a database of many sessions is never held in
/// memory whole.
#[derive(Clone)]
pub struct Loader(std::sync::Arc<dyn Fn() -> anyhow::Result<Vec<u8>> + Send + Sync>);

impl Loader {
    /// A loader that runs `f`.
    pub fn new(f: impl Fn() -> anyhow::Result<Vec<u8>> + Send + Sync + 'static) -> Loader {
        Loader(std::sync::Arc::new(f))
    }

    /// The text, put together now.
    pub fn load(&self) -> anyhow::Result<Vec<u8>> {
        (self.0)()
    }
}

impl PartialEq for Loader {
    fn eq(&self, other: &Loader) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Loader {}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Loader")
    }
}

/// An input put together from many files or a database (see
/// [`Source::assembled`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembled {
    /// How errors and reports name it.
    pub name: String,
    /// What it is read from, in words: `many files`, `a database`.
    pub from: &'static str,
    /// The file that names it: OpenCode's session file, an agent's
    /// database. Nothing is ever written over it.
    pub file: PathBuf,
    /// Its text, put together when it is opened.
    pub text: Loader,
}

impl Source {
    /// How errors and reports name it: its path, or `-`.
    pub fn name(&self) -> String {
        match (&self.path, &self.assembled) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(a)) => a.name.clone(),
            (None, None) => "-".to_string(),
        }
    }

    /// Whether it is standard input.
    pub fn is_stdin(&self) -> bool {
        self.path.is_none() && self.assembled.is_none()
    }

    /// Opens it for reading.
    pub fn open(&self) -> anyhow::Result<Box<dyn BufRead + Send>> {
        if let Some(a) = &self.assembled {
            let text = a
                .text
                .load()
                .with_context(|| format!("reading {}", a.name))?;
            return Ok(Box::new(io::Cursor::new(text)));
        }
        Ok(match &self.path {
            Some(p) => Box::new(io::BufReader::with_capacity(
                1 << 16,
                fs::File::open(p).with_context(|| format!("reading {}", p.display()))?,
            )),
            None => Box::new(io::BufReader::with_capacity(1 << 16, io::stdin())),
        })
    }
}

/// Which files a directory walk takes.
#[derive(Clone, Debug)]
pub struct Walk {
    /// Glob patterns matched against file names (or, with a `/`, against the
    /// path relative to the directory): `*.json`, `logs/**/*.jsonl`.
    pub globs: Vec<String>,
    /// Whether hidden files and directories (names starting with `.`) are taken.
    pub hidden: bool,
    /// Directories not to walk into, by device and inode (`--out-dir` inside
    /// an input directory: its outputs are never read back as inputs).
    pub skip: Vec<(u64, u64)>,
}

impl Default for Walk {
    fn default() -> Self {
        Walk {
            globs: vec!["*.json".into(), "*.jsonl".into()],
            hidden: false,
            skip: Vec::new(),
        }
    }
}

/// Expands the command line's inputs: standard input when there are none
/// (or for `-`), files as given, directories walked recursively in sorted
/// order. What a walk passed over that its globs matched (a FIFO, a
/// device, a broken link) or that it does not follow (a link to a
/// directory) is added to `passed_over`, a line each, for the caller to say.
pub fn discover(
    inputs: &[PathBuf],
    walk: &Walk,
    passed_over: &mut Vec<String>,
) -> anyhow::Result<Vec<Source>> {
    if inputs.is_empty() {
        return Ok(vec![stdin()]);
    }
    let mut out = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            out.push(stdin());
            continue;
        }
        let meta = fs::metadata(input).with_context(|| format!("reading {}", input.display()))?;
        // An agent's database first: OpenCode's folder keeps its frozen
        // storage beside the database that replaced it.
        if let Some(db) = agent_database(input, &meta) {
            out.extend(db_sessions(&db)?);
        } else if let Some(root) = meta
            .is_dir()
            .then(|| crate::stores::opencode::storage::root(input))
            .flatten()
        {
            let sessions = crate::stores::opencode::storage::sessions(&root)
                .with_context(|| format!("reading OpenCode's storage {}", root.display()))?;
            out.extend(sessions.into_iter().map(|s| {
                let (root, file, id) = (root.clone(), s.file.clone(), s.id.clone());
                Source {
                    path: None,
                    relative: PathBuf::from(format!("{}.json", s.id)),
                    size: s.size,
                    assembled: Some(Assembled {
                        name: format!("{} (OpenCode session)", s.file.display()),
                        from: "many files",
                        file: s.file,
                        text: Loader::new(move || {
                            crate::stores::opencode::storage::export(&root, &file, &id)
                        }),
                    }),
                }
            }));
        } else if meta.is_dir() {
            let mut sources = Vec::new();
            walk_dir(input, Path::new(""), walk, &mut sources, passed_over)
                .with_context(|| format!("reading the directory {}", input.display()))?;
            for s in sources {
                // A database a glob took (`--glob '*.db'`) is read as one.
                match s.path.as_deref().filter(|p| is_database(p)) {
                    Some(db) => out.extend(db_sessions(db)?),
                    None => out.push(s),
                }
            }
        } else {
            out.push(Source {
                path: Some(input.clone()),
                relative: input
                    .file_name()
                    .map_or_else(|| input.clone(), PathBuf::from),
                size: meta.len(),
                assembled: None,
            });
        }
    }
    Ok(out)
}

/// The agent's database an input is: a SQLite file, or a data directory
/// holding one (Crush's `.crush/crush.db`, Grok CLI's `~/.grok/grok.db`).
#[cfg(feature = "databases")]
fn agent_database(input: &Path, meta: &fs::Metadata) -> Option<PathBuf> {
    use crate::stores::database;
    if meta.is_dir() {
        database::in_dir(input)
    } else {
        (meta.is_file() && database::is_sqlite(input)).then(|| input.to_path_buf())
    }
}

/// Whether a file a directory walk took is a database: not JSON by its
/// name, SQLite by its first bytes.
#[cfg(feature = "databases")]
fn is_database(path: &Path) -> bool {
    let json = path
        .extension()
        .is_some_and(|e| e == "json" || e == "jsonl");
    !json && crate::stores::database::is_sqlite(path)
}

/// Without the `databases` feature (the Python package, which reads no
/// files), no input is a database.
#[cfg(not(feature = "databases"))]
fn agent_database(_input: &Path, _meta: &fs::Metadata) -> Option<PathBuf> {
    None
}

#[cfg(not(feature = "databases"))]
fn is_database(_path: &Path) -> bool {
    false
}

#[cfg(not(feature = "databases"))]
fn db_sessions(_db: &Path) -> anyhow::Result<Vec<Source>> {
    Ok(Vec::new())
}

/// The file a database's session is written to under `--out-dir`: its id
/// with `.json`, each character a file name cannot hold (a path's
/// separators: Amazon Q's ids are directories; a control character; a
/// leading dot) written `%XX`, so that it is one file inside the folder,
/// and two ids never share it.
#[cfg(feature = "databases")]
fn file_name_of(id: &str) -> String {
    let mut out = String::with_capacity(id.len() + 5);
    for (k, c) in id.chars().enumerate() {
        let unsafe_char = matches!(
            c,
            '/' | '\\' | ':' | '%' | '*' | '?' | '"' | '<' | '>' | '|'
        ) || c.is_control()
            || (k == 0 && c == '.');
        if unsafe_char {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    if out.is_empty() {
        out.push('%');
    }
    out + ".json"
}

/// The sessions of an agent's database, each an input of its own, read
/// when it is opened (from one snapshot of the database).
#[cfg(feature = "databases")]
fn db_sessions(db: &Path) -> anyhow::Result<Vec<Source>> {
    let opened = crate::stores::database::Database::open(db)
        .with_context(|| format!("reading {}", db.display()))?;
    let sessions = opened
        .sessions()
        .with_context(|| format!("reading {}", db.display()))?;
    Ok(sessions
        .into_iter()
        .map(|(id, size)| {
            let (from, session) = (opened.clone(), id.clone());
            Source {
                path: None,
                relative: PathBuf::from(file_name_of(&id)),
                size,
                assembled: Some(Assembled {
                    name: format!("{} ({} session {id})", db.display(), opened.agent()),
                    from: "a database, which ctxclean never writes",
                    file: db.to_path_buf(),
                    text: Loader::new(move || from.session(&session)),
                }),
            }
        })
        .collect())
}

fn stdin() -> Source {
    Source {
        path: None,
        relative: PathBuf::from("-"),
        size: 0,
        assembled: None,
    }
}

/// Walks `root`/`rel`: the files it takes into `sources`, and into
/// `passed_over` what a user may have meant it to read but it passes over
/// (said, never silent).
fn walk_dir(
    root: &Path,
    rel: &Path,
    walk: &Walk,
    sources: &mut Vec<Source>,
    passed_over: &mut Vec<String>,
) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(root.join(rel))?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let name_str = name.to_string_lossy();
        if !walk.hidden && name_str.starts_with('.') {
            continue;
        }
        let rel_path = rel.join(&name);
        let kind = entry.file_type()?;
        let mut pass_over = |why: &str| {
            let path = root.join(&rel_path);
            passed_over.push(format!("{}: passed over: {why}", path.display()));
        };
        // Symbolic links are followed to files, never to directories (no cycles).
        let meta = if kind.is_symlink() {
            match fs::metadata(entry.path()) {
                Ok(m) if m.is_dir() => {
                    pass_over("a link to a directory (a walk follows links to files only)");
                    continue;
                }
                Ok(m) => m,
                Err(e) => {
                    if matches_any(&walk.globs, &rel_path) {
                        pass_over(&format!("a broken link: {e}"));
                    }
                    continue;
                }
            }
        } else {
            entry.metadata()?
        };
        if kind.is_dir() {
            use std::os::unix::fs::MetadataExt;
            if walk.skip.contains(&(meta.dev(), meta.ino())) {
                continue;
            }
            walk_dir(root, &rel_path, walk, sources, passed_over)?;
        } else if !matches_any(&walk.globs, &rel_path) {
            continue;
        } else if meta.is_file() {
            sources.push(Source {
                path: Some(root.join(&rel_path)),
                relative: rel_path,
                size: meta.len(),
                assembled: None,
            });
        } else {
            // A FIFO, a socket or a device: reading one could wait for
            // ever, or never end. Named on the command line, it is read.
            pass_over(&format!(
                "{}, not a regular file (name it to read it)",
                crate::io::kind(&meta)
            ));
        }
    }
    Ok(())
}

fn matches_any(globs: &[String], rel: &Path) -> bool {
    let rel = rel.to_string_lossy().replace('\\', "/");
    let name = rel.rsplit('/').next().unwrap_or(&rel);
    globs.iter().any(|g| {
        if g.contains('/') {
            glob_match(g.trim_start_matches("./"), &rel)
        } else {
            glob_match(g, name)
        }
    })
}

/// Matches `text` against a glob: `*` (any run without `/`), `**` (any run),
/// `?` (one character other than `/`), `[abc]`, `[a-z]`, `[!a]`, and
/// `{a,b}` alternatives.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    // Alternatives first: expand the first `{…}` and try each.
    if let Some(open) = pattern.find('{') {
        if let Some(len) = pattern[open..].find('}') {
            let (head, rest) = (&pattern[..open], &pattern[open + len + 1..]);
            return pattern[open + 1..open + len]
                .split(',')
                .any(|alt| glob_match(&format!("{head}{alt}{rest}"), text));
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') if p.get(1) == Some(&'*') => {
            let rest = if p.get(2) == Some(&'/') {
                &p[3..]
            } else {
                &p[2..]
            };
            (0..=t.len()).any(|i| glob_at(rest, &t[i..]))
                || (p.get(2) == Some(&'/') && glob_at(rest, t))
        }
        Some('*') => (0..=t.len())
            .take_while(|&i| i == 0 || t[i - 1] != '/')
            .any(|i| glob_at(&p[1..], &t[i..])),
        Some('?') => t.first().is_some_and(|&c| c != '/') && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some(close) = p.iter().skip(1).position(|&c| c == ']').map(|i| i + 1) else {
                return t.first() == Some(&'[') && glob_at(&p[1..], &t[1..]);
            };
            let Some(&c) = t.first() else { return false };
            let mut set = &p[1..close];
            let negate = matches!(set.first(), Some('!') | Some('^'));
            if negate {
                set = &set[1..];
            }
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && c != '/' && glob_at(&p[close + 1..], &t[1..])
        }
        Some(&c) => t.first() == Some(&c) && glob_at(&p[1..], &t[1..]),
    }
}

/// A unit of work cut from one input.
pub enum Work {
    /// The first chunk of a streamed input, already parsed (to learn its
    /// format and layout).
    Parsed(Box<Document>),
    /// Whole lines of a streamed JSONL input, to parse as `format`.
    Lines {
        /// The bytes: whole lines.
        bytes: Vec<u8>,
        /// Where they start in the input.
        start: ChunkStart,
        /// The input's format, as the first chunk detected it.
        format: Format,
    },
    /// A whole input, to parse as one document.
    Whole(Vec<u8>),
}

impl Work {
    /// The input bytes this item covers (for progress).
    pub fn len(&self) -> usize {
        match self {
            Work::Parsed(doc) => doc.source_len,
            Work::Lines { bytes, .. } | Work::Whole(bytes) => bytes.len(),
        }
    }

    /// Whether the item covers no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parses the item into a document.
    pub fn parse(self, source: &str, opts: &ReadOptions) -> Result<Document, InputError> {
        match self {
            Work::Parsed(doc) => Ok(*doc),
            Work::Lines {
                bytes,
                start,
                format,
            } => {
                let opts = ReadOptions {
                    from: Some(format),
                    chunk: Some(start),
                    ..opts.clone()
                };
                read_document(source, bytes, &opts)
            }
            Work::Whole(bytes) => read_document(source, bytes, opts),
        }
    }
}

/// Cuts one input into [`Work`] items (see the module docs).
pub struct Chunks<R> {
    source: String,
    reader: R,
    opts: ReadOptions,
    chunk_bytes: usize,
    state: State,
    /// Blank lines held back: they open the next chunk, or end the input.
    carry: Vec<u8>,
    /// The line ends in `carry`.
    carry_lines: usize,
    line: usize,
}

enum State {
    Start,
    Streaming(Format),
    Done,
}

impl<R: BufRead> Chunks<R> {
    /// Items of about `chunk_bytes` each (whole lines).
    pub fn new(source: &str, reader: R, opts: &ReadOptions, chunk_bytes: usize) -> Chunks<R> {
        Chunks {
            source: source.to_string(),
            reader,
            opts: opts.clone(),
            chunk_bytes: chunk_bytes.max(1),
            state: State::Start,
            carry: Vec::new(),
            carry_lines: 0,
            line: 0,
        }
    }

    fn io_error(&self, e: io::Error) -> anyhow::Error {
        anyhow::Error::new(e).context(format!("reading {}", self.source))
    }

    /// Reads whole lines up to about `chunk_bytes` (after the carried lines)
    /// and at least `min_lines` non-blank ones; returns them and whether the
    /// input is at its end. Blank lines after the chunk stay with it only at
    /// the input's end (its tail); otherwise they open the next chunk, where a
    /// blank line in the middle of JSONL is reported as it would be whole.
    fn read_lines(&mut self, min_lines: usize) -> io::Result<(Vec<u8>, bool, usize)> {
        let mut buf = std::mem::take(&mut self.carry);
        let mut newlines = std::mem::take(&mut self.carry_lines);
        let target = buf.len() + self.chunk_bytes;
        let mut lines = 0;
        while buf.len() < target || lines < min_lines {
            let start = buf.len();
            if self.reader.read_until(b'\n', &mut buf)? == 0 {
                return Ok((buf, true, newlines));
            }
            newlines += usize::from(buf.last() == Some(&b'\n'));
            if !buf[start..].iter().all(u8::is_ascii_whitespace) {
                lines += 1;
            }
        }
        let mut blank = Vec::new();
        let mut blank_lines = 0;
        loop {
            let mut line = Vec::new();
            if self.reader.read_until(b'\n', &mut line)? == 0 {
                buf.append(&mut blank);
                return Ok((buf, true, newlines + blank_lines));
            }
            blank_lines += usize::from(line.last() == Some(&b'\n'));
            let is_blank = line.iter().all(u8::is_ascii_whitespace);
            blank.append(&mut line);
            if !is_blank {
                self.carry = blank;
                self.carry_lines = blank_lines;
                return Ok((buf, false, newlines));
            }
        }
    }

    /// An input whose first byte that is not white space can start no
    /// JSON value nor a comment line (`/dev/zero`, `yes`, a binary file):
    /// its error at once, before the rest is read, which may have no end
    /// and no line break to stop at. With --skip-invalid a JSONL input may
    /// open with any line, so it is read as before; and so is an input that
    /// opens with more white space than one buffer holds.
    fn cannot_start(&mut self) -> io::Result<Option<anyhow::Error>> {
        if self.opts.skip_invalid {
            return Ok(None);
        }
        let head = self.reader.fill_buf()?;
        let body = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
        let Some(at) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
            return Ok(None);
        };
        if matches!(
            body[at],
            b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'/'
        ) {
            return Ok(None);
        }
        let before = &body[..at];
        let line = 1 + memchr::memchr_iter(b'\n', before).count();
        let column = 1 + before.len()
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        Ok(Some(anyhow::anyhow!(
            "{}:{line}:{column}: expected value: not JSON or JSONL (byte 0x{:02x})",
            self.source,
            body[at]
        )))
    }

    fn next_item(&mut self) -> anyhow::Result<Option<Work>> {
        match self.state {
            State::Done => Ok(None),
            State::Start => {
                if let Some(e) = self.cannot_start().map_err(|e| self.io_error(e))? {
                    self.state = State::Done;
                    return Err(e);
                }
                // At least two lines, so that JSONL can be told from a document.
                let (first, at_end, lines) = self.read_lines(2).map_err(|e| self.io_error(e))?;
                if at_end {
                    self.state = State::Done;
                    return Ok(Some(Work::Whole(first)));
                }
                // Stream only JSONL with one conversation per line.
                let streamable = std::str::from_utf8(&first).ok().is_some_and(|t| {
                    crate::format::read::looks_like_jsonl(t.trim_start_matches('\u{feff}'))
                });
                if streamable {
                    let opts = ReadOptions {
                        chunk: Some(ChunkStart::default()),
                        ..self.opts.clone()
                    };
                    match read_document(&self.source, first.clone(), &opts) {
                        Ok(doc) if doc.layout == Layout::JsonlConversations => {
                            self.line = lines;
                            self.state = State::Streaming(doc.source_format);
                            return Ok(Some(Work::Parsed(Box::new(doc))));
                        }
                        // Lines whose format cannot be told: the rest would
                        // not tell it either, and an endless stream of them
                        // (`yes '{}'`) would be held without bound.
                        Err(e) if crate::format::is_undetected(&e) => {
                            self.state = State::Done;
                            return Err(e.into());
                        }
                        _ => {}
                    }
                }
                // Held whole: read the rest.
                let mut all = first;
                all.append(&mut self.carry);
                self.reader
                    .read_to_end(&mut all)
                    .map_err(|e| self.io_error(e))?;
                self.state = State::Done;
                Ok(Some(Work::Whole(all)))
            }
            State::Streaming(format) => {
                let (bytes, at_end, lines) = self.read_lines(1).map_err(|e| self.io_error(e))?;
                if at_end {
                    self.state = State::Done;
                    if bytes.is_empty() {
                        return Ok(None);
                    }
                }
                // Conversation indices are local to the chunk: the consumer,
                // which sees the chunks in order, knows where each starts.
                let start = ChunkStart {
                    line: self.line,
                    conversation: 0,
                };
                self.line += lines;
                Ok(Some(Work::Lines {
                    bytes,
                    start,
                    format,
                }))
            }
        }
    }
}

impl<R: BufRead> Iterator for Chunks<R> {
    type Item = anyhow::Result<Work>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_item() {
            Ok(item) => item.map(Ok),
            Err(e) => {
                self.state = State::Done;
                Some(Err(e))
            }
        }
    }
}

/// The stack of each worker thread: 64 MiB of address space, of which only
/// what a deep document's recursion touches is ever used.
const WORKER_STACK: usize = 64 << 20;

/// Runs `work` over `items` on `jobs` threads, each with state from `init`
/// (built on its thread), and passes the results to `consume` in input
/// order. At most `2 × jobs` items are in flight. `consume` returns whether
/// to go on; items are pulled from the iterator only as needed, so a
/// consumer that stops early stops the reading too.
pub fn ordered_map<T, S, R, I, W, C>(
    items: impl Iterator<Item = T>,
    jobs: usize,
    init: I,
    work: W,
    mut consume: C,
) -> anyhow::Result<()>
where
    T: Send,
    R: Send,
    I: Fn() -> anyhow::Result<S> + Sync,
    W: Fn(&mut S, T) -> R + Sync,
    C: FnMut(R) -> anyhow::Result<bool>,
{
    let mut items = items;
    if jobs <= 1 {
        let mut state = init()?;
        for item in items {
            if !consume(work(&mut state, item))? {
                break;
            }
        }
        return Ok(());
    }
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let (task_tx, task_rx) = mpsc::channel::<(usize, T)>();
        let task_rx = Arc::new(Mutex::new(task_rx));
        let (done_tx, done_rx) = mpsc::channel::<Done<R>>();
        for _ in 0..jobs {
            let task_rx = Arc::clone(&task_rx);
            let done_tx = done_tx.clone();
            let (init, work) = (&init, &work);
            // Deep documents (a LibreChat export nested a level per reply)
            // are walked recursively: room for them, reserved, not used.
            std::thread::Builder::new()
                .stack_size(WORKER_STACK)
                .spawn_scoped(scope, move || worker(&task_rx, &done_tx, init, work))
                .expect("a worker thread starts");
        }
        drop(done_tx);
        let mut sent = 0;
        let mut next_out = 0;
        let mut exhausted = false;
        let mut pending: BTreeMap<usize, R> = BTreeMap::new();
        loop {
            while !exhausted && sent - next_out < 2 * jobs {
                match items.next() {
                    Some(item) => {
                        if task_tx.send((sent, item)).is_err() {
                            exhausted = true;
                        }
                        sent += 1;
                    }
                    None => exhausted = true,
                }
            }
            if next_out == sent && exhausted {
                break;
            }
            let done = done_rx
                .recv()
                .context("a worker thread stopped unexpectedly")?;
            let (seq, r) = match done {
                Done::Item(seq, r) => (seq, r),
                Done::InitFailed(e) => return Err(e),
                // As with one job: the panic goes on from here (the task
                // channel closes on the way, so the other workers end).
                Done::Panicked(payload) => {
                    drop(task_tx);
                    std::panic::resume_unwind(payload)
                }
            };
            pending.insert(seq, r);
            while let Some(r) = pending.remove(&next_out) {
                next_out += 1;
                if !consume(r)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    })
}

/// What a worker of [`ordered_map`] hands back.
enum Done<R> {
    Item(usize, R),
    InitFailed(anyhow::Error),
    /// The work panicked (a bug): the panic, to go on in the thread that
    /// waits for it. Uncaught, the worker died holding an item, and the
    /// run waited for it for ever.
    Panicked(Box<dyn std::any::Any + Send>),
}

/// One worker of [`ordered_map`]: takes items until there are none or no
/// one waits for results.
fn worker<T, S, R>(
    task_rx: &Mutex<mpsc::Receiver<(usize, T)>>,
    done_tx: &mpsc::Sender<Done<R>>,
    init: &(impl Fn() -> anyhow::Result<S> + Sync),
    work: &(impl Fn(&mut S, T) -> R + Sync),
) {
    let mut state = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(init)) {
        Ok(Ok(s)) => Some(s),
        Ok(Err(e)) => {
            let _ = done_tx.send(Done::InitFailed(e));
            None
        }
        Err(payload) => {
            let _ = done_tx.send(Done::Panicked(payload));
            return;
        }
    };
    loop {
        let next = task_rx.lock().map(|rx| rx.recv());
        let Ok(Ok((seq, item))) = next else { break };
        let Some(state) = state.as_mut() else {
            // Keep draining so the producer never waits on us.
            continue;
        };
        let done =
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(state, item))) {
                Ok(r) => Done::Item(seq, r),
                Err(payload) => {
                    let _ = done_tx.send(Done::Panicked(payload));
                    break;
                }
            };
        if done_tx.send(done).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "databases")]
    #[test]
    fn a_sessions_file_is_one_name_inside_the_folder() {
        assert_eq!(file_name_of("ses_01"), "ses_01.json");
        assert_eq!(
            file_name_of("/home/dev/ledger"),
            "%2Fhome%2Fdev%2Fledger.json"
        );
        assert_eq!(file_name_of("../x"), "%2E.%2Fx.json");
        assert_eq!(file_name_of("C:\\a\u{1b}"), "C%3A%5Ca%1B.json");
        assert_eq!(file_name_of(""), "%.json");
        // Two ids never share a file.
        assert_ne!(file_name_of("a/b"), file_name_of("a%2Fb"));
    }

    #[test]
    fn globs() {
        assert!(glob_match("*.json", "a.json"));
        assert!(!glob_match("*.json", "a.jsonl"));
        assert!(glob_match("*.json{,l}", "a.jsonl"));
        assert!(glob_match("session-?.jsonl", "session-1.jsonl"));
        assert!(glob_match("[ab]*.json", "b1.json"));
        assert!(!glob_match("[!ab]*.json", "b1.json"));
        assert!(glob_match("logs/**/*.jsonl", "logs/a/b/c.jsonl"));
        assert!(glob_match("logs/**/*.jsonl", "logs/c.jsonl"));
        assert!(!glob_match("logs/*.jsonl", "logs/a/c.jsonl"));
        assert!(glob_match("*", "anything"));
    }

    #[test]
    fn ordered_map_keeps_order_and_stops_early() {
        for jobs in [1, 2, 4] {
            let mut seen = Vec::new();
            ordered_map(
                0..100u64,
                jobs,
                || Ok(()),
                |_, i| {
                    // Later items finish first.
                    std::thread::sleep(std::time::Duration::from_micros(100 - i));
                    i * 2
                },
                |r| {
                    seen.push(r);
                    Ok(true)
                },
            )
            .unwrap();
            assert_eq!(seen, (0..100).map(|i| i * 2).collect::<Vec<_>>());
            let mut n = 0;
            ordered_map(
                0..100u64,
                jobs,
                || Ok(()),
                |_, i| i,
                |_| {
                    n += 1;
                    Ok(n < 10)
                },
            )
            .unwrap();
            assert_eq!(n, 10);
        }
    }

    #[test]
    fn a_panic_in_a_worker_ends_the_run_as_with_one_job_and_does_not_hang() {
        for jobs in [1, 2, 4] {
            let run = std::panic::catch_unwind(|| {
                ordered_map(
                    0..100u64,
                    jobs,
                    || Ok(()),
                    |_, i| {
                        assert!(i != 5, "item {i}");
                        i
                    },
                    |_| Ok(true),
                )
            });
            let payload = run.expect_err("the panic goes on");
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default();
            assert_eq!(message, "item 5", "{jobs} jobs");
        }
        let run = std::panic::catch_unwind(|| {
            ordered_map(
                0..10u64,
                2,
                || -> anyhow::Result<()> { panic!("init") },
                |_, i| i,
                |_| Ok(true),
            )
        });
        assert!(run.is_err());
    }

    fn chunks_of(text: &str, size: usize) -> Vec<Work> {
        Chunks::new("t", text.as_bytes(), &ReadOptions::default(), size)
            .collect::<anyhow::Result<Vec<_>>>()
            .unwrap()
    }

    #[test]
    fn jsonl_conversations_stream_in_chunks_of_whole_lines() {
        let line = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
        let text = format!("{line}\n{line}\n{line}\n\n");
        let items = chunks_of(&text, 10);
        // The first chunk takes two lines (to tell JSONL from a document).
        assert_eq!(items.len(), 2);
        assert!(matches!(items[0], Work::Parsed(_)));
        let mut out = Vec::new();
        let mut counts = Vec::new();
        for item in items {
            let doc = item.parse("t", &ReadOptions::default()).unwrap();
            counts.push(doc.conversations.len());
            crate::format::write_document(&doc, &mut out).unwrap();
        }
        assert_eq!(counts, [2, 1]);
        assert_eq!(String::from_utf8(out).unwrap(), text, "byte for byte");
    }

    #[test]
    fn documents_and_message_logs_are_held_whole() {
        let doc = "{\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"hi\"}\n  ]\n}\n";
        assert!(matches!(chunks_of(doc, 8)[..], [Work::Whole(_)]));
        let log = "{\"role\": \"user\", \"content\": \"a\"}\n{\"role\": \"assistant\", \"content\": \"b\"}\n";
        assert!(matches!(chunks_of(log, 8)[..], [Work::Whole(_)]));
    }

    #[test]
    fn chunk_errors_name_the_file_line() {
        let line = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
        let text = format!("{line}\n{line}\n{{broken\n{line}\n");
        let errors: Vec<String> = chunks_of(&text, 10)
            .into_iter()
            .filter_map(|w| w.parse("f.jsonl", &ReadOptions::default()).err())
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("f.jsonl:3:"), "{}", errors[0]);
        // A blank line in the middle is still an error, wherever chunks fall.
        let text = format!("{line}\n\n{line}\n");
        let errors: Vec<String> = chunks_of(&text, 10)
            .into_iter()
            .filter_map(|w| w.parse("f.jsonl", &ReadOptions::default()).err())
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.len() == 1 && errors[0].starts_with("f.jsonl:2:"),
            "{errors:?}"
        );
    }
}
