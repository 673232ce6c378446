#!/usr/bin/env python3
"""A loopback upstream that bills like a provider, with prompt caching.

    python3 bench/upstream.py [--port 8788] [--ctxclean target/release/ctxclean]
                              [--tokenizer cl100k_base] [--ttl SECONDS] [--model NAME]

Answers Anthropic's Messages API (POST /v1/messages) and OpenAI's Chat
Completions (POST /v1/chat/completions), not streamed, with "ok" and the
usage a provider would bill for the request, so that `ctxclean serve
--log` and `ctxclean bill` can be tried on real traffic without a key or a
bill; GET /bill gives its own totals (what it billed, per model, with
dollars at the prices of core/data/models.json), to compare a run through
the proxy with one without (`--model` prices it at that model, whatever
the bodies name; unpriced requests are counted, never $0). The first line
on standard error is
`listening on http://127.0.0.1:PORT`.

How it bills (the providers' documented rules; the tokens are ctxclean's
count of each block's JSON, a stand-in for the provider's tokenizer):

- Anthropic. A request is its tools, then its system blocks, then its
  messages' content blocks. A block with `cache_control` is a breakpoint
  (a top-level `cache_control` puts one on the last block). The prefix up
  to each breakpoint is written to the cache when it is at least the
  model's minimum (1,024 tokens; 2,048 for Claude 3 and 3.5 Haiku; 4,096
  for Opus 4.5 and later and Haiku 4.5), for 5 minutes (an hour with
  `ttl: "1h"`; --ttl overrides both), and the lifetime is renewed on each
  read. A read is the longest prefix still cached that ends at a
  breakpoint or up to 20 blocks before one; markers are not part of what
  is compared. Billed: `cache_read_input_tokens` (the read),
  `cache_creation_input_tokens` (from there to the last breakpoint), and
  `input_tokens` (the rest).
- OpenAI. Caching is automatic: every prefix of 1,024 tokens or more that
  ends at a message is kept for 5 minutes (--ttl overrides); a request
  reads the longest kept, counted in 128-token steps past 1,024
  (`prompt_tokens_details.cached_tokens`). No write is billed.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOKBACK = 20


def stripped(v):
    """`v` without its `cache_control` markers."""
    if isinstance(v, dict):
        return {k: stripped(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [stripped(x) for x in v]
    return v


class Counter:
    """Tokens of texts, by the ctxclean binary (one process a request, for
    the texts not seen before)."""

    def __init__(self, exe, tokenizer):
        self.exe, self.tokenizer, self.memo, self.lock = exe, tokenizer, {}, threading.Lock()
        self.overhead = None

    def count(self, texts):
        with self.lock:
            new = [t for t in dict.fromkeys(texts) if t not in self.memo]
            if self.overhead is None:
                new.insert(0, "")
            if new:
                lines = "".join(json.dumps({"messages": [{"role": "user", "content": t}]}) + "\n" for t in new)
                r = subprocess.run([self.exe, "stats", "--jsonl", "-q", "--tokenizer", self.tokenizer],
                                   input=lines.encode(), capture_output=True, check=True)
                counts = [json.loads(l)["tokens"] for l in r.stdout.splitlines()]
                if self.overhead is None:
                    self.overhead, counts, new = counts[0], counts[1:], new[1:]
                for t, n in zip(new, counts):
                    self.memo[t] = max(0, n - self.overhead)
            return [self.memo[t] for t in texts]


def anthropic_blocks(req):
    """(text, breakpoint, ttl) of each block, in the order a cache sees them."""
    out = []

    def add(prefix, block):
        marker = block.get("cache_control") if isinstance(block, dict) else None
        ttl = 3600 if isinstance(marker, dict) and marker.get("ttl") == "1h" else 300
        out.append((prefix + json.dumps(stripped(block), sort_keys=True), marker is not None, ttl))

    for tool in req.get("tools") or []:
        add("tool:", tool)
    system = req.get("system")
    if isinstance(system, str):
        add("system:", {"type": "text", "text": system})
    for block in system if isinstance(system, list) else []:
        add("system:", block)
    for m in req.get("messages") or []:
        content = m.get("content")
        role = f"{m.get('role')}:"
        if isinstance(content, str):
            add(role, {"type": "text", "text": content})
        for block in content if isinstance(content, list) else []:
            add(role, block)
    if req.get("cache_control") is not None and out:
        text, _, _ = out[-1]
        out[-1] = (text, True, 3600 if req["cache_control"].get("ttl") == "1h" else 300)
    return out


def anthropic_minimum(model):
    m = (model or "").lower()
    if "haiku-4" in m or any(f"opus-4-{v}" in m for v in range(5, 10)):
        return 4096
    if "haiku" in m:
        return 2048
    return 1024


class Provider:
    """The caches and the totals."""

    def __init__(self, counter, ttl, model=None):
        self.counter, self.ttl, self.model = counter, ttl, model
        self.cache = {}  # prefix hash -> expiry
        self.totals = {}
        self.lock = threading.Lock()

    def prefixes(self, texts):
        tokens = self.counter.count(texts)
        h, total, out = hashlib.sha256(), 0, []
        for text, n in zip(texts, tokens):
            h.update(text.encode())
            h.update(b"\0")
            total += n
            out.append((h.hexdigest(), total))
        return out

    def alive(self, key, now):
        return self.cache.get(key, 0) > now

    def anthropic(self, req):
        blocks = anthropic_blocks(req)
        prefixes = self.prefixes([b[0] for b in blocks])
        total = prefixes[-1][1] if prefixes else 0
        marks = [i for i, b in enumerate(blocks) if b[1]]
        minimum = anthropic_minimum(req.get("model"))
        now = time.time()
        with self.lock:
            read_at = -1
            for b in marks:
                for j in range(b, max(-1, b - LOOKBACK - 1), -1):
                    if self.alive(prefixes[j][0], now):
                        read_at = max(read_at, j)
                        break
            read = prefixes[read_at][1] if read_at >= 0 else 0
            if read_at >= 0:
                self.cache[prefixes[read_at][0]] = now + (self.ttl or blocks[read_at][2])
            write = 0
            if marks and prefixes[marks[-1]][1] >= minimum:
                write = max(0, prefixes[marks[-1]][1] - read)
                for b in marks:
                    if prefixes[b][1] >= minimum:
                        self.cache[prefixes[b][0]] = now + (self.ttl or blocks[b][2])
        usage = {"input_tokens": total - read - write, "cache_read_input_tokens": read,
                 "cache_creation_input_tokens": write, "output_tokens": 1}
        self.add(req.get("model"), total - read - write, read, write)
        return {"id": "msg_upstream", "type": "message", "role": "assistant", "model": req.get("model"),
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": usage}

    def openai(self, req):
        texts = ["tools:" + json.dumps(req.get("tools"), sort_keys=True)] if req.get("tools") else []
        texts += ["message:" + json.dumps(stripped(m), sort_keys=True) for m in req.get("messages") or []]
        prefixes = self.prefixes(texts)
        total = prefixes[-1][1] if prefixes else 0
        now = time.time()
        with self.lock:
            kept = [n for key, n in prefixes if n >= 1024 and self.alive(key, now)]
            longest = max(kept, default=0)
            cached = 1024 + (longest - 1024) // 128 * 128 if longest >= 1024 else 0
            for key, n in prefixes:
                if n >= 1024:
                    self.cache[key] = now + (self.ttl or 300)
        self.add(req.get("model"), total - cached, cached, 0)
        return {"id": "chatcmpl-upstream", "object": "chat.completion", "created": int(now),
                "model": req.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": total, "completion_tokens": 1, "total_tokens": total + 1,
                          "prompt_tokens_details": {"cached_tokens": cached}}}

    def add(self, model, input_, read, write):
        with self.lock:
            t = self.totals.setdefault(model or "-", {"requests": 0, "input": 0, "cache_read": 0,
                                                      "cache_write": 0, "output": 0})
            t["requests"] += 1
            t["input"] += input_
            t["cache_read"] += read
            t["cache_write"] += write
            t["output"] += 1

    def bill(self):
        prices = json.load(open(os.path.join(ROOT, "core", "data", "models.json")))["models"]
        out, dollars, unpriced = {}, None, 0
        with self.lock:
            for model, t in self.totals.items():
                name = self.model or model
                p = prices.get(name) or prices.get(name.rsplit("-", 1)[0]) or {}
                d = None
                if p.get("input") is not None:
                    d = (t["input"] * p["input"] + t["cache_read"] * p.get("cache_read", p["input"])
                         + t["cache_write"] * p.get("cache_write", p["input"]) + t["output"] * p.get("output", 0))
                    dollars = (dollars or 0.0) + d
                else:
                    unpriced += t["requests"]
                out[model] = dict(t, dollars=d)
        # Unpriced is said, never $0: `dollars` is null when nothing is priced.
        return {"models": out, "dollars": dollars, "unpriced_requests": unpriced}


def serve(provider, port):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, doc):
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/") == "/bill":
                return self.answer(200, provider.bill())
            self.answer(404, {"error": {"message": f"no such route: GET {self.path}"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            anthropic = self.path.startswith("/v1/messages")
            try:
                req = json.loads(body)
                if not isinstance(req, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                return self.answer(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                    "message": f"not a JSON body: {e}"}})
            if req.get("stream"):
                return self.answer(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                    "message": "bench/upstream.py answers non-streamed requests only"}})
            if anthropic:
                return self.answer(200, provider.anthropic(req))
            if self.path.startswith("/v1/chat/completions"):
                return self.answer(200, provider.openai(req))
            self.answer(404, {"error": {"message": f"no such route: POST {self.path}"}})

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8788)
    ap.add_argument("--ctxclean", default=os.path.join(ROOT, "target", "release", "ctxclean"))
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--ttl", type=float, default=None,
                    help="the cache's lifetime in seconds, for every prefix (default: the provider's)")
    ap.add_argument("--model", default=None,
                    help="price GET /bill at this model's prices, whatever model the bodies name")
    args = ap.parse_args()
    if not os.path.exists(args.ctxclean):
        sys.exit(f"bench/upstream.py: {args.ctxclean} not found (cargo build --release, or --ctxclean PATH)")
    serve(Provider(Counter(args.ctxclean, args.tokenizer), args.ttl, args.model), args.port)


if __name__ == "__main__":
    main()
