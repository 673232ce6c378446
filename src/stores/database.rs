//! Agents that keep their sessions in a SQLite database: OpenCode
//! (`~/.local/share/opencode/opencode.db`), Crush (`.crush/crush.db`), Grok
//! CLI (`~/.grok/grok.db`) and Goose
//! (`~/.local/share/goose/sessions/sessions.db`), Cursor's chats (the
//! editor's `globalStorage/state.vscdb`), Zed's agent threads
//! (`~/.local/share/zed/threads/threads.db`) and Amazon Q Developer CLI's
//! conversations (`~/.local/share/amazon-q/data.sqlite3`). A database is
//! read as a snapshot, never written, and neither are its `-wal` and
//! `-shm` files; each session is put together as JSON by its agent's
//! module when its input is opened and read as that agent's format.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use rusqlite::{Connection, OpenFlags};

/// Whose database it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    OpenCode,
    Crush,
    GrokCli,
    Goose,
    Cursor,
    Zed,
    AmazonQ,
}

/// The first bytes of every SQLite database.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The databases' names in an agent's data directory.
const NAMES: [&str; 7] = [
    "opencode.db",
    "crush.db",
    "grok.db",
    "sessions.db",
    "state.vscdb",
    "threads.db",
    "data.sqlite3",
];

/// Whether the file at `path` is a SQLite database.
pub(crate) fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

/// The database of an agent's data directory (OpenCode's
/// `~/.local/share/opencode/`, Crush's `.crush/`, Grok CLI's `~/.grok/`,
/// Goose's `goose/sessions/`), if `dir` is one. Goose's is `sessions.db`,
/// a name too common to take anywhere else than in its own folder.
pub(crate) fn in_dir(dir: &Path) -> Option<PathBuf> {
    let goose = dir.file_name().is_some_and(|n| n == "sessions")
        && dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "goose");
    // Cursor's is `state.vscdb` in its `globalStorage`: VS Code's own
    // folders hold files of that name too, with no chats.
    let cursor = dir.file_name().is_some_and(|n| n == "globalStorage")
        && dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .is_some_and(|n| n == "Cursor");
    // Zed's is `threads.db` in its `threads` folder.
    let zed = dir.file_name().is_some_and(|n| n == "threads")
        && dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "zed" || n == "Zed");
    // Amazon Q's is `data.sqlite3` in its `amazon-q` folder.
    let amazon_q = dir.file_name().is_some_and(|n| n == "amazon-q");
    NAMES
        .iter()
        .filter(|n| **n != "data.sqlite3" || amazon_q)
        .filter(|n| **n != "sessions.db" || goose)
        .filter(|n| **n != "state.vscdb" || cursor)
        .filter(|n| **n != "threads.db" || zed)
        .map(|n| dir.join(n))
        .find(|db| db.is_file() && is_sqlite(db))
}

/// Opens the database read-only, as a snapshot in memory: SQLite itself
/// copies it (the backup API, in one step) under a read lock, so what is
/// read is what was committed at one moment, whatever writer is at work
/// (an open transaction is not seen; a checkpoint does not tear it), and
/// nothing is left on disk. The lock is held only for the copy: the agent
/// writing the database is kept waiting no longer than that.
///
/// A database in rollback-journal mode is read under SQLite's locks, so a
/// writer's open transaction is never seen. One in WAL mode with a log is
/// read through the log (SQLite marks its read in the `-shm`, as every
/// reader does); one in WAL mode without a log holds only what was
/// committed, and is read as immutable, so that no `-wal` or `-shm` is
/// made beside it.
fn open(path: &Path) -> anyhow::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let logless_wal = wal_mode(path) && std::fs::metadata(&wal).map_or(0, |m| m.len()) == 0;
    let uri = if logless_wal {
        format!("file:{}?immutable=1", uri_path(path)?)
    } else {
        format!("file:{}", uri_path(path)?)
    };
    let source = Connection::open_with_flags(uri, flags)?;
    // A writer committing holds its lock a moment: wait for it.
    source.busy_timeout(std::time::Duration::from_secs(2))?;
    let mut copy = Connection::open_in_memory()?;
    {
        use rusqlite::backup::{Backup, StepResult};
        let backup = Backup::new(&source, &mut copy)?;
        // All pages in one step, so that the copy is of one moment; a
        // writer's lock is waited for, a while.
        let mut waits = 0;
        loop {
            match backup.step(-1)? {
                StepResult::Done => break,
                StepResult::More => {}
                _ if waits < 40 => {
                    waits += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                _ => bail!("the database stayed locked by its writer for 2 s: read it again when the agent is idle"),
            }
        }
    }
    Ok(copy)
}

/// Whether the database's header says WAL mode (its read and write
/// versions, bytes 18 and 19, are 2).
fn wal_mode(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head[18] == 2 || head[19] == 2)
}

/// A name with its control characters escaped (`\u{1b}`), so that it
/// prints as text.
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A path as a `file:` URI's path: absolute, `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> anyhow::Result<String> {
    let abs = std::path::absolute(path)?;
    let s = abs.to_str().context("the path is not UTF-8")?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The tables of the database, each with its columns.
fn tables(conn: &Connection) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let mut st =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names: Vec<String> = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for name in names {
        let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let columns = st
            .query_map([&name], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?;
        out.push((name, columns));
    }
    Ok(out)
}

/// An agent's database, opened read-only (a snapshot of it when it has a
/// write-ahead log), shared by the inputs of its sessions: each is put
/// together when it is opened, so a database of many sessions is never
/// held in memory whole.
pub(crate) struct Database {
    conn: std::sync::Mutex<Connection>,
    agent: Agent,
}

impl Database {
    /// Opens the database at `path`: OpenCode's, Crush's, Grok CLI's,
    /// Goose's, Cursor's, Zed's or Amazon Q's, told by their tables; any other is an error naming its
    /// tables.
    pub(crate) fn open(path: &Path) -> anyhow::Result<std::sync::Arc<Database>> {
        let conn = open(path)?;
        let tables = tables(&conn)?;
        let has = |table: &str, column: &str| {
            tables
                .iter()
                .any(|(t, cols)| t == table && cols.iter().any(|c| c == column))
        };
        let agent = if has("sessions", "id") && has("messages", "parts") {
            Agent::Crush
        } else if has("sessions", "id") && has("messages", "message_json") {
            Agent::GrokCli
        } else if has("sessions", "working_dir") && has("messages", "content_json") {
            Agent::Goose
        } else if has("session", "id") && has("message", "data") && has("part", "data") {
            Agent::OpenCode
        } else if has("cursorDiskKV", "key") && has("cursorDiskKV", "value") {
            Agent::Cursor
        } else if has("threads", "data_type") && has("threads", "data") {
            Agent::Zed
        } else if has("conversations", "key") && has("conversations", "value") {
            Agent::AmazonQ
        } else {
            // Shown as written, a control character escaped (a name is
            // the file's, not ours to send to the terminal).
            let names: Vec<String> = tables.iter().map(|(t, _)| printable(t)).collect();
            bail!(
                "a SQLite database, but not one ctxclean reads (OpenCode's, Crush's, Grok CLI's, Goose's, Cursor's, Zed's or Amazon Q's, whose sessions and messages it reads): it has {}",
                if names.is_empty() {
                    "no tables".to_string()
                } else {
                    format!("the tables {}", names.join(", "))
                }
            );
        };
        Ok(std::sync::Arc::new(Database {
            conn: std::sync::Mutex::new(conn),
            agent,
        }))
    }

    /// Whose sessions they are, in words.
    pub(crate) fn agent(&self) -> &'static str {
        match self.agent {
            Agent::OpenCode => "OpenCode",
            Agent::Crush => "Crush",
            Agent::GrokCli => "Grok CLI",
            Agent::Goose => "Goose",
            Agent::Cursor => "Cursor",
            Agent::Zed => "Zed",
            Agent::AmazonQ => "Amazon Q",
        }
    }

    fn conn(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| anyhow::anyhow!("the database's reader failed before"))
    }

    /// Its sessions, in the order they were created: each id, and the size
    /// of what it holds.
    pub(crate) fn sessions(&self) -> anyhow::Result<Vec<(String, u64)>> {
        let conn = self.conn()?;
        match self.agent {
            Agent::OpenCode => super::opencode::database::ids(&conn),
            Agent::Crush => super::crush::database::ids(&conn),
            Agent::GrokCli => super::grok_cli::database::ids(&conn),
            Agent::Goose => super::goose::database::ids(&conn),
            Agent::Cursor => super::cursor::database::ids(&conn),
            Agent::Zed => super::zed::database::ids(&conn),
            Agent::AmazonQ => super::amazon_q::database::ids(&conn),
        }
    }

    /// The session `id`, put together as JSON, in its agent's format.
    pub(crate) fn session(&self, id: &str) -> anyhow::Result<Vec<u8>> {
        let conn = self.conn()?;
        match self.agent {
            Agent::OpenCode => super::opencode::database::session(&conn, id),
            Agent::Crush => super::crush::database::session(&conn, id),
            Agent::GrokCli => super::grok_cli::database::session(&conn, id),
            Agent::Goose => super::goose::database::session(&conn, id),
            Agent::Cursor => super::cursor::database::session(&conn, id),
            Agent::Zed => super::zed::database::session(&conn, id),
            Agent::AmazonQ => super::amazon_q::database::session(&conn, id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_print_as_text() {
        assert_eq!(printable("a\u{1b}[31mred"), "a\\u{1b}[31mred");
    }
}
