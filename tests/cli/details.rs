//! The details a user hits in the first hour: -q everywhere, flags that
//! cannot apply, runs that did nothing saying so, what a failed summary
//! becomes, backups that are never overwritten, -o into a new folder, and
//! wording.

use std::fs;
use std::net::TcpListener;

use predicates::prelude::*;
use serde_json::Value;

use crate::util::{ctxclean, fixture, temp_dir};

const SESSION: &str = "written/analyst_session.json";
const MEMORY: &str = "written/agent_memory.jsonl";

/// Every command, with what it needs to run on `SESSION`.
fn every_command() -> Vec<Vec<&'static str>> {
    vec![
        vec!["stats"],
        vec!["validate"],
        vec!["filter", "--previous-cycles"],
        vec!["compact-tools"],
        vec!["trim", "--max-tokens", "500"],
        vec!["summarize", "--threshold", "100"],
        vec!["convert"],
        vec!["convert", "--to", "anthropic"],
        vec![
            "filter",
            "--previous-cycles",
            "then",
            "trim",
            "--max-tokens",
            "500",
        ],
    ]
}

#[test]
fn quiet_works_on_every_command() {
    for args in every_command() {
        let out = ctxclean()
            .args(&args)
            .arg("-q")
            .arg(fixture(SESSION))
            .assert()
            .success();
        // Notes, warnings and losses are still told; the summary line is not.
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        for line in stderr.lines() {
            assert!(
                line.contains(": note: ")
                    || line.contains(": warning: ")
                    || line.contains(": lost: "),
                "{args:?}: {line}"
            );
        }
    }
    for sub in [
        "stats",
        "validate",
        "filter",
        "compact-tools",
        "trim",
        "summarize",
        "convert",
        "apply",
    ] {
        ctxclean()
            .args([sub, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("-q, --quiet"));
    }
}

/// What a format could not express is said with `-q` too (it went with
/// the summary line): a loss is never silent.
#[test]
fn quiet_still_says_what_was_lost() {
    let out = ctxclean()
        .args(["convert", "-q", "--to", "gemini"])
        .arg(fixture("written/analyst_session.json"))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert_eq!(
        stderr,
        "ctxclean convert: lost: 1 × model gpt-4o (a gemini request names its model in the URL)\n"
    );
    // A LibreChat export trimmed from its end: the file now picks another
    // branch, said though quiet.
    let out = ctxclean()
        .args(["trim", "-q", "--max-tokens", "300", "--strategy", "first"])
        .arg(fixture("librechat/tree-in-messages.json"))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    // The other branches, as read, are said first, as every note is.
    let note = format!(
        "ctxclean trim: note: {}: conversation 0: 5 messages are off the branch the conversation follows (edits and regenerations): kept in the file as they are and not read\n",
        fixture("librechat/tree-in-messages.json").display()
    );
    let lost = stderr
        .strip_prefix(&note)
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        lost.starts_with("ctxclean trim: lost: 1 × the branch kept as the conversation (a LibreChat export is the branch of its newest message, and the last message kept (9501f99d-"),
        "{stderr}"
    );
    // A Claude Code session rewound once: the file's last message line
    // picks the branch. Trimmed to its first turn, the abandoned branch's
    // last line is the last: read again, the file is that branch.
    let dir = crate::util::temp_dir("rewound");
    let path = dir.join("rewound.jsonl");
    let line = |uuid: &str, parent: Option<&str>, user: bool, text: &str| {
        let message = if user {
            serde_json::json!({"role": "user", "content": text})
        } else {
            serde_json::json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]})
        };
        let kind = if user { "user" } else { "assistant" };
        serde_json::json!({"parentUuid": parent, "isSidechain": false, "type": kind, "message": message, "uuid": uuid, "sessionId": "s", "cwd": "/w", "version": "1.0"}).to_string() + "\n"
    };
    let text = [
        line("u1", None, true, "first question"),
        line("a1", Some("u1"), false, "first answer"),
        line("u2", Some("a1"), true, &"abandoned question ".repeat(20)),
        line("a2", Some("u2"), false, &"abandoned answer ".repeat(20)),
        line("u3", Some("a1"), true, "rewound question"),
        line("a3", Some("u3"), false, &"the long answer ".repeat(60)),
    ]
    .concat();
    std::fs::write(&path, text).unwrap();
    let out = ctxclean()
        .args(["trim", "-q", "--max-tokens", "15", "--strategy", "first"])
        .arg(&path)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    // The abandoned branch is said though quiet, as every note is.
    let note = format!(
        "ctxclean trim: note: {}: conversation 0: 2 message lines are off the conversation's chain (a branch a rewind left, or another session's lines in the same file): kept in the file as they are and not read\n",
        path.display()
    );
    let lost = stderr
        .strip_prefix(&note)
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        lost.starts_with("ctxclean trim: lost: 1 × the branch kept as the conversation (the file picks its branch by its last or newest message"),
        "{stderr}"
    );
    // The end of the branch kept: the same branch, nothing lost.
    let out = ctxclean()
        .args(["trim", "-q", "--max-tokens", "60", "--strategy", "first"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stderr), note);
}

#[test]
fn flags_that_cannot_apply_are_usage_errors() {
    for flag in ["--per-message", "--tools"] {
        ctxclean()
            .args(["stats", "--by", "file", flag])
            .arg(fixture(SESSION))
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(format!(
                "{flag} lists each conversation"
            )));
        // At the end of a chain too, before anything is written.
        ctxclean()
            .args([
                "trim",
                "--max-tokens",
                "500",
                "then",
                "stats",
                "--by",
                "file",
                flag,
            ])
            .arg(fixture(SESSION))
            .assert()
            .code(2)
            .stdout("");
    }
    ctxclean()
        .arg("filter")
        .arg(fixture(SESSION))
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "filter needs a rule: --previous-cycles",
        ));
    ctxclean()
        .args(["filter", "then", "trim", "--max-tokens", "500"])
        .arg(fixture(SESSION))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("filter needs a rule"));
    // The URL is checked before any input is read: the missing file is not
    // what is reported.
    for (url, why) in [
        ("notaurl", "not an http:// or https:// URL"),
        ("http://", "it has no host"),
        ("http://localhost:80000", "the port `80000`"),
    ] {
        ctxclean()
            .args([
                "summarize",
                "--engine",
                "ollama",
                "--url",
                url,
                "no/such/file.json",
            ])
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with(format!(
                "ctxclean: --url {url}: {why}"
            )));
    }
}

#[test]
fn a_supersede_rule_that_never_matches_is_told() {
    let out = ctxclean()
        .args([
            "filter",
            "--supersede",
            "no_such_tool=path",
            "--previous-cycles",
        ])
        .arg(fixture(SESSION))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains(
            "ctxclean filter: note: --supersede no_such_tool=path: no conversation calls no_such_tool; nothing superseded"
        ),
        "{stderr}"
    );
    // The tool is called, never with that argument.
    let out = ctxclean()
        .args(["filter", "--supersede", "run_sql=no_such_arg"])
        .arg(fixture(SESSION))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("--supersede run_sql=no_such_arg: none of the 9 calls to run_sql has an argument `no_such_arg`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ctxclean filter: no changes: no message matched the rules"),
        "{stderr}"
    );
}

#[test]
fn results_over_the_limit_kept_whole_are_said_to_be_so() {
    // Every result of this session is over one token, and each is shorter
    // than what would describe it: not "no result was over the limit".
    let session = fixture("claude-code/viewer-session.jsonl");
    let out = ctxclean()
        .args("compact-tools --keep-last 0 --max-result-tokens 1".split(' '))
        .arg(&session)
        .assert()
        .success();
    let o = out.get_output();
    assert!(o.stdout == fs::read(&session).unwrap());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "ctxclean compact-tools: no changes: 12 tool results over --max-result-tokens kept \
         whole: a description would not be smaller (1 conversation)\n"
    );
}

#[test]
fn a_run_that_changed_nothing_says_so_and_why() {
    let dir = temp_dir("no-changes");
    let report = dir.join("report.json");
    for (args, why) in [
        (
            vec!["trim", "--max-tokens", "1000000"],
            "ctxclean trim: no changes: every conversation fits the limits (1 conversation, ",
        ),
        (
            vec!["compact-tools", "--max-result-tokens", "100000"],
            "ctxclean compact-tools: no changes: no tool result was over --max-result-tokens",
        ),
        (
            vec!["summarize"],
            "ctxclean summarize: no changes: no conversation is over --threshold (1 conversation, ",
        ),
        (
            vec!["filter", "--exclude-names", "nobody"],
            "ctxclean filter: no changes: no message matched the rules",
        ),
        (
            vec![
                "filter",
                "--exclude-names",
                "nobody",
                "then",
                "trim",
                "--max-tokens",
                "1000000",
            ],
            "ctxclean filter→trim: no changes: no step changed anything",
        ),
    ] {
        let out = ctxclean()
            .args(&args)
            .arg("--report")
            .arg(&report)
            .arg(fixture(SESSION))
            .assert()
            .success();
        let o = out.get_output();
        assert!(o.stdout == fs::read(fixture(SESSION)).unwrap(), "{args:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.starts_with(why), "{args:?}: {stderr}");
        let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
        let note = r["notes"][0].as_str().unwrap_or_default();
        assert!(note.starts_with("no changes: "), "{args:?}: {r}");
    }
    // Something changed: no such line, no such note.
    let out = ctxclean()
        .args(["trim", "--max-tokens", "300", "--report"])
        .arg(&report)
        .arg(fixture(SESSION))
        .assert()
        .success();
    assert!(!String::from_utf8_lossy(&out.get_output().stderr).contains("no changes"));
    let r: Value = serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
    assert!(r.get("notes").is_none(), "{r}");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn validate_counts_on_stderr_and_prints_problems_only() {
    ctxclean()
        .arg("validate")
        .arg(fixture(SESSION))
        .arg(fixture(MEMORY))
        .assert()
        .success()
        .stdout("")
        .stderr("ctxclean validate: 2 conversations valid\n");
    ctxclean()
        .args(["validate", "-q"])
        .arg(fixture(SESSION))
        .assert()
        .success()
        .stdout("")
        .stderr("");
    let bad = r#"{"messages":[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"x","content":"r"}]}"#;
    ctxclean()
        .args(["validate", "-q"])
        .write_stdin(bad)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("answers no earlier tool call"))
        .stderr("");
}

/// A port nothing listens on: connecting is refused.
fn refused_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

fn summarize_down(url: &str) -> Vec<String> {
    [
        "summarize",
        "--threshold",
        "100",
        "--engine",
        "ollama",
        "--timeout",
        "5",
        "--url",
        url,
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn a_failed_summary_truncates_keeps_or_fails_as_asked() {
    let url = refused_url();
    let input = fs::read(fixture(SESSION)).unwrap();
    // Default: truncated, and said so.
    let out = ctxclean()
        .args(summarize_down(&url))
        .arg(fixture(SESSION))
        .assert()
        .success();
    let o = out.get_output();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("truncated (summarizer unreachable: connection refused"),
        "{stderr}"
    );
    assert!(!stderr.contains("into 1 summary"), "{stderr}");
    assert!(o.stdout.len() < input.len());
    // keep: the conversation as it was, byte for byte.
    let out = ctxclean()
        .args(summarize_down(&url))
        .args(["--on-failure", "keep"])
        .arg(fixture(SESSION))
        .assert()
        .success();
    let o = out.get_output();
    assert!(o.stdout == input, "kept byte for byte");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr
            .contains("1 conversation kept as it was (summarizer unreachable: connection refused"),
        "{stderr}"
    );
    // fail: exit 1, nothing written.
    let dir = temp_dir("on-failure");
    let out_path = dir.join("out.json");
    ctxclean()
        .args(summarize_down(&url))
        .args(["--on-failure", "fail", "-o"])
        .arg(&out_path)
        .arg(fixture(SESSION))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "analyst_session.json: summarizer unreachable: connection refused",
        ));
    assert!(!out_path.exists());
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        0,
        "no temporary file left"
    );
    // --in-place without --backup: the default becomes keep.
    let file = dir.join("session.json");
    fs::write(&file, &input).unwrap();
    ctxclean()
        .args(summarize_down(&url))
        .arg("--in-place")
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains("kept as it was"));
    assert!(fs::read(&file).unwrap() == input, "left as it was");
    // With a backup the previous content is safe: truncation as usual.
    ctxclean()
        .args(summarize_down(&url))
        .args(["--in-place", "--backup", ".bak"])
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "truncated (summarizer unreachable",
        ));
    assert!(fs::read(&file).unwrap().len() < input.len());
    assert!(fs::read(dir.join("session.json.bak")).unwrap() == input);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_backup_is_never_overwritten() {
    let dir = temp_dir("backups");
    let file = dir.join("session.json");
    let original = fs::read(fixture(SESSION)).unwrap();
    fs::write(&file, &original).unwrap();
    let mut versions = vec![original];
    for budget in ["1500", "1000", "500"] {
        ctxclean()
            .args([
                "trim",
                "--max-tokens",
                budget,
                "--in-place",
                "--backup",
                ".bak",
            ])
            .arg(&file)
            .assert()
            .success();
        versions.push(fs::read(&file).unwrap());
    }
    let read = |name: &str| fs::read(dir.join(name)).unwrap();
    assert!(
        read("session.json.bak") == versions[0],
        "the first backup kept"
    );
    assert!(read("session.json.bak.1") == versions[1]);
    assert!(read("session.json.bak.2") == versions[2]);
    assert!(read("session.json") == versions[3]);
    assert!(!dir.join("session.json.bak.3").exists());
    // Whatever holds the name is neither followed nor replaced.
    let other = dir.join("other.txt");
    fs::write(&other, "mine").unwrap();
    let file2 = dir.join("two.json");
    fs::write(&file2, &versions[0]).unwrap();
    std::os::unix::fs::symlink(&other, dir.join("two.json.bak")).unwrap();
    ctxclean()
        .args([
            "trim",
            "--max-tokens",
            "500",
            "--in-place",
            "--backup",
            ".bak",
        ])
        .arg(&file2)
        .assert()
        .success();
    assert_eq!(fs::read_to_string(&other).unwrap(), "mine");
    assert!(read("two.json.bak.1") == versions[0]);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn output_into_a_missing_folder_creates_it() {
    let dir = temp_dir("missing-folder");
    let out = dir.join("new/deeper/out.json");
    ctxclean()
        .args(["trim", "--max-tokens", "500", "-o"])
        .arg(&out)
        .arg(fixture(SESSION))
        .assert()
        .success();
    assert!(serde_json::from_slice::<Value>(&fs::read(&out).unwrap()).is_ok());
    // A folder that cannot be made: the error names it, never a temporary file.
    fs::write(dir.join("afile"), "x").unwrap();
    let bad = dir.join("afile/sub/out.json");
    let assert = ctxclean()
        .args(["trim", "--max-tokens", "500", "-o"])
        .arg(&bad)
        .arg(fixture(SESSION))
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains(&format!(
            "cannot write {}: creating the folder {} failed",
            bad.display(),
            dir.join("afile/sub").display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(".ctxclean-"), "{stderr}");
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn one_of_a_thing_reads_singular() {
    let out = ctxclean()
        .args(["filter", "--agent", "pm"])
        .arg(fixture(MEMORY))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("ctxclean filter: agent: 1 message addressed to someone else, 1 message not addressed to this agent, 1 turn-limit notice;"),
        "{stderr}"
    );
    let dir = temp_dir("singular");
    let input = dir.join("one.json");
    let rows = serde_json::json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "q", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": format!("[{{\"n\": 1, \"text\": \"{}\"}}]", "x".repeat(400))},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "b", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "y".repeat(300)},
        {"role": "assistant", "content": "done"}
    ]});
    fs::write(&input, rows.to_string()).unwrap();
    let out = ctxclean()
        .args([
            "compact-tools",
            "--max-result-tokens",
            "0",
            "--keep-last",
            "0",
        ])
        .arg(&input)
        .assert()
        .success()
        .stderr(predicate::str::starts_with(
            "ctxclean compact-tools: 2 results compacted",
        ));
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let text = |i: usize| v["messages"][i]["content"].as_str().unwrap().to_string();
    assert!(
        text(2).starts_with("[Tool: 1 row | {\"n\": 1, "),
        "{}",
        text(2)
    );
    assert!(
        text(4).starts_with("[Tool: 1 line, 300 chars | yyy"),
        "{}",
        text(4)
    );
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_stderr_summary_names_its_command() {
    for args in every_command() {
        let out = ctxclean()
            .args(&args)
            .arg(fixture(SESSION))
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        for line in stderr.lines() {
            let cmd = if args.contains(&"then") {
                "filter→trim"
            } else {
                args[0]
            };
            assert!(
                line.starts_with(&format!("ctxclean {cmd}: ")) || line.starts_with("  "),
                "{args:?}: {line}"
            );
        }
    }
}

/// A terminal on standard input: a pseudo-terminal whose other end types a
/// transcript and Ctrl-D.
#[test]
fn a_terminal_on_standard_input_is_told() {
    use std::io::Write;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::{Command, Stdio};
    let (mut master, slave) = unsafe {
        let (mut m, mut s) = (0, 0);
        assert_eq!(
            libc::openpty(
                &mut m,
                &mut s,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null()
            ),
            0
        );
        (fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    };
    let child = Command::new(env!("CARGO_BIN_EXE_ctxclean"))
        .args(["stats", "--json"])
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    master
        .write_all(b"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n\x04")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ctxclean stats: reading standard input… (Ctrl-D to end)"),
        "{stderr}"
    );
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["total"]["conversations"], 1, "{v}");
    // A pipe is not a terminal: nothing said.
    ctxclean()
        .arg("stats")
        .write_stdin("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
        .assert()
        .success()
        .stderr("");
}

#[test]
fn the_summary_line_counts_what_changed_and_v_counts_everything() {
    let line = |args: &[&str]| {
        let out = ctxclean()
            .args(args)
            .arg(fixture(SESSION))
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stderr).to_string()
    };
    assert_eq!(
        line(&["trim", "--max-tokens", "500"]),
        "ctxclean trim: 1 conversation, −1,189 tokens, 27 messages removed\n"
    );
    assert_eq!(
        line(&["trim", "--max-tokens", "500", "-v"]),
        "ctxclean trim: 1 conversation, 1,643 → 454 tokens, 27 messages removed\n"
    );
    assert_eq!(
        line(&[
            "filter",
            "--previous-cycles",
            "then",
            "trim",
            "--max-tokens",
            "500",
            "-v"
        ]),
        "ctxclean filter→trim: 1 file, 1,643 → 464 tokens (filter −1,026, trim −153)\n"
    );
    assert_eq!(
        line(&["convert"]),
        "ctxclean convert: 1 conversation written\n"
    );
    ctxclean()
        .args(["trim", "--max-tokens", "500", "-q", "-v"])
        .arg(fixture(SESSION))
        .assert()
        .code(2);
}

/// A chat or session that keeps other branches (edits, regenerations, a
/// session tree's forks) beside the one it follows says how many messages
/// they hold, on standard error and in the report's notes: they stay in
/// the file and are never read. One without branches says nothing.
#[test]
fn messages_on_other_branches_are_said_not_silent() {
    use serde_json::json;
    let msg = |id: &str, role: &str, text: &str, t: f64| json!({"id": id, "author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, "create_time": t});
    // The answer regenerated once: n2 is the first try, n3 the one kept.
    let chatgpt = json!([{"title": "t", "create_time": 1.0, "current_node": "n3", "mapping": {
        "n1": {"id": "n1", "message": msg("n1", "user", "What is a monad?", 1.0), "parent": null, "children": ["n2", "n3"]},
        "n2": {"id": "n2", "message": msg("n2", "assistant", "A burrito.", 2.0), "parent": "n1", "children": []},
        "n3": {"id": "n3", "message": msg("n3", "assistant", "A pattern.", 3.0), "parent": "n1", "children": []}}}]);
    // The question edited once, each version answered.
    let owui = json!([{"id": "c", "chat": {"history": {"currentId": "n4", "messages": {
        "n1": {"id": "n1", "parentId": null, "childrenIds": ["n2"], "role": "user", "content": "first", "timestamp": 1},
        "n2": {"id": "n2", "parentId": "n1", "childrenIds": [], "role": "assistant", "content": "second", "timestamp": 2},
        "n3": {"id": "n3", "parentId": null, "childrenIds": ["n4"], "role": "user", "content": "first, edited", "timestamp": 3},
        "n4": {"id": "n4", "parentId": "n3", "childrenIds": [], "role": "assistant", "content": "an answer", "timestamp": 4}}}}}]);
    let dir = temp_dir("branches");
    let chatgpt_file = dir.join("chatgpt.json");
    let owui_file = dir.join("open-webui.json");
    fs::write(&chatgpt_file, chatgpt.to_string()).unwrap();
    fs::write(&owui_file, owui.to_string()).unwrap();
    // The same chat with its mapping out of the branch's order: read whole,
    // not node by node.
    let reordered = chatgpt.to_string().replacen("\"n1\":", "\"n0\":", 1);
    let mut v: Value = serde_json::from_str(&reordered).unwrap();
    let n0 = v[0]["mapping"]
        .as_object_mut()
        .unwrap()
        .remove("n0")
        .unwrap();
    v[0]["mapping"]["n1"] = n0;
    let chatgpt_whole = dir.join("chatgpt-whole.json");
    fs::write(&chatgpt_whole, v.to_string()).unwrap();
    // A Droid session and a Qwen Code log each with an answer tried once
    // before the one the chain goes on from.
    let droid = fs::read_to_string(fixture("droid/session_store_small.jsonl")).unwrap();
    let mut lines: Vec<String> = droid.lines().map(str::to_string).collect();
    lines.insert(2, json!({"type": "message", "id": "m2x", "parentId": "m1", "timestamp": "2025-12-26T23:50:00.500Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "a first try"}]}}).to_string());
    let droid_file = dir.join("droid.jsonl");
    fs::write(&droid_file, lines.join("\n") + "\n").unwrap();
    let qwen = fs::read_to_string(fixture("qwen-code/session.jsonl")).unwrap();
    let mut lines: Vec<String> = qwen.lines().map(str::to_string).collect();
    let mut tried: Value = serde_json::from_str(&lines[1]).unwrap();
    tried["uuid"] = json!("a1f0c3d2-0099-4e8b-9c7a-1b2c3d4e5f60");
    tried["message"]["parts"] = json!([{"text": "a first try"}]);
    lines.insert(1, tried.to_string());
    let qwen_file = dir.join("qwen.jsonl");
    fs::write(&qwen_file, lines.join("\n") + "\n").unwrap();
    let said = |n: usize, what: &str, why: &str| {
        let are = if n == 1 { "is" } else { "are" };
        let s = if n == 1 { "" } else { "s" };
        format!("{n} {what}{s} {are} off the branch the conversation follows ({why}): kept in the file as")
    };
    let chat = "edits and regenerations";
    let tree = "another branch of the session's tree";
    for (path, note) in [
        (chatgpt_file, said(1, "message", chat)),
        (chatgpt_whole, said(1, "message", chat)),
        (
            droid_file,
            said(1, "message line", "another branch of the session's chain"),
        ),
        (qwen_file, said(1, "message line", tree)),
        (owui_file, said(2, "message", chat)),
        (fixture("librechat/branches.json"), said(3, "message", chat)),
        (
            fixture("librechat/tree-in-messages.json"),
            said(5, "message", chat),
        ),
        (fixture("branched/sourdough.json"), said(2, "message", chat)),
        (
            fixture("written/pi_tree.jsonl"),
            said(1, "message entry", tree),
        ),
    ] {
        let out = ctxclean().arg("stats").arg(&path).output().unwrap();
        assert!(out.status.success(), "{}", path.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&note), "{}: {stderr}", path.display());
        let out = ctxclean()
            .args(["stats", "--json", "-q"])
            .arg(&path)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let notes = v["conversations"][0]["notes"].to_string();
        assert!(notes.contains(&note), "{}: {notes}", path.display());
    }
    for plain in [
        "exports/chatgpt.json",
        "librechat/export-tree.json",
        "pi/before-compaction-head.jsonl",
    ] {
        ctxclean()
            .arg("stats")
            .arg(fixture(plain))
            .assert()
            .success()
            .stderr(predicate::str::contains("off the branch").not());
    }
}
