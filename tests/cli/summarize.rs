//! `ctxclean summarize`: the engines against a local server that speaks the
//! Ollama and OpenAI chat APIs on the wire, its failure modes, the cache, and
//! the offline engine on real transcripts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::{ctxclean, fixture, temp_dir};

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The transcript the engine was sent (the user message's content).
    fn input(&self) -> &str {
        self.body["messages"][1]["content"].as_str().unwrap()
    }
}

/// What the server does with one request.
#[derive(Clone)]
pub(crate) enum Reply {
    /// Answer with this status and body.
    Status(u16, String),
    /// Wait this long, then answer 200 with this body.
    Slow(Duration, String),
    /// Write this whole response (status line, headers, body).
    Raw(String),
    /// Answer 401 with a body of `n` characters and then the request's
    /// Authorization header (a server that echoes what it got).
    EchoAuth(usize),
    /// Run this, then wait, then answer 200 with this body.
    Hook(Arc<dyn Fn() + Send + Sync>, Duration, String),
    /// A server of a context window of this many tokens (counted as a
    /// character in three, a tokenizer that counts more than ctxclean's):
    /// a request over it gets llama-cpp-python's 400, word for word; any
    /// other, 200 with this body.
    Window(usize, String),
}

/// A one-thread HTTP/1.1 server: each connection gets the next reply (the
/// last one repeats), and every request is recorded.
pub(crate) struct Server {
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub(crate) fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { continue };
                let reply = replies[n.min(replies.len() - 1)].clone();
                let log = Arc::clone(&log);
                // One thread per connection, so a slow reply does not block
                // the client's retry.
                thread::spawn(move || handle(stream, reply, &log));
            }
        });
        Server { url, seen }
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn handle(stream: TcpStream, reply: Reply, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = header("content-length") {
        body.resize(len.parse().unwrap(), 0);
        reader.read_exact(&mut body).unwrap();
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    log.lock().unwrap().push(Seen {
        method,
        path,
        headers: headers.clone(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let mut stream = stream;
    let (status, body) = match reply {
        Reply::Status(status, body) => (status, body),
        Reply::Slow(wait, body) => {
            thread::sleep(wait);
            (200, body)
        }
        Reply::Raw(raw) => {
            let _ = stream.write_all(raw.as_bytes());
            let _ = stream.flush();
            return;
        }
        Reply::EchoAuth(n) => (
            401,
            json!({"error": format!("{}{}", "x".repeat(n), header("authorization").unwrap_or_default())})
                .to_string(),
        ),
        Reply::Hook(hook, wait, body) => {
            hook();
            thread::sleep(wait);
            (200, body)
        }
        Reply::Window(window, answer) => {
            let sent: usize = log.lock().unwrap().last().map_or(0, |seen| {
                seen.body["messages"]
                    .as_array()
                    .map_or(0, |ms| ms.iter().map(|m| m["content"].as_str().unwrap_or("").len()).sum())
            }) / 3;
            if sent > window {
                (
                    400,
                    json!({"error": {"message": format!("This model's maximum context length is {window} tokens. However, you requested {sent} tokens ({sent} in the messages, None in the completion). Please reduce the length of the messages or completion."), "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}).to_string(),
                )
            } else {
                (200, answer)
            }
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} Status\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

pub(crate) fn ollama_answer(text: &str) -> String {
    json!({
        "model": "qwen3",
        "created_at": "2026-11-22T10:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": true,
        "done_reason": "stop",
    })
    .to_string()
}

fn openai_answer(text: &str) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })
    .to_string()
}

const SESSION: &str = "written/analyst_session.json";

/// Runs `summarize` on the analyst session with the given flags; returns the
/// summary message's text, stderr and the report.
fn summarize(extra: &[&str], input: &Path) -> (String, String, Value, Value) {
    let dir = temp_dir(&format!("summarize-{}", fastrand_name(extra)));
    let report = dir.join("report.json");
    let out = ctxclean()
        .arg("summarize")
        .args(["--threshold", "1000"])
        .args(extra)
        .arg("--report")
        .arg(&report)
        .arg(input)
        .env("CTXCLEAN_TEST_KEY", "sk-test-secret-123")
        .assert()
        .success();
    let o = out.get_output();
    let stdout: Value = serde_json::from_slice(&o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr.clone()).unwrap();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let text = stdout["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    (text, stderr, report, stdout)
}

/// A directory name from the flags, so parallel tests do not share one.
fn fastrand_name(extra: &[&str]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    extra.hash(&mut h);
    thread::current().id().hash(&mut h);
    format!("{:x}", h.finish())
}

/// The older part of the session (summarized) and the recent part (kept).
const OLDER: &[&str] = &[
    "Which clinics had the most visits in March 2024?",
    "Harbor had the most visits in March 2024 (1,412)",
    "[Tool: 10 rows | {\"clinic\": \"Harbor\", \"visits\": 1412}]",
    "[Tool: error | Error: column \"diagnosis\" does not exist]",
    "reports/harbor_2024-03.csv",
];
const RECENT: &[&str] = &[
    "6.1 staff on shift",
    "Draft a two-sentence note",
    "And May?",
];

#[test]
fn ollama_on_the_wire() {
    let server = Server::start(vec![Reply::Status(
        200,
        ollama_answer("<think>plan</think>\nIntent: clinic analytics. Summary: March visits."),
    )]);
    let (text, stderr, report, out) = summarize(
        &[
            "--engine",
            "ollama",
            "--url",
            &server.url,
            "--engine-model",
            "qwen3",
        ],
        &fixture(SESSION),
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/api/chat");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.body["model"], "qwen3");
    assert_eq!(req.body["stream"], false);
    assert_eq!(req.body["messages"][0]["role"], "system");
    let prompt = req.body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("Intent:") && prompt.contains("most recent one wins"));
    assert!(
        prompt.contains("at most 1000 tokens"),
        "{{max_tokens}} replaced"
    );
    assert_eq!(req.body["messages"][1]["role"], "user");
    let input = req.input();
    for s in OLDER {
        assert!(input.contains(s), "{s} not sent:\n{input}");
    }
    for s in RECENT {
        assert!(!input.contains(s), "recent {s} sent:\n{input}");
    }
    assert!(
        !input.contains("Northwind Clinics"),
        "the kept system message is not summarized"
    );
    assert!(text.starts_with(
        "[Previous conversation summary]\nIntent: clinic analytics. Summary: March visits.\n[Tool calls from earlier in conversation]\n- [Tool: 10 rows | {\"clinic\": \"Harbor\", \"visits\": 1412}]\n"
    ), "{text}");
    assert!(text.ends_with("\n[End of summary - recent messages follow]"));
    assert_eq!(out["messages"][0]["role"], "system");
    assert_eq!(out["messages"][1]["role"], "system");
    assert!(
        stderr.starts_with("ctxclean summarize: 1 conversation, 1,6"),
        "{stderr}"
    );
    let c = &report["conversations"][0];
    assert_eq!(c["engine"], "ollama");
    assert_eq!(c["model"], "qwen3");
    assert!(c.get("fallback").is_none());
}

#[test]
fn openai_on_the_wire_with_a_key_that_never_leaks() {
    let server = Server::start(vec![Reply::Status(200, openai_answer("OpenAI summary."))]);
    let url = format!("{}/v1", server.url);
    let (text, stderr, report, _) = summarize(
        &[
            "--engine",
            "openai",
            "--url",
            &url,
            "--api-key-env",
            "CTXCLEAN_TEST_KEY",
            "--placement",
            "user",
        ],
        &fixture(SESSION),
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some("Bearer sk-test-secret-123")
    );
    assert_eq!(req.body["model"], "gpt-4o-mini", "the default model");
    assert!(req.input().contains(OLDER[0]));
    assert!(text.starts_with("[Previous conversation summary]\nOpenAI summary.\n"));
    assert!(!stderr.contains("sk-test") && !report.to_string().contains("sk-test"));
}

#[test]
fn errors_never_show_the_key() {
    let server = Server::start(vec![Reply::Status(
        401,
        r#"{"error": {"message": "Incorrect API key provided: sk-test-secret-123"}}"#.into(),
    )]);
    let url = format!("{}/v1", server.url);
    let (text, stderr, report, _) = summarize(
        &[
            "--engine",
            "openai",
            "--url",
            &url,
            "--api-key-env",
            "CTXCLEAN_TEST_KEY",
        ],
        &fixture(SESSION),
    );
    assert_eq!(server.seen().len(), 1, "4xx is not retried");
    for s in [&text, &stderr, &report.to_string()] {
        assert!(!s.contains("sk-test-secret"), "key leaked: {s}");
    }
    // The reason is the user's (stderr, the report), not the model's.
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    assert!(stderr.contains("[redacted]"), "{stderr}");
    assert!(!text.contains("HTTP 401"), "{text}");
}

/// Runs a failing engine and checks the fallback contract; returns the reason.
fn fallback(server_url: &str, extra: &[&str]) -> String {
    let mut args = vec!["--engine", "ollama", "--url", server_url];
    args.extend_from_slice(extra);
    let (text, stderr, report, out) = summarize(&args, &fixture(SESSION));
    let c = &report["conversations"][0];
    assert_eq!(c["fallback"], true, "{report:#}");
    let reason = c["fallback_reason"].as_str().unwrap().to_string();
    let removed = c["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|ch| ch["action"] == "removed")
        .count();
    assert_eq!(removed, 29);
    assert!(
        text.starts_with(
            "[Earlier conversation truncated: 29 messages removed]\n[Tool calls from earlier in conversation]\n- [Tool: 10 rows"
        ),
        "{text}"
    );
    // The failure is said to the user, not written for the model.
    assert!(!text.contains(&reason), "{text}");
    assert!(text.ends_with("[End of summary - recent messages follow]"));
    assert!(
        stderr.contains("warning:") && stderr.contains(&reason),
        "{stderr}"
    );
    // The recent window starts with a whole unit: the call with its result.
    let msgs = out["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "call_08");
    assert_eq!(msgs[3]["tool_call_id"], "call_08");
    reason
}

#[test]
fn connection_refused_falls_back() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let reason = fallback(&format!("http://127.0.0.1:{port}"), &[]);
    assert!(reason.starts_with("connection refused"), "{reason}");
}

#[test]
fn timeouts_are_retried_then_fall_back() {
    let server = Server::start(vec![Reply::Slow(
        Duration::from_secs(3),
        ollama_answer("late"),
    )]);
    let reason = fallback(&server.url, &["--timeout", "0.3"]);
    assert!(reason.starts_with("timed out after 0.3 s"), "{reason}");
    assert!(reason.ends_with("after 2 retries"), "{reason}");
    assert_eq!(server.seen().len(), 3);
}

#[test]
fn server_errors_are_retried_then_fall_back() {
    let server = Server::start(vec![Reply::Status(
        500,
        r#"{"error":"model crashed"}"#.into(),
    )]);
    let reason = fallback(&server.url, &[]);
    assert!(
        reason.starts_with("HTTP 500 from ") && reason.contains("model crashed"),
        "{reason}"
    );
    assert_eq!(server.seen().len(), 3);
}

#[test]
fn a_retry_that_succeeds_is_not_a_fallback() {
    let server = Server::start(vec![
        Reply::Status(503, String::new()),
        Reply::Status(200, ollama_answer("Second time lucky.")),
    ]);
    let (text, _, report, _) = summarize(
        &["--engine", "ollama", "--url", &server.url],
        &fixture(SESSION),
    );
    assert_eq!(server.seen().len(), 2);
    assert!(text.contains("Second time lucky."));
    assert!(report["conversations"][0].get("fallback").is_none());
}

#[test]
fn empty_and_malformed_answers_fall_back() {
    let cases = [
        (
            Reply::Status(200, String::new()),
            "malformed answer: not JSON",
        ),
        (
            Reply::Status(200, "{\"message\": ".into()),
            "malformed answer: not JSON",
        ),
        (
            Reply::Status(200, "{\"done\": true}".into()),
            "malformed answer: no message.content",
        ),
        (Reply::Status(200, ollama_answer("  \n")), "empty answer"),
    ];
    for (reply, want) in cases {
        let server = Server::start(vec![reply]);
        let reason = fallback(&server.url, &[]);
        assert!(reason.starts_with(want), "{reason} (want {want})");
        assert_eq!(server.seen().len(), 1, "{want} is not retried");
    }
}

#[test]
fn cache_rerun_makes_no_request_and_growth_extends_the_summary() {
    let dir = temp_dir("summarize-cache");
    let cache = dir.join("cache");
    let server = Server::start(vec![
        Reply::Status(200, ollama_answer("FIRST SUMMARY")),
        Reply::Status(200, ollama_answer("ROLLED SUMMARY")),
    ]);
    let args = |c: &Path| {
        vec![
            "--engine".to_string(),
            "ollama".into(),
            "--url".into(),
            server.url.clone(),
            "--cache".into(),
            c.display().to_string(),
        ]
    };
    let a = args(&cache);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (first, _, r1, out1) = summarize(&a, &fixture(SESSION));
    assert_eq!(server.seen().len(), 1);
    assert_eq!(r1["conversations"][0]["cache"], "miss");
    assert!(first.contains("FIRST SUMMARY"));

    let (again, stderr, r2, out2) = summarize(&a, &fixture(SESSION));
    assert_eq!(server.seen().len(), 1, "a rerun makes no request");
    assert_eq!(r2["conversations"][0]["cache"], "hit");
    assert_eq!(again, first);
    assert_eq!(out1, out2);
    assert!(stderr.contains("1 from the cache"), "{stderr}");

    // The transcript grows by two turns: the older part now has four more
    // messages; only they are sent, after the cached summary.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(SESSION)).unwrap()).unwrap();
    let msgs = doc["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "tool", "tool_call_id": "call_10", "content": "[{\"clinic\": \"Harbor\", \"avg\": 20.1}]"}));
    msgs.push(json!({"role": "assistant", "content": "In May Harbor averaged 20.1 minutes."}));
    msgs.push(json!({"role": "user", "content": "Thanks. Which month was best for Eastside?"}));
    msgs.push(json!({"role": "assistant", "content": "May was Eastside's best month."}));
    let grown = dir.join("grown.json");
    std::fs::write(&grown, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let (rolled, _, r3, _) = summarize(&a, &grown);
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "one request for the growth");
    assert_eq!(r3["conversations"][0]["cache"], "extended");
    let input = seen[1].input();
    assert!(
        input.starts_with(
            "Summary so far:\nFIRST SUMMARY\n\nNew messages to fold into the summary:\n\n"
        ),
        "{input}"
    );
    assert!(input.contains("staff_on_shift"), "{input}");
    assert!(input.contains("Draft a two-sentence note"), "{input}");
    for s in [OLDER[0], "Why is Eastside slower?"] {
        assert!(!input.contains(s), "already summarized: {s} in {input}");
    }
    assert!(rolled.contains("ROLLED SUMMARY"));
    // And the rolled summary is cached in turn.
    let (_, _, r4, _) = summarize(&a, &grown);
    assert_eq!(r4["conversations"][0]["cache"], "hit");
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn prompt_file_and_input_bound() {
    let dir = temp_dir("summarize-prompt");
    let prompt = dir.join("prompt.txt");
    std::fs::write(&prompt, "Summarize in {max_tokens} tokens, as a haiku.").unwrap();
    let server = Server::start(vec![Reply::Status(200, ollama_answer("ok"))]);
    let p = prompt.display().to_string();
    summarize(
        &[
            "--engine",
            "ollama",
            "--url",
            &server.url,
            "--prompt-file",
            &p,
            "--max-summary-tokens",
            "50",
            "--max-input-tokens",
            "200",
        ],
        &fixture(SESSION),
    );
    let req = &server.seen()[0];
    assert_eq!(
        req.body["messages"][0]["content"],
        "Summarize in 50 tokens, as a haiku."
    );
    let input = req.input();
    assert!(
        input.contains("tokens cut from the middle of the conversation"),
        "{input}"
    );
    assert!(input.contains(OLDER[0]), "the head stays");
    assert!(input.len() < 1500, "{}", input.len());
}

#[test]
fn under_the_threshold_passes_through_byte_for_byte() {
    let out = ctxclean()
        .args([
            "summarize",
            "--engine",
            "ollama",
            "--url",
            "http://127.0.0.1:9",
        ])
        .arg(fixture(SESSION))
        .assert()
        .success();
    let o = out.get_output();
    assert_eq!(
        o.stdout,
        std::fs::read(fixture(SESSION)).unwrap(),
        "no request, no change"
    );
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("ctxclean summarize: no changes: no conversation is over --threshold"));
}

#[test]
fn usage_errors() {
    ctxclean()
        .args(["summarize", "--engine-model", "x"])
        .arg(fixture(SESSION))
        .assert()
        .code(2);
    ctxclean()
        .args(["summarize", "--timeout", "0"])
        .arg(fixture(SESSION))
        .assert()
        .code(2);
    ctxclean()
        .args(["summarize", "--prompt-file", "/nonexistent/prompt.txt"])
        .arg(fixture(SESSION))
        .assert()
        .code(1);
}

#[test]
fn extractive_on_an_agent_trajectory() {
    // The SWE-agent function-calling trajectory: 40+ tool calls.
    let out = ctxclean()
        .args(["summarize", "--threshold", "1000", "--keep", "6"])
        .arg(fixture("swe-agent/marshmallow-1867-function-calling.traj"))
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let msgs = v["history"].as_array().unwrap();
    let summary = msgs
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[Previous conversation summary]"))
        })
        .expect("a summary message");
    insta::assert_snapshot!(summary["content"].as_str().unwrap());
}

#[test]
fn extractive_on_a_claude_code_session() {
    let out = ctxclean()
        .args(["summarize", "--threshold", "500", "--keep", "4"])
        .arg(fixture("claude-code/viewer-session.jsonl"))
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    // The summary is a new line in the session's own shape; every other
    // kept line is byte for byte the input's.
    let input = std::fs::read_to_string(fixture("claude-code/viewer-session.jsonl")).unwrap();
    let summary_line = stdout
        .lines()
        .find(|l| l.contains("[Previous conversation summary]"))
        .expect("a summary line");
    let v: Value = serde_json::from_str(summary_line).unwrap();
    insta::assert_snapshot!(v.to_string());
    // Re-read and stats work on the output.
    ctxclean()
        .args(["stats", "--from", "claude-code"])
        .write_stdin(stdout.clone())
        .assert()
        .success();
    let kept_verbatim = stdout
        .lines()
        .filter(|l| input.lines().any(|i| i == *l))
        .count();
    assert!(kept_verbatim >= 4, "{kept_verbatim}");
}

#[test]
fn extractive_keeps_asks_answers_and_keys_of_the_analyst_session() {
    let (text, stderr, report, _) = summarize(&[], &fixture(SESSION));
    insta::assert_snapshot!(text);
    assert!(
        stderr.starts_with("ctxclean summarize: 1 conversation, 1,643 → "),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("(29 messages into 1 summary, extractive)\n"),
        "{stderr}"
    );
    assert_eq!(report["conversations"][0]["engine"], "extractive");
}

mod properties {
    use ctxclean::ops::summarize::{
        summarize, Placement, SummarizeSpec, SUMMARY_FOOTER, SUMMARY_HEADER,
    };
    use ctxclean::pairs::pair_problems;
    use ctxclean::summary::extractive::Extractive;
    use ctxclean::summary::{Engine, EngineError, Request};
    use ctxclean::tokens::{Encoding, Tokenizer};
    use ctxclean::transcript::{Conversation, Role};
    use proptest::prelude::*;

    struct Down;

    impl Engine for Down {
        fn name(&self) -> &str {
            "down"
        }
        fn model(&self) -> &str {
            ""
        }
        fn summarize(&self, _: &Request<'_>) -> Result<String, EngineError> {
            Err(EngineError::fatal("connection refused"))
        }
    }

    fn tokenizer() -> &'static Tokenizer {
        static TOK: std::sync::OnceLock<Tokenizer> = std::sync::OnceLock::new();
        TOK.get_or_init(|| Tokenizer::new(Encoding::O200kBase).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn summarize_keeps_system_and_a_verbatim_suffix_and_pairs(
            msgs in crate::trim::conversation(),
            threshold in 0..400usize,
            keep in 1..12usize,
            min_keep in 1..4usize,
            user in any::<bool>(),
            fail in any::<bool>(),
        ) {
            let tok = tokenizer();
            let spec = SummarizeSpec {
                threshold,
                keep,
                min_keep,
                max_summary_tokens: 200,
                placement: if user { Placement::User } else { Placement::System },
                ..SummarizeSpec::default()
            };
            let engine: &dyn Engine = if fail { &Down } else { &Extractive };
            let conv = Conversation::new(msgs.clone());
            let out = summarize(conv.clone(), &spec, engine, None, tok);
            let got = &out.conversation.messages;
            prop_assert!(pair_problems(got).is_empty(), "{:?}", pair_problems(got));

            let again = summarize(conv.clone(), &spec, engine, None, tok);
            prop_assert_eq!(&again.conversation.messages, got, "deterministic");

            if out.flags.get("summarized").is_none() {
                prop_assert_eq!(got, &msgs, "unchanged when not summarized");
                prop_assert!(out.changes.is_empty());
                return Ok(());
            }
            prop_assert!(tok.count_conversation(&conv) > threshold);
            // [first system] + [summary] + a verbatim suffix of the input.
            let sys = usize::from(msgs.first().is_some_and(|m| m.role == Role::System));
            if sys == 1 {
                prop_assert_eq!(&got[0], &msgs[0]);
            }
            let summary = &got[sys];
            prop_assert_eq!(summary.role, if user { Role::User } else { Role::System });
            let text = summary.content.text();
            prop_assert!(
                text.starts_with(SUMMARY_HEADER) || text.starts_with("[Earlier conversation truncated: "),
                "{}", text
            );
            prop_assert!(text.ends_with(SUMMARY_FOOTER));
            prop_assert_eq!(fail, out.flags.contains_key("fallback"));
            let recent = &got[sys + 1..];
            prop_assert!(!recent.is_empty());
            prop_assert_eq!(recent, &msgs[msgs.len() - recent.len()..]);
            // The window holds at least min(keep, what was there) messages
            // unless halving made room; it never starts with a tool result.
            prop_assert!(!recent[0].role.is_result());
            // Every removed message is reported, and the summary is added.
            let removed = out.changes.iter().filter(|c| c.action == ctxclean::report::Action::Removed).count();
            prop_assert_eq!(removed, msgs.len() - sys - recent.len());
        }
    }
}

/// Issue 16: the summarizer against a hostile or broken server.
mod hostile {
    use super::*;
    use std::fs;

    #[test]
    fn a_key_echoed_across_the_cut_never_shows() {
        // The server echoes the Authorization header so that the 200-character
        // cut of its body falls inside the key.
        for at in [170, 180, 190, 195] {
            let server = Server::start(vec![Reply::EchoAuth(at)]);
            let url = format!("{}/v1", server.url);
            let (text, stderr, report, out) = summarize(
                &[
                    "--engine",
                    "openai",
                    "--url",
                    &url,
                    "--api-key-env",
                    "CTXCLEAN_TEST_KEY",
                ],
                &fixture(SESSION),
            );
            for s in [&text, &stderr, &report.to_string(), &out.to_string()] {
                for part in ["sk-test", "secret-123", "t-secret"] {
                    assert!(!s.contains(part), "key leaked at {at}: {s}");
                }
            }
        }
    }

    #[test]
    fn url_credentials_never_show() {
        let server = Server::start(vec![Reply::Status(500, "{}".into())]);
        let url = server.url.replace("http://", "http://alice:hunter2@");
        let (text, stderr, report, _) = summarize(
            &["--engine", "ollama", "--url", &url, "--timeout", "5"],
            &fixture(SESSION),
        );
        for s in [&text, &stderr, &report.to_string()] {
            assert!(!s.contains("hunter2") && !s.contains("alice"), "{s}");
        }
        assert!(stderr.contains("[redacted]@127.0.0.1"), "{stderr}");
    }

    #[test]
    fn a_redirect_is_a_failure_not_a_get() {
        let server = Server::start(vec![
            Reply::Raw(
                "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .into(),
            ),
            Reply::Status(200, ollama_answer("A GET answered this.")),
        ]);
        let (text, stderr, report, _) = summarize(
            &["--engine", "ollama", "--url", &server.url],
            &fixture(SESSION),
        );
        assert_eq!(report["conversations"][0]["fallback"], true);
        assert!(stderr.contains("redirected to /elsewhere"), "{stderr}");
        assert!(!text.contains("A GET answered this"));
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "the redirect was followed");
        assert_eq!(seen[0].method, "POST");
    }

    #[test]
    fn a_down_server_is_asked_for_two_conversations_only() {
        let dir = temp_dir("hostile-breaker");
        let input = dir.join("five.jsonl");
        let conv = |i: usize| {
            let mut msgs = Vec::new();
            for k in 0..12 {
                msgs.push(json!({"role": "user", "content": format!("conversation {i} question {k} about the quarterly numbers")}));
                msgs.push(json!({"role": "assistant", "content": format!("answer {k}: they went up by {k} percent")}));
            }
            json!({ "messages": msgs }).to_string()
        };
        let lines: Vec<String> = (0..5).map(conv).collect();
        fs::write(&input, lines.join("\n") + "\n").unwrap();
        let server = Server::start(vec![Reply::Status(503, "{}".into())]);
        let out = ctxclean()
            .args([
                "summarize",
                "--threshold",
                "50",
                "--engine",
                "ollama",
                "--url",
                &server.url,
                "-j",
                "1",
            ])
            .arg(&input)
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        // Two conversations, each tried three times (two retries), then none.
        assert_eq!(server.seen().len(), 6, "{stderr}");
        assert!(
            stderr.contains("not asked: the server failed for 2 conversations in a row"),
            "{stderr}"
        );
        assert!(
            stderr.contains("messages truncated (summarizer failed: "),
            "{stderr}"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_tampered_cache_entry_is_not_used() {
        let dir = temp_dir("hostile-cache");
        let cache = dir.join("cache");
        let server = Server::start(vec![Reply::Status(200, ollama_answer("The real summary."))]);
        let args = [
            "--engine",
            "ollama",
            "--url",
            &server.url,
            "--cache",
            cache.to_str().unwrap(),
        ];
        let (text, ..) = summarize(&args, &fixture(SESSION));
        assert!(text.contains("The real summary."));
        // Replace the entry with one far over the summary budget.
        let entry = fs::read_dir(&cache)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut stored: Value = serde_json::from_str(&fs::read_to_string(&entry).unwrap()).unwrap();
        stored["summary"] = Value::from("tampered ".repeat(200_000));
        fs::write(&entry, stored.to_string()).unwrap();
        let (text, ..) = summarize(&args, &fixture(SESSION));
        assert!(!text.contains("tampered"), "the tampered entry was used");
        assert_eq!(server.seen().len(), 2, "the server was not asked again");
        fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_local_server_of_a_small_window_gets_requests_that_fit_it() {
    // llama-cpp-python serving a 2,048-token model: the whole older part
    // is refused with its window named; ctxclean asks again in chunks, each
    // folded into the summary so far, each within the window.
    let server = Server::start(vec![Reply::Window(
        2048,
        openai_answer("Intent: clinic analytics. Summary: March visits by clinic."),
    )]);
    let input = fixture("claude-code/parallel-tasks.jsonl");
    let dir = temp_dir("summarize-window");
    let report = dir.join("report.json");
    let out = ctxclean()
        .args([
            "summarize",
            "--threshold",
            "1500",
            "--keep",
            "4",
            "--engine",
            "openai",
            "--url",
        ])
        .arg(format!("{}/v1", server.url))
        .arg("--report")
        .arg(&report)
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let c = &report["conversations"][0];
    assert!(c.get("fallback").is_none(), "{c}");
    assert_eq!(c["engine_context"], 2048);
    assert!(c["chunks"].as_u64().unwrap() > 1, "{c}");
    let seen = server.seen();
    assert!(seen.len() > 2);
    for req in &seen[1..] {
        let sent: usize = req.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().len())
            .sum();
        assert!(sent / 3 <= 2048, "{sent} characters sent");
        // The answer's limit is named: the summary's budget in the window.
        assert_eq!(req.body["max_tokens"], 256);
    }
    // After the first, each request folds its messages into the summary so
    // far.
    assert!(seen[2]
        .input()
        .starts_with("Summary so far:\nIntent: clinic analytics."));
    assert!(text.contains("[Previous conversation summary]"), "{text}");
}

#[test]
fn ollama_is_told_the_window_it_is_given() {
    let server = Server::start(vec![Reply::Status(
        200,
        ollama_answer("Intent: clinic analytics."),
    )]);
    let (_, _, report, _) = summarize(
        &[
            "--engine",
            "ollama",
            "--url",
            &server.url,
            "--engine-context",
            "8192",
        ],
        &fixture(SESSION),
    );
    assert!(report["conversations"][0].get("fallback").is_none());
    let req = &server.seen()[0];
    assert_eq!(req.body["options"]["num_ctx"], 8192);
    assert_eq!(req.body["options"]["num_predict"], 1000);
}
