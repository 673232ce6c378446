#!/usr/bin/env python3
"""A loopback upstream that bills like a provider, with prompt caching.

    python3 bench/upstream.py [--port 8788] [--ctxclean target/release/ctxclean]
                              [--tokenizer o200k_base] [--ttl SECONDS] [--model NAME]

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

How it bills (the providers' documented rules). A request is a row of
units: its tool definitions, its system prompt, then each message, and
last the reply's priming (never cached); their sizes are ctxclean's
count (`ctxclean cache-units`, a stand-in for the provider's tokenizer),
so that its bill and ctxclean's meters (`replay`, `serve`'s "as they
came") can be compared to the token. A unit is the same as another when
its JSON, without `cache_control` markers, is; a prefix is the model and
the units up to one.

- Anthropic. A unit with a `cache_control` marker in it is a breakpoint
  (a top-level `cache_control` puts one on the last unit). The prefix up
  to each breakpoint is written to the cache when it is at least the
  model's minimum (1,024 tokens; 2,048 for Claude 3 and 3.5 Haiku; 4,096
  for Opus 4.5 and later and Haiku 4.5), for 5 minutes (an hour with
  `ttl: "1h"`; --ttl overrides both), and the lifetime is renewed on each
  read. A read is the longest prefix still cached that ends at a
  breakpoint or up to 20 units before one (Anthropic counts 20 blocks;
  agents mark a message's last block). Billed: `cache_read_input_tokens`
  (the read), `cache_creation_input_tokens` (from there to the last
  breakpoint), and `input_tokens` (the rest).
- OpenAI. Caching is automatic: every prefix of 1,024 tokens or more that
  ends at a unit is kept for 5 minutes (--ttl overrides); a request reads
  the longest kept, counted in 128-token steps past 1,024
  (`prompt_tokens_details.cached_tokens`). No write is billed.

The same rules are `ctxclean::inflight::cache`, written on their own in
Rust; the tests compare the two bills.
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
    """Each body's units' tokens, by `ctxclean cache-units` (one process a
    request)."""

    def __init__(self, exe, tokenizer):
        self.exe, self.tokenizer = exe, tokenizer

    def sizes(self, fmt, req):
        r = subprocess.run([self.exe, "cache-units", "--format", fmt, "--tokenizer", self.tokenizer],
                           input=json.dumps(req).encode() + b"\n", capture_output=True, check=True)
        doc = json.loads(r.stdout)
        return [u["tokens"] for u in doc["units"]], doc["total"]


def marker_ttl(marker):
    if not isinstance(marker, dict):
        return None
    return 3600 if marker.get("ttl") == "1h" else 300


def marker(v):
    """The longest lifetime a `cache_control` marker in `v` asks for."""
    found = []
    if isinstance(v, dict):
        own = marker_ttl(v.get("cache_control"))
        if own:
            found.append(own)
        found += [t for k, x in v.items() if k != "cache_control" for t in [marker(x)] if t]
    elif isinstance(v, list):
        found += [t for x in v for t in [marker(x)] if t]
    return max(found) if found else None


def units(req, fmt):
    """(JSON without markers, breakpoint lifetime) of each unit, in order."""
    out = []
    for key in ("tools", "functions"):
        if req.get(key) is not None:
            out.append(req[key])
    systems = {"anthropic": ["system"], "responses": ["instructions"],
               "gemini": ["systemInstruction", "system_instruction"]}.get(fmt, ["system"])
    for key in systems:
        if req.get(key) is not None:
            out.append(req[key])
    items = req.get({"responses": "input", "gemini": "contents"}.get(fmt, "messages")) or []
    out += list(items)
    listed = [(json.dumps(stripped(u), sort_keys=True), marker(u)) for u in out]
    top = marker_ttl(req.get("cache_control"))
    if top and listed:
        text, ttl = listed[-1]
        listed[-1] = (text, max(ttl or 0, top))
    return listed


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

    def prefixes(self, fmt, req):
        """(key, tokens up to it, breakpoint lifetime) of each unit, and the total."""
        listed = units(req, fmt)
        sizes, total = self.counter.sizes(fmt, req)
        h, end, out = hashlib.sha256(), 0, []
        h.update(json.dumps(req.get("model")).encode())
        for (text, ttl), n in zip(listed, sizes):
            h.update(b"\0" + text.encode())
            end += n
            out.append((h.hexdigest(), end, ttl))
        return out, total

    def alive(self, key, now):
        return self.cache.get(key, 0) > now

    def anthropic(self, req):
        prefixes, total = self.prefixes("anthropic", req)
        marks = [i for i, p in enumerate(prefixes) if p[2]]
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
                self.cache[prefixes[read_at][0]] = now + (self.ttl or prefixes[read_at][2] or 300)
            write = 0
            if marks and prefixes[marks[-1]][1] >= minimum:
                write = max(0, prefixes[marks[-1]][1] - read)
                for b in marks:
                    if prefixes[b][1] >= minimum:
                        self.cache[prefixes[b][0]] = now + (self.ttl or prefixes[b][2])
        usage = {"input_tokens": total - read - write, "cache_read_input_tokens": read,
                 "cache_creation_input_tokens": write, "output_tokens": 1}
        self.add(req.get("model"), total - read - write, read, write)
        return {"id": "msg_upstream", "type": "message", "role": "assistant", "model": req.get("model"),
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": usage}

    def openai(self, req):
        prefixes, total = self.prefixes("openai", req)
        now = time.time()
        with self.lock:
            kept = [n for key, n, _ in prefixes if n >= 1024 and self.alive(key, now)]
            longest = max(kept, default=0)
            cached = 1024 + (longest - 1024) // 128 * 128 if longest >= 1024 else 0
            for key, n, _ in prefixes:
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
    ap.add_argument("--tokenizer", default="o200k_base",
                    help="the tokenizer its counts are in (ctxclean's names; default o200k_base, as serve's)")
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
