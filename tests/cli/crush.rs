//! Crush's SQLite database (`.crush/crush.db`): read read-only, one
//! conversation per session, never written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{ctxclean, fixture};

const SESSION: &str = "5c1f0e2a-7d3b-4f6e-9a21-3b8c4d5e6f70";
const SUMMARIZED: &str = "9e8d7c6b-5a49-4382-b1c0-d9e8f7a6b5c4";

/// A Crush database built from `fixtures/crush/crush.sql` at `path`.
fn database(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    let sql = std::fs::read_to_string(fixture("crush/crush.sql")).unwrap();
    conn.execute_batch(&sql).unwrap();
    conn
}

/// Every file of a directory with its bytes and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let at = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, bytes, at)
        })
        .collect();
    out.sort();
    out
}

fn stats_json(path: &Path) -> Value {
    let out = ctxclean()
        .args(["stats", "--json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The three sessions of `crush.sql`, the first as its fixture reads.
fn check_sessions(v: &Value) {
    let convs = v["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 3, "one conversation per session");
    assert!(convs.iter().all(|c| c["format"] == "crush"));
    let first = stats_json(&fixture("crush/session.json"));
    for key in ["messages", "tokens", "tool_calls", "tool_results", "images"] {
        assert_eq!(convs[0][key], first["conversations"][0][key], "{key}");
    }
}

#[test]
fn a_crush_database_is_read_one_session_a_conversation_and_never_touched() {
    let dir = crate::util::temp_dir("crush");
    let data = dir.join(".crush");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("crush.db");
    // As Crush keeps it while it runs: in WAL mode, the rows still in the
    // log, and the database open.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;")
        .unwrap();
    let sql = std::fs::read_to_string(fixture("crush/crush.sql")).unwrap();
    conn.execute_batch(&sql).unwrap();
    assert!(std::fs::metadata(data.join("crush.db-wal")).unwrap().len() > 0);
    let before = snapshot(&data);
    // Given the database or its data directory.
    for given in [db.as_path(), data.as_path()] {
        let v = stats_json(given);
        check_sessions(&v);
    }
    // Or a directory above it, with a glob that takes it.
    let out = ctxclean()
        .args(["stats", "--json", "--hidden", "--glob", "*.db"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    check_sessions(&serde_json::from_slice(&out.stdout).unwrap());
    // Written out, each session is its fixture, byte for byte.
    let out = dir.join("out");
    ctxclean()
        .args(["convert", "-q", "--out-dir"])
        .arg(&out)
        .arg(&db)
        .assert()
        .success();
    for (id, name) in [(SESSION, "session"), (SUMMARIZED, "summarized")] {
        assert_eq!(
            std::fs::read(out.join(format!("{id}.json"))).unwrap(),
            std::fs::read(fixture(&format!("crush/{name}.json"))).unwrap(),
            "{name}"
        );
    }
    // Never written back: in place, or by -o over it.
    ctxclean()
        .args(["trim", "--max-tokens", "100", "--in-place"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "is read from a database, which ctxclean never writes",
        ));
    ctxclean()
        .args(["trim", "--max-tokens", "100", "-o"])
        .arg(&db)
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("it would overwrite it"));
    // The database, its log and its index: the same bytes, the same
    // times, and no file more.
    assert_eq!(snapshot(&data), before);
    drop(conn);
}

#[test]
fn a_summarized_crush_session_starts_at_its_summary() {
    let v = stats_json(&fixture("crush/summarized.json"));
    let c = &v["conversations"][0];
    // The summary, sent as the user's, and the message after it.
    assert_eq!(c["messages"], 2);
    assert!(c["notes"]
        .to_string()
        .contains("precede the session's summary"));
    assert_eq!(c["as_logged"]["tokens"]["prompt_tokens"], 40210);
    // What precedes the summary stays as it is, whatever the recipe.
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ])
        .arg(fixture("crush/summarized.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        out.stdout,
        std::fs::read(fixture("crush/summarized.json")).unwrap()
    );
}

#[test]
fn crush_results_are_compacted_in_their_parts_and_converted_with_their_calls() {
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ])
        .arg(fixture("crush/session.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tool = &v["messages"][2]["parts"][0]["data"];
    assert_eq!(tool["tool_call_id"], "toolu_01Hq7Vb3Kx9Pz2Lm5Nc8Rt4W");
    assert!(tool["content"]
        .as_str()
        .unwrap()
        .starts_with("[Tool: 11 lines"));
    // The finish parts Crush never sends stay where they were.
    assert_eq!(v["messages"][1]["parts"][3]["type"], "finish");
    let valid = ctxclean()
        .args(["validate", "--from", "crush"])
        .write_stdin(out.stdout)
        .output()
        .unwrap();
    assert!(valid.status.success());
    for to in ["openai", "anthropic"] {
        let out = ctxclean()
            .args(["convert", "--to", to])
            .arg(fixture("crush/session.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{to}");
        // The reasoning Crush keeps, which neither request carries as it is.
        let said = String::from_utf8_lossy(&out.stderr);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = v.to_string();
        assert!(text.contains("toolu_01Rz7Ls2Dp9Fg4Hk6Vc1Xa8N"), "{to}");
        assert!(text.contains("does not exist"), "{to}: the failed result");
        if to == "openai" {
            assert!(said.contains("lost"), "{to}: {said}");
        }
        let back = ctxclean()
            .args(["validate", "--from", to])
            .write_stdin(out.stdout)
            .output()
            .unwrap();
        assert!(back.status.success(), "{to}");
    }
}

#[test]
fn compressed_parts_read_as_their_json() {
    let dir = crate::util::temp_dir("crush-zstd");
    let db = dir.join("crush.db");
    let conn = database(&db);
    // Newer Crush versions store a message's parts as a zstd frame.
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT id, parts FROM messages")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, parts) in rows {
        let frame = ruzstd::encoding::compress_to_vec(
            parts.as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        conn.execute("UPDATE messages SET parts = ?1 WHERE id = ?2", (frame, id))
            .unwrap();
    }
    drop(conn);
    let out = dir.join("out");
    ctxclean()
        .args(["convert", "-q", "--out-dir"])
        .arg(&out)
        .arg(&db)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(out.join(format!("{SESSION}.json"))).unwrap(),
        std::fs::read(fixture("crush/session.json")).unwrap()
    );
    // A frame that does not decode is named with its message.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE messages SET parts = ?1 WHERE id = 'a1e0c6f2-0003-4b7a-8c1d-6f2e3a4b5c03'",
        [vec![0x28u8, 0xb5, 0x2f, 0xfd, 0, 1, 2]],
    )
    .unwrap();
    drop(conn);
    ctxclean()
        .arg("stats")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "message a1e0c6f2-0003-4b7a-8c1d-6f2e3a4b5c03: parts are zstd that does not decode",
        ));
}

#[test]
fn a_sqlite_database_that_is_not_crush_is_refused_naming_its_tables() {
    let dir = crate::util::temp_dir("not-crush");
    let db = dir.join("app.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE users (id); CREATE TABLE orders (id);")
        .unwrap();
    drop(conn);
    ctxclean()
        .arg("stats")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "a SQLite database, but not Crush's: it has the tables orders, users",
        ));
}
