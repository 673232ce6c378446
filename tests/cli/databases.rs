//! Agents' SQLite databases (Crush's `.crush/crush.db`, Grok CLI's
//! `~/.grok/grok.db`, Cursor's `globalStorage/state.vscdb`, …): read
//! read-only, one conversation per session, never written.

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

/// An agent's database at `data/name` built from the SQL fixture `sql`, as
/// the agent keeps it while it runs: in WAL mode, the rows still in the
/// log, and the database open (the connection handed back).
fn live_database(data: &Path, name: &str, sql: &str) -> (PathBuf, rusqlite::Connection) {
    std::fs::create_dir_all(data).unwrap();
    let db = data.join(name);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;")
        .unwrap();
    conn.execute_batch(&std::fs::read_to_string(fixture(sql)).unwrap())
        .unwrap();
    assert!(
        std::fs::metadata(data.join(format!("{name}-wal")))
            .unwrap()
            .len()
            > 0
    );
    (db, conn)
}

/// Checks that each session of the database `db`, written out by
/// `convert --out-dir`, is its fixture byte for byte (`sessions`: each
/// session's id and fixture).
fn written_as(db: &Path, out: &Path, sessions: &[(&str, &str)]) {
    ctxclean()
        .args(["convert", "-q", "--out-dir"])
        .arg(out)
        .arg(db)
        .assert()
        .success();
    for (id, name) in sessions {
        assert_eq!(
            std::fs::read(out.join(format!("{id}.json"))).unwrap(),
            std::fs::read(fixture(name)).unwrap(),
            "{name}"
        );
    }
}

/// Every file of a directory with its bytes and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            // The WAL index is SQLite's shared memory: every reader, a
            // read-only one too, marks its reads there. It must be there
            // as before, its content is SQLite's.
            if p.to_string_lossy().ends_with("-shm") {
                return (p, Vec::new(), std::time::UNIX_EPOCH);
            }
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
    let (db, conn) = live_database(&data, "crush.db", "crush/crush.sql");
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
    written_as(
        &db,
        &dir.join("out"),
        &[
            (SESSION, "crush/session.json"),
            (SUMMARIZED, "crush/summarized.json"),
        ],
    );
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

/// A database's sessions are each written as a JSON document: several go
/// to one output never (concatenated, they did not read back, and the
/// command exited 0), one does, and `--out-dir` writes a file each.
#[test]
fn a_databases_sessions_share_one_output_only_when_there_is_one() {
    let dir = crate::util::temp_dir("crush-one-output");
    let db = dir.join("crush.db");
    drop(database(&db));
    let refused = "crush.db (Crush session 5c1f0e2a-7d3b-4f6e-9a21-3b8c4d5e6f70), read from";
    let out = ctxclean()
        .args(["convert", "--to", "openai"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(refused))
        .stderr(predicates::str::contains(
            "is written as a JSON document: several inputs (here 3) can share one output only \
             when they are JSONL; use --out-dir DIR (a file each)",
        ));
    assert!(out.get_output().stdout.is_empty());
    let file = dir.join("all.json");
    ctxclean()
        .args(["filter", "--exclude-tool-calls", "-o"])
        .arg(&file)
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(refused));
    assert!(!file.exists());
    // A file each: every one reads back.
    let each = dir.join("each");
    ctxclean()
        .args(["convert", "-q", "--to", "openai", "--out-dir"])
        .arg(&each)
        .arg(&db)
        .assert()
        .success();
    let written: Vec<_> = std::fs::read_dir(&each).unwrap().collect();
    assert_eq!(written.len(), 3);
    for f in written {
        stats_json(&f.unwrap().path());
    }
    // One session: standard output takes it, and it reads back.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(&format!(
        "DELETE FROM messages WHERE session_id != '{SESSION}'; \
         DELETE FROM sessions WHERE id != '{SESSION}';"
    ))
    .unwrap();
    drop(conn);
    let out = ctxclean()
        .args(["convert", "-q", "--to", "openai"])
        .arg(&db)
        .assert()
        .success();
    let back = ctxclean()
        .args(["stats", "--json", "-"])
        .write_stdin(out.get_output().stdout.clone())
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&back.get_output().stdout).unwrap();
    assert_eq!(v["conversations"].as_array().unwrap().len(), 1);
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
    // The finish parts Crush never sends stay where they were, and every
    // part is written back as Crush keeps it: its type and its data.
    assert_eq!(v["messages"][1]["parts"][3]["type"], "finish");
    for m in v["messages"].as_array().unwrap() {
        for p in m["parts"].as_array().unwrap() {
            let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["type", "data"], "{p}");
        }
    }
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
            "message a1e0c6f2-0003-4b7a-8c1d-6f2e3a4b5c03: parts is zstd that does not decode",
        ));
    // The other sessions are still read, with --keep-going.
    let out = ctxclean()
        .args(["stats", "--json", "--keep-going"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["conversations"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 input of 3 failed"));
}

#[test]
fn a_sqlite_database_of_no_agent_read_is_refused_naming_its_tables() {
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
            "a SQLite database, but not one ctxclean reads (OpenCode's, Crush's, Grok CLI's, Goose's, Cursor's, Zed's or Amazon Q's, whose sessions and messages it reads): it has the tables orders, users",
        ));
}

const GROK_SESSION: &str = "3f2a9c1e-8b47-4d6a-9e25-7c1b0a4d8e63";
const GROK_COMPACTED: &str = "b81e4f07-2c9d-4a53-8f6e-1d7a2b9c0e45";

#[test]
fn a_grok_cli_database_is_read_one_session_a_conversation() {
    let dir = crate::util::temp_dir("grok-cli");
    let data = dir.join(".grok");
    let (db, conn) = live_database(&data, "grok.db", "grok-cli/grok.sql");
    let before = snapshot(&data);
    // Given the data directory, as Grok CLI keeps it (`~/.grok`).
    let v = stats_json(&data);
    let convs = v["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert!(convs.iter().all(|c| c["format"] == "grok-cli"));
    assert_eq!(convs[0]["tool_calls"], 3);
    assert_eq!(convs[0]["tool_results"], 3);
    assert_eq!(convs[0]["images"], 1);
    assert_eq!(convs[0]["as_logged"]["tokens"]["input_tokens"], 13210);
    assert_eq!(convs[0]["as_logged"]["cost_usd"], 0.003128);
    written_as(
        &db,
        &dir.join("out"),
        &[
            (GROK_SESSION, "grok-cli/session.json"),
            (GROK_COMPACTED, "grok-cli/compacted.json"),
        ],
    );
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("(Grok CLI session"));
    assert_eq!(snapshot(&data), before);
    drop(conn);
}

#[test]
fn a_compacted_grok_cli_session_starts_at_its_summary() {
    let v = stats_json(&fixture("grok-cli/compacted.json"));
    let c = &v["conversations"][0];
    // The summary, as Grok CLI sends it (a system message), and the two
    // messages it kept.
    assert_eq!(c["messages"], 3);
    assert_eq!(c["by_role"]["system"]["messages"], 1);
    assert!(c["notes"].to_string().contains("last compaction"));
    // Removed by an operation, the summary stays as an empty marker, and
    // what preceded it is still not read.
    let out = ctxclean()
        .args(["trim", "-q", "--no-system", "--max-tokens", "30"])
        .arg(fixture("grok-cli/compacted.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let back = ctxclean()
        .args(["stats", "--json", "-"])
        .write_stdin(out.stdout.clone())
        .output()
        .unwrap();
    let back: Value = serde_json::from_slice(&back.stdout).unwrap();
    assert_eq!(back["conversations"][0]["messages"], 2);
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    let marker = written["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r.get("compaction"))
        .unwrap();
    assert_eq!(marker["summary"], "");
    assert_eq!(marker["first_kept_seq"], 5);
}

#[test]
fn grok_cli_results_are_compacted_as_text_outputs_and_converted_with_their_calls() {
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "3",
        ])
        .arg(fixture("grok-cli/session.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &v["messages"][2]["message_json"]["content"][0];
    assert_eq!(result["toolCallId"], "call_71958340");
    assert_eq!(result["output"]["type"], "text");
    assert!(result["output"]["value"]
        .as_str()
        .unwrap()
        .starts_with("[Tool: object {success, output}"));
    // The short results stay as they were, error output included.
    assert_eq!(
        v["messages"][4]["message_json"]["content"][1]["output"]["type"],
        "error-text"
    );
    for to in ["openai", "anthropic", "gemini"] {
        let out = ctxclean()
            .args(["convert", "-q", "--to", to])
            .arg(fixture("grok-cli/session.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{to}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("call_88204519"), "{to}");
        assert!(text.contains("iVBORw0KGgo"), "{to}: the image goes along");
        ctxclean()
            .args(["validate", "--from", to])
            .write_stdin(out.stdout)
            .assert()
            .success();
    }
}

#[test]
fn goose_sessions_db_is_read_as_goose_session_exports() {
    let dir = crate::util::temp_dir("goose-db");
    let data = dir.join("goose").join("sessions");
    let (db, conn) = live_database(&data, "sessions.db", "goose/sessions.sql");
    let before = snapshot(&data);
    // Given Goose's sessions folder: each session, as `goose session
    // export` writes it.
    written_as(
        &data,
        &dir.join("out"),
        &[
            ("20261118_3", "goose/export.json"),
            ("20261119_1", "goose/compacted-export.json"),
        ],
    );
    let v = stats_json(&db);
    let c = &v["conversations"][0];
    assert_eq!(c["format"], "goose");
    assert_eq!(c["tool_results"], 1);
    assert_eq!(c["as_logged"]["tokens"]["input_tokens"], 8840);
    assert_eq!(snapshot(&data), before);
    drop(conn);
    // A `sessions.db` anywhere else is not taken for Goose's: the folder
    // is walked as any other.
    let elsewhere = dir.join("app");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(&db, elsewhere.join("sessions.db")).unwrap();
    std::fs::copy(fixture("goose/export.json"), elsewhere.join("a.json")).unwrap();
    let v = stats_json(&elsewhere);
    assert_eq!(v["conversations"].as_array().unwrap().len(), 1);
}

#[test]
fn goose_messages_hidden_from_the_model_are_kept_and_not_read() {
    let v = stats_json(&fixture("goose/compacted-export.json"));
    let c = &v["conversations"][0];
    // The summary (shown to the agent, not the user) and the turn after it.
    assert_eq!(c["messages"], 3);
    assert!(c["notes"].to_string().contains("hidden from the model"));
    // What is hidden stays as it was, whatever the recipe.
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "3",
        ])
        .arg(fixture("goose/compacted-export.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        out.stdout,
        std::fs::read(fixture("goose/compacted-export.json")).unwrap()
    );
}

/// OpenCode's database filled from an export fixture, as OpenCode keeps it:
/// the session's row, and each message and part with its JSON in `data`
/// without the ids its row holds.
fn opencode_db(path: &Path, export: &str) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&std::fs::read_to_string(fixture("opencode/opencode.sql")).unwrap())
        .unwrap();
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(export)).unwrap()).unwrap();
    let info = &v["info"];
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, summary_additions, summary_deletions, summary_files, time_created, time_updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        rusqlite::params![
            info["id"].as_str(), info["projectID"].as_str(), info["slug"].as_str(),
            info["directory"].as_str(), info["title"].as_str(), info["version"].as_str(),
            info["summary"]["additions"].as_i64(), info["summary"]["deletions"].as_i64(),
            info["summary"]["files"].as_i64(), info["time"]["created"].as_i64(),
            info["time"]["updated"].as_i64(),
        ],
    )
    .unwrap();
    let without = |v: &Value, keys: &[&str]| {
        let mut m = v.as_object().unwrap().clone();
        for k in keys {
            m.remove(*k);
        }
        Value::Object(m).to_string()
    };
    for m in v["messages"].as_array().unwrap() {
        let mi = &m["info"];
        let at = mi["time"]["created"].as_i64();
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![
                mi["id"].as_str(),
                info["id"].as_str(),
                at,
                without(mi, &["id", "sessionID"])
            ],
        )
        .unwrap();
        for p in m["parts"].as_array().unwrap() {
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![
                    p["id"].as_str(),
                    mi["id"].as_str(),
                    info["id"].as_str(),
                    at,
                    without(p, &["id", "sessionID", "messageID"])
                ],
            )
            .unwrap();
        }
    }
    conn
}

#[test]
fn opencode_db_sessions_read_as_their_exports() {
    let dir = crate::util::temp_dir("opencode-db");
    let data = dir.join("opencode");
    std::fs::create_dir_all(data.join("storage")).unwrap();
    let db = data.join("opencode.db");
    let conn = opencode_db(&db, "opencode/compacted.json");
    conn.execute_batch("PRAGMA journal_mode=WAL;").unwrap();
    let before = snapshot(&data);
    // Given OpenCode's data folder (its frozen storage beside the database):
    // the session, as `opencode export` writes it.
    let out = dir.join("out");
    ctxclean()
        .args(["convert", "-q", "--out-dir"])
        .arg(&out)
        .arg(&data)
        .assert()
        .success();
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("ses_4a1c93e07ffeQm2Lr8TnVx0bKd.json")).unwrap(),
    )
    .unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("opencode/compacted.json")).unwrap())
            .unwrap();
    assert_eq!(written, expected);
    let from_db = stats_json(&db);
    let from_export = stats_json(&fixture("opencode/compacted.json"));
    // What OpenCode logged of each model call: its tokens and cost.
    let logged = &from_export["conversations"][0]["as_logged"];
    assert_eq!(logged["tokens"]["output"], 312);
    assert_eq!(logged["tokens"]["cache_write"], 16370);
    for key in [
        "format",
        "messages",
        "tokens",
        "tool_calls",
        "tool_results",
        "notes",
        "as_logged",
    ] {
        assert_eq!(
            from_db["conversations"][0][key], from_export["conversations"][0][key],
            "{key}"
        );
    }
    assert_eq!(snapshot(&data), before);
    drop(conn);
}

/// Each operation on `path` (a session written out of a database) writes
/// `format` that validates; trimmed to `budget` tokens.
fn every_operation_valid(path: &Path, format: &str, budget: &str) {
    for op in [
        &["trim", "--max-tokens", budget][..],
        &["filter", "--previous-cycles"],
        &["filter", "--drop-thinking"],
        &[
            "compact-tools",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ],
        &["summarize", "--threshold", "100", "--keep", "3"],
    ] {
        let out = ctxclean().args(op).arg("-q").arg(path).output().unwrap();
        assert!(out.status.success(), "{op:?}");
        ctxclean()
            .args(["validate", "-q", "--from", format, "-"])
            .write_stdin(out.stdout)
            .assert()
            .success();
    }
}

const CURSOR_CHAT: &str = "6f1d2c3b-4a59-4e87-9b10-2c3d4e5f6a7b";
const CURSOR_LEGACY: &str = "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d";

#[test]
fn cursors_chats_are_read_from_its_database_and_nothing_else_of_it() {
    let dir = crate::util::temp_dir("cursor-ide");
    let data = dir.join("Cursor").join("User").join("globalStorage");
    let (db, conn) = live_database(&data, "state.vscdb", "cursor-ide/state.sql");
    let before = snapshot(&data);
    // Given the folder, as Cursor keeps it: its chats with messages, the
    // legacy one (inline) first; the empty one is none.
    let v = stats_json(&data);
    let convs = v["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert!(convs.iter().all(|c| c["format"] == "cursor-ide"));
    assert_eq!(convs[0]["messages"], 2);
    let chat = &convs[1];
    assert_eq!(chat["tool_calls"], 3);
    assert_eq!(chat["tool_results"], 3);
    assert!(
        chat["notes"]
            .to_string()
            .contains("the chat's headers name 1 bubble that is not in the database"),
        "{chat}"
    );
    written_as(
        &db,
        &dir.join("out"),
        &[
            (CURSOR_CHAT, &format!("cursor-ide/{CURSOR_CHAT}.json")),
            (CURSOR_LEGACY, &format!("cursor-ide/{CURSOR_LEGACY}.json")),
        ],
    );
    // The same database holds the editor's sign-in tokens: never read,
    // never written out.
    for entry in std::fs::read_dir(dir.join("out")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains("NEVER-READ"), "{text}");
    }
    ctxclean()
        .args(["filter", "--previous-cycles", "--in-place"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("(Cursor session"));
    assert_eq!(snapshot(&data), before);
    drop(conn);
}

#[test]
fn a_cursor_chat_written_out_takes_every_operation_in_its_own_shape() {
    let path = fixture(&format!("cursor-ide/{CURSOR_CHAT}.json"));
    every_operation_valid(&path, "cursor-ide", "100");
    // A result compacted stays in `toolFormerData.result`; thinking dropped
    // leaves the bubble's `thinking`.
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = v["bubbles"][2]["toolFormerData"]["result"]
        .as_str()
        .unwrap();
    assert!(
        result.starts_with("[Tool: object {contents, totalLinesInFile}"),
        "{result}"
    );
    assert_eq!(
        v["bubbles"][2]["toolFormerData"]["toolCallId"],
        "toolu_01QzR7"
    );
    let out = ctxclean()
        .args(["filter", "-q", "--drop-thinking"])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["bubbles"][1].get("thinking").is_none());
    assert_eq!(
        v["bubbles"][1]["text"],
        "Let me look at the README and the test output."
    );
}

const ZED_THREAD: &str = "e2a4c6f8-1b3d-4f5a-9c7e-0a2b4c6d8e0f";
const ZED_PLAIN: &str = "7d9b1f3a-5c7e-4a1b-8d3f-5e7a9c1b3d5f";

#[test]
fn zeds_threads_are_read_from_its_database_compressed_or_not() {
    let dir = crate::util::temp_dir("zed");
    let data = dir.join("zed").join("threads");
    let (db, conn) = live_database(&data, "threads.db", "zed/threads.sql");
    let before = snapshot(&data);
    let v = stats_json(&data);
    let convs = v["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert!(convs.iter().all(|c| c["format"] == "zed"));
    // The zstd payload: a mention sent as text, thinking, two calls and
    // their results; the `Resume` marker is no message.
    assert_eq!(convs[0]["messages"], 8);
    assert_eq!(convs[0]["tool_calls"], 2);
    assert_eq!(convs[0]["tool_results"], 2);
    assert_eq!(convs[1]["messages"], 2);
    written_as(
        &db,
        &dir.join("out"),
        &[
            (ZED_THREAD, &format!("zed/{ZED_THREAD}.json")),
            (ZED_PLAIN, &format!("zed/{ZED_PLAIN}.json")),
        ],
    );
    ctxclean()
        .args(["trim", "--max-tokens", "100", "--in-place"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("(Zed session"));
    assert_eq!(snapshot(&data), before);
    drop(conn);
}

#[test]
fn a_zed_thread_written_out_takes_every_operation_in_its_own_shape() {
    let path = fixture(&format!("zed/{ZED_THREAD}.json"));
    every_operation_valid(&path, "zed", "150");
    // A result compacted stays in its `tool_results` entry, as Zed spells
    // text (`{"Text": …}`).
    let out = ctxclean()
        .args([
            "compact-tools",
            "-q",
            "--keep-last",
            "0",
            "--max-result-tokens",
            "5",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &v["messages"][1]["Agent"]["tool_results"]["toolu_01Sk3p"];
    assert!(
        result["content"]["Text"]
            .as_str()
            .unwrap()
            .starts_with("[Tool: "),
        "{result}"
    );
    assert_eq!(result["tool_name"], "terminal");
    // Converted, Zed's thinking is an Anthropic thinking block with its
    // signature, and the mention is text the model reads.
    let out = ctxclean()
        .args(["convert", "-q", "--to", "anthropic"])
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["messages"][1]["content"][0]["type"], "thinking");
    assert_eq!(
        v["messages"][1]["content"][0]["signature"],
        "EpYBCkYIBhgCKkB"
    );
    assert!(v["messages"][0].to_string().contains("self.timer.arm"));
    ctxclean()
        .args(["validate", "-q", "--from", "anthropic", "-"])
        .write_stdin(out.stdout)
        .assert()
        .success();
}

#[test]
fn amazon_qs_conversations_are_read_from_its_database_and_nothing_else_of_it() {
    let dir = crate::util::temp_dir("amazon-q");
    let data = dir.join("amazon-q");
    let (db, conn) = live_database(&data, "data.sqlite3", "amazon-q/data.sql");
    let before = snapshot(&data);
    // Given the folder: one conversation per directory, the one saved
    // before 1.13 (pairs) put together as entries.
    let v = stats_json(&data);
    let convs = v["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert!(convs.iter().all(|c| c["format"] == "amazon-q"));
    assert_eq!(convs[0]["messages"], 4);
    let saved = stats_json(&fixture("amazon-q/saved.json"));
    for key in ["messages", "tokens", "tool_calls", "tool_results"] {
        assert_eq!(convs[1][key], saved["conversations"][0][key], "{key}");
    }
    // Written out, each is one file inside the folder, named by its
    // directory: the later shape as it was stored.
    let out = dir.join("out");
    ctxclean()
        .args(["convert", "-q", "--out-dir"])
        .arg(&out)
        .arg(&db)
        .assert()
        .success();
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["%2Fhome%2Fdev%2Fledger.json", "%2Fhome%2Fdev%2Fold.json"]
    );
    let ledger = std::fs::read_to_string(out.join(&names[0])).unwrap();
    let fixture_text = std::fs::read_to_string(fixture("amazon-q/saved.json")).unwrap();
    assert_eq!(ledger, fixture_text.trim_end());
    let old: Value = serde_json::from_slice(&std::fs::read(out.join(&names[1])).unwrap()).unwrap();
    assert_eq!(
        old["history"][0]["user"]["content"]["Prompt"]["prompt"],
        "What is in this folder?"
    );
    assert_eq!(old["history"][1]["request_metadata"], Value::Null);
    // The sign-in tokens beside them are never read.
    for name in &names {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(!text.contains("NEVER-READ"), "{text}");
    }
    every_operation_valid(&out.join(&names[1]), "amazon-q", "60");
    ctxclean()
        .args(["trim", "--max-tokens", "100", "--in-place"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("(Amazon Q session"));
    assert_eq!(snapshot(&data), before);
    drop(conn);
}
