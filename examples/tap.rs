//! What reading an answer's usage costs the proxy (issue 41's target: no
//! more than 0.2 ms at p50 for a 10k-token streamed answer). Run by
//! `bench/serve.py --tap`:
//!
//!     cargo run --release --example tap
//!
//! Builds streamed answers of about 10,000 tokens as each provider sends
//! them (Anthropic events, OpenAI chunks with and without
//! `include_usage`, Gemini SSE chunks, Ollama NDJSON), and a 10k-token
//! answer in one piece, then feeds each through the proxy's
//! [`Tap`] in the chunks a socket hands over (4 KiB), as the proxy does,
//! and prints the time per answer (p50 and p99 of 2,000 runs): on the way
//! (the chunks fed as they pass to the client) and at the end (reading
//! what was kept, after the last byte went).

use std::time::Instant;

/// Runs per answer.
const RUNS: usize = 2000;

use ctxclean::format::Format;
use ctxclean::inflight::answer::Tap;
use serde_json::json;

/// About 10,000 tokens of text in deltas of about 4 tokens.
fn deltas() -> Vec<String> {
    (0..2500).map(|i| format!(" word{} and", i % 97)).collect()
}

fn sse(events: impl IntoIterator<Item = (Option<&'static str>, serde_json::Value)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in events {
        if let Some(n) = name {
            out.extend_from_slice(format!("event: {n}\n").as_bytes());
        }
        out.extend_from_slice(format!("data: {data}\n\n").as_bytes());
    }
    out
}

fn anthropic() -> Vec<u8> {
    let mut ev = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 9,
            "cache_read_input_tokens": 800, "cache_creation_input_tokens": 40, "output_tokens": 1}}}),
    )];
    ev.push((
        Some("content_block_start"),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ));
    for d in deltas() {
        ev.push((
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}}),
        ));
    }
    ev.push((
        Some("message_delta"),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 10000}}),
    ));
    ev.push((Some("message_stop"), json!({"type": "message_stop"})));
    sse(ev)
}

fn openai(include_usage: bool) -> Vec<u8> {
    let base = |delta: serde_json::Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    };
    let mut ev: Vec<(Option<&'static str>, serde_json::Value)> = deltas()
        .into_iter()
        .map(|d| (None, base(json!({"content": d}))))
        .collect();
    if include_usage {
        ev.push((None, json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
            "choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 10000, "total_tokens": 10900}})));
    }
    let mut out = sse(ev);
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

fn gemini() -> Vec<u8> {
    let ds = deltas();
    let n = ds.len();
    sse(ds.into_iter().enumerate().map(|(i, d)| {
        let mut chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": d}]}, "index": 0}]});
        if i + 1 == n {
            chunk["usageMetadata"] = json!({"promptTokenCount": 900, "candidatesTokenCount": 10000,
                                            "totalTokenCount": 10900});
        }
        (None, chunk)
    }))
}

fn ollama() -> Vec<u8> {
    let mut out = Vec::new();
    for d in deltas() {
        let line = json!({"model": "llama3.2", "message": {"role": "assistant", "content": d}, "done": false});
        out.extend_from_slice(format!("{line}\n").as_bytes());
    }
    let last = json!({"model": "llama3.2", "message": {"role": "assistant", "content": ""}, "done": true,
                      "prompt_eval_count": 900, "eval_count": 10000});
    out.extend_from_slice(format!("{last}\n").as_bytes());
    out
}

fn whole() -> Vec<u8> {
    let text: String = deltas().concat();
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 9, "output_tokens": 10000}})
    .to_string()
    .into_bytes()
}

fn main() {
    let cases: Vec<(&str, Format, bool, &str, Vec<u8>)> = vec![
        (
            "anthropic, streamed",
            Format::Anthropic,
            false,
            "text/event-stream",
            anthropic(),
        ),
        (
            "openai chat, streamed with usage",
            Format::OpenAi,
            false,
            "text/event-stream",
            openai(true),
        ),
        (
            "openai chat, streamed without usage",
            Format::OpenAi,
            false,
            "text/event-stream",
            openai(false),
        ),
        (
            "gemini, streamed",
            Format::Gemini,
            false,
            "text/event-stream",
            gemini(),
        ),
        (
            "ollama, NDJSON",
            Format::OpenAi,
            true,
            "application/x-ndjson",
            ollama(),
        ),
        (
            "anthropic, one piece",
            Format::Anthropic,
            false,
            "application/json",
            whole(),
        ),
    ];
    println!(
        "{:38} {:>5} {:>22} {:>22}",
        "answer of about 10k tokens", "KiB", "on the way, p50 / p99", "at the end, p50 / p99"
    );
    let pct = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        format!("{:.3} / {:.3} ms", t[t.len() / 2], t[t.len() * 99 / 100])
    };
    for (name, format, ollama, content_type, bytes) in cases {
        let (mut way, mut end) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
        for _ in 0..RUNS {
            let t = Instant::now();
            let mut tap = Tap::new(format, ollama, content_type, "");
            for chunk in bytes.chunks(4096) {
                tap.feed(chunk);
            }
            way.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            std::hint::black_box(tap.finish(true));
            end.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        println!(
            "{name:38} {:>5.0} {:>22} {:>22}",
            bytes.len() as f64 / 1024.0,
            pct(&mut way),
            pct(&mut end)
        );
    }
}
