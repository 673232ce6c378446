#!/usr/bin/env python3
"""`ctxclean serve` against no proxy and Headroom's proxy, in one run.

    cargo build --release && python3 bench/serve.py [--requests 10000] [--no-headroom] [--no-llmtrim]
        [--recipe "compact-tools --keep-last 3 then trim --max-tokens 8000"] [--quick] [--no-crush]
    python3 bench/serve.py --long     # bench/long's sessions (100+ calls each): accounted, and
                                      # the latency added to their own requests
    CTXCLEAN_BENCH_EXE=PATH ...       # another build of ctxclean in the ctxclean row
    python3 bench/serve.py --tap

--tap: what reading an answer's usage costs (examples/tap.rs: streamed
10k-token answers of each provider fed through the proxy's tap in 4 KiB
chunks; issue 41's target is 0.2 ms at p50 on the way).

Replays agent sessions call by call (each request is the session up to one
model call, as an agent sends it: `ctxclean replay --write-requests` writes
them) through

  (a) no proxy, (b) `ctxclean serve`, (c) Headroom's proxy in its `cache`
  and (d) `token` modes (`pip install "headroom-ai[proxy]"`, into target/;
  tiktoken's cache seeded with the vocabularies of the cargo registry, since
  offline it cannot download them and then forwards every body as it came),
  and (e) llmtrim 0.13.8 (`cargo install llmtrim`, into target/llmtrim;
  its engine's pipe, `llmtrim compress`, in a loopback proxy here: its own
  proxy is an HTTPS interceptor for the providers' hosts),

all in front of the same kind of loopback upstream (one per configuration,
each recording what it receives), one request at a time, the configurations
taking turns. What each upstream received is saved by call and accounted
by `ctxclean replay --forwarded`, the one accounting the user's own tool
gives: per session and in total, the tokens received, the bodies changed,
the tokens a provider's prompt cache would serve (the prefix shared with
the previous body), the bodies the provider would reject, the evidence the
model used next still kept, and the cost at claude-sonnet-4-5's prices from
the LiteLLM snapshot ctxclean ships (cache read, cache write, output). A
configuration that changed no body is reported as a passthrough. Then the
latency each proxy adds (p50/p99) at 1, 8 and 32 concurrent clients for
10k- and 100k-token bodies, the errors in --requests requests, and each
proxy's peak RSS.

Billed against counted: the upstream answers each replayed request with
the usage a provider would bill, counted with a tokenizer that is not
ctxclean's (cl100k_base, standing in for a provider's own): the prefix
shared with the session's previous request as a cache read, the rest as a
cache write. Each configuration's billed input is set against ctxclean's
count (o200k_base) of the bodies the upstream received, and ctxclean's
own log (its `billed` and `tokens_after`) is checked to say the same.

Sessions: the agent sessions of fixtures/ (Claude Code, Cline, pi,
OpenHands, Codex), and of ../shared/corpus when it is there, converted to
Anthropic requests by `ctxclean convert --to anthropic`; and two generated
sessions a tool-output compressor has work in (unless --no-crush): JSON
arrays of 120-400 objects (what Headroom's SmartCrusher targets), a
600-line source file, a 1,500-line build log and 500 search results, where
the model's next answer uses one item from the middle and the user's
question names what to look for. A session with a request the same as one
sent before is left out (a proxy may answer it from its own cache).
"""

import concurrent.futures
import hashlib
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.environ.get("CTXCLEAN_BENCH_EXE") or os.path.join(ROOT, "target", "release", "ctxclean")
HEADROOM_VENV = os.path.join(ROOT, "target", "headroom-venv")
RECIPE = ["compact-tools", "--keep-last", "3", "--max-result-tokens", "500", "then", "trim", "--max-tokens", "8000"]
SERVE_FLAGS = []
PRICES = json.load(open(os.path.join(ROOT, "core", "data", "models.json")))["models"]["claude-sonnet-4-5"]


def say(msg):
    print(msg, flush=True)


_BILL_CACHE = {}
_BILL_LOCK = threading.Lock()


def provider_tokens(body, fmt="anthropic"):
    """A body's tokens as the stand-in provider bills them (cl100k_base)."""
    key = hash(json.dumps(body, sort_keys=True))
    with _BILL_LOCK:
        if key in _BILL_CACHE:
            return _BILL_CACHE[key]
    r = subprocess.run([EXE, "stats", "--jsonl", "--from", fmt, "--tokenizer", "cl100k_base", "-q"],
                       input=json.dumps(body).encode(), capture_output=True)
    try:
        n = json.loads(r.stdout.splitlines()[0])["tokens"]
    except (ValueError, IndexError, KeyError):
        n = 0
    with _BILL_LOCK:
        _BILL_CACHE[key] = n
    return n


def answer_for(usage):
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": usage}).encode()


def chat_answer(body):
    """An OpenAI chat answer with the body's tokens as its usage (the
    accounting is `ctxclean replay --forwarded`'s, not this)."""
    try:
        total = provider_tokens(json.loads(body), "openai")
    except ValueError:
        total = 1
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "bench",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": total, "completion_tokens": 1, "total_tokens": total + 1}}).encode()


class Upstream:
    """Records bodies; answers as Anthropic does, not streamed, with the
    usage the stand-in provider bills for a replayed request."""

    def __init__(self):
        self.received = []
        self.billed = {}
        rec, billed, previous = self.received, self.billed, {}
        plain = answer_for({"input_tokens": 1, "output_tokens": 1})

        def bill(bid, body):
            session = bid.rsplit("-call-", 1)[0]
            try:
                req = json.loads(body)
            except ValueError:
                return plain
            total = provider_tokens(req)
            p = common_prefix(previous.get(session), req)
            read = min(provider_tokens(p), total) if p is not None else 0
            previous[session] = req
            billed[bid] = total
            return answer_for({"input_tokens": 0, "cache_read_input_tokens": read,
                               "cache_creation_input_tokens": total - read, "output_tokens": 1})

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                # Headers and body go in two writes: without this, Nagle and
                # delayed ACKs add 40 ms to every answer on a kept-alive
                # connection, and the figures measure the upstream.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                chat = self.path.startswith("/v1/chat/completions")
                answer = chat_answer(body) if chat else plain
                if self.headers.get("x-bench-record") != "no":
                    bid = self.headers.get("x-bench-id")
                    rec.append((bid, body))
                    answer = chat_answer(body) if chat else bill(bid, body)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        ThreadingHTTPServer.request_queue_size = 256
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


LOG = os.path.join(ROOT, "target", "bench-serve.log")


def start_ctxclean(up):
    if os.path.exists(LOG):
        os.remove(LOG)
    p = subprocess.Popen([EXE, "serve", "--upstream", up.url, "--listen", "127.0.0.1:0", "--log", LOG,
                          "--max-connections", "512", *SERVE_FLAGS, "--", *RECIPE], stderr=subprocess.PIPE, text=True)
    m = re.search(r"listening on (http://[\d.:]+)", p.stderr.readline())
    return p, m.group(1)


def start_headroom(up, mode, port):
    exe = os.path.join(HEADROOM_VENV, "bin", "headroom")
    if not os.path.exists(exe):
        say("installing headroom-ai into target/headroom-venv")
        subprocess.run([sys.executable, "-m", "venv", HEADROOM_VENV], check=True)
        subprocess.run([os.path.join(HEADROOM_VENV, "bin", "pip"), "install", "-q", "headroom-ai[proxy]"], check=True)
    # Its tokenizer is tiktoken's, which downloads its vocabulary on first
    # use: offline, that fails, and Headroom forwards every body as it
    # came (what the previous round measured). The same files, from the
    # cargo registry, in tiktoken's cache.
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from tiktoken_reference import seed_cache
    env = dict(os.environ, ANTHROPIC_TARGET_API_URL=up.url, OPENAI_TARGET_API_URL=up.url + "/v1",
               HEADROOM_TELEMETRY="off", HEADROOM_BEACON="off", DO_NOT_TRACK="1",
               TIKTOKEN_CACHE_DIR=os.environ.get("TIKTOKEN_CACHE_DIR") or seed_cache())
    p = subprocess.Popen([exe, "proxy", "--port", str(port), "--mode", mode, "--no-http2", "--no-rate-limit"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            return p, url
        except Exception:
            time.sleep(0.2)
    p.kill()
    raise SystemExit(f"headroom proxy ({mode}) did not start")


ROUTE = ["/v1/messages"]


LLMTRIM = os.path.join(ROOT, "target", "llmtrim")


def start_llmtrim(up, port):
    """llmtrim (a Rust proxy, MPL-2.0: `cargo install llmtrim`, into
    target/llmtrim) in front of `up`. Its proxy is an HTTPS interceptor
    for the providers' own hosts (it passes plain HTTP to a loopback
    upstream through unchanged), so each body goes through its engine's
    pipe, `llmtrim compress` (the same compression, one request at a
    time), in a small loopback proxy here. Returns a handle with `pid` and
    `terminate`, and the URL."""
    exe = os.path.join(LLMTRIM, "bin", "llmtrim")
    if not os.path.exists(exe):
        say("installing llmtrim 0.13.8 into target/llmtrim (a few minutes)")
        subprocess.run(["cargo", "install", "llmtrim", "--version", "0.13.8", "--root", LLMTRIM], check=True)
    env = dict(os.environ, HOME=os.path.join(LLMTRIM, "home"))

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            provider = "anthropic" if self.path.startswith("/v1/messages") else "openai"
            r = subprocess.run([exe, "compress", "--provider", provider], input=body, capture_output=True, env=env)
            sent = r.stdout if r.returncode == 0 and r.stdout.strip() else body
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "host")}
            req = urllib.request.Request(up.url + self.path, data=sent, method="POST", headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=120) as a:
                    status, answer = a.status, a.read()
            except Exception:
                status, answer = 502, b"{}"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", port), H)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    class Handle:
        pid = os.getpid()

        def terminate(self):
            server.shutdown()

    return Handle(), f"http://127.0.0.1:{port}"


def post(url, body, bid, record=True):
    headers = {"Content-Type": "application/json", "x-bench-id": bid, "x-bench-record": "yes" if record else "no"}
    if ROUTE[0] == "/v1/messages":
        headers.update({"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"})
    else:
        headers["Authorization"] = "Bearer sk-bench"
    req = urllib.request.Request(url + ROUTE[0], data=body, method="POST", headers=headers)
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            ok = r.status == 200
    except Exception:
        ok = False
    return ok, time.perf_counter() - t


WORK = os.path.join(ROOT, "target", "bench-serve")


def slug(name):
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


def sessions(crush=True):
    """The sessions, each an Anthropic request file in WORK/sessions: its
    name and path."""
    roots = [os.path.join(ROOT, "fixtures", d) for d in ("claude-code", "cline", "pi", "openhands", "codex")]
    shared = os.path.join(ROOT, "..", "shared", "corpus")
    for d in ("agent-sessions", "swe-agent", "session-share"):
        if os.path.isdir(os.path.join(shared, d)):
            roots.append(os.path.join(shared, d))
    folder = os.path.join(WORK, "sessions")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    seen, out = set(), []

    def keep(name, body):
        path = os.path.join(folder, f"{len(out):02d}-{slug(os.path.basename(name))[:40]}.json")
        with open(path, "w") as f:
            json.dump(body, f)
        out.append((name, path))

    for root in roots:
        for dp, _, fs in os.walk(root):
            for f in sorted(fs):
                if not f.endswith((".json", ".jsonl", ".traj")) or "subagents" in dp:
                    continue
                r = subprocess.run([EXE, "convert", "--to", "anthropic", "-q", os.path.join(dp, f)], capture_output=True)
                if r.returncode != 0 or r.stdout in seen:
                    continue
                try:
                    body = json.loads(r.stdout)
                except ValueError:
                    continue
                seen.add(r.stdout)
                # Priced at the model the prices above are: a log without
                # one sends none.
                body.setdefault("model", "claude-sonnet-4-5")
                if len(body.get("messages", [])) >= 6:
                    keep(os.path.relpath(os.path.join(dp, f), os.path.join(ROOT, "..")), body)
    if crush:
        for name, body in crush_sessions():
            keep(name, body)
    return out


def crush_sessions():
    """Sessions a compressor of tool output has something to do in (issue
    40's fair peer): large JSON arrays (what Headroom's SmartCrusher
    targets), a long build log, search results. In each, the model's next
    answer uses one item from the middle of the output, and the user's
    question names what to look for, so that a compressor that keeps what
    is relevant to the question can keep it."""
    rnd = random.Random(40)
    words = ("parser", "cache", "retry", "socket", "unicode", "render", "config", "migration", "timeout", "index")

    def call(k, name, args):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k:04d}", "name": name, "input": args}]}

    def result(k, text):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k:04d}", "content": text}]}

    def say_(text):
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}

    system = "You are a coding agent working in the repository acme/widget. Use the tools to answer."
    out = []
    # 1. Issues, as a JSON array of 400 objects.
    issues = [{"number": 4000 + i, "title": f"{rnd.choice(words)} {rnd.choice(words)} fails on {rnd.choice(words)}",
               "state": rnd.choice(["open", "closed"]), "labels": [rnd.choice(["bug", "enhancement", "docs"])],
               "assignee": rnd.choice(["ana", "bo", "chen", "dev"]), "comments": rnd.randint(0, 40),
               "updated_at": f"2026-{rnd.randint(1, 11):02d}-{rnd.randint(1, 28):02d}T10:00:00Z"} for i in range(400)]
    target = issues[217]
    target.update(title="crash when saving a file with a unicode name", state="open", assignee="me", labels=["bug"])
    msgs = [{"role": "user", "content": "Which open bug assigned to me is about unicode file names? Then fix it."},
            call(1, "list_issues", {"repo": "acme/widget", "per_page": 400}), result(1, json.dumps(issues)),
            say_(f"Issue #{target['number']} (\"{target['title']}\") is the one, updated {target['updated_at']}. Reading the save path next."),
            call(2, "read_file", {"path": "src/io/save.rs"})]
    lines = [f"{n:4d}  fn save_{n}(path: &Path) -> io::Result<()> {{ write_all(path, b\"{rnd.choice(words)}\") }}" for n in range(1, 600)]
    lines[411] = " 412  let name = path.file_name().unwrap().to_str().expect(\"ascii name\");"
    msgs += [result(2, "\n".join(lines)),
             say_("Line 412 of src/io/save.rs calls to_str().expect(\"ascii name\"), which panics on a non-UTF-8 name."),
             {"role": "user", "content": [{"type": "text", "text": "Good. Now run the build and tell me the first error."}]},
             call(3, "run", {"cmd": "cargo build 2>&1"})]
    log = [f"   Compiling {rnd.choice(words)}-{rnd.choice(words)} v0.{rnd.randint(1, 30)}.{rnd.randint(0, 9)}" for _ in range(1500)]
    log[933] = "error[E0308]: mismatched types --> src/io/save.rs:412:17 expected `&OsStr`, found `&str`"
    msgs += [result(3, "\n".join(log)),
             say_("The first error: error[E0308] at src/io/save.rs:412:17, expected `&OsStr`, found `&str`."),
             {"role": "user", "content": [{"type": "text", "text": "Search the code for other places that assume an ASCII file name."}]},
             call(4, "grep", {"pattern": "to_str\\(\\)", "path": "src"})]
    hits = [f"src/{rnd.choice(words)}/{rnd.choice(words)}_{i}.rs:{rnd.randint(10, 900)}: let s = value.to_str().unwrap_or_default();"
            for i in range(500)]
    hits[288] = "src/io/export_zip.rs:97: let entry = path.file_name().unwrap().to_str().unwrap();"
    msgs += [result(4, "\n".join(hits)),
             say_("One more place assumes an ASCII name: src/io/export_zip.rs line 97 (to_str().unwrap() on file_name)."),
             {"role": "user", "content": [{"type": "text", "text": "Thanks, that is all."}]}]
    out.append(("bench: JSON array, source, build log and search results", {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "messages": msgs}))
    # 2. A metrics API: 300 data points; the answer names the spike.
    points = [{"ts": f"2026-11-20T{h // 60:02d}:{h % 60:02d}:00Z", "p99_ms": rnd.randint(80, 140), "errors": rnd.randint(0, 3),
               "host": f"web-{rnd.randint(1, 9)}"} for h in range(300)]
    points[173].update(p99_ms=4817, errors=212, host="web-7")
    msgs = [{"role": "user", "content": "When did latency spike yesterday, and on which host? Then check that host's deploys."},
            call(1, "query_metrics", {"service": "api", "window": "5h"}), result(1, json.dumps(points)),
            say_(f"The spike: {points[173]['ts']} on web-7, p99 4817 ms with 212 errors. Checking its deploys."),
            call(2, "list_deploys", {"host": "web-7"})]
    deploys = [{"id": f"dep_{rnd.randrange(16**8):08x}", "host": "web-7", "at": f"2026-11-20T{rnd.randint(0, 23):02d}:00:00Z",
                "sha": f"{rnd.randrange(16**7):07x}", "author": rnd.choice(["ana", "bo", "chen"])} for _ in range(120)]
    deploys[64].update(id="dep_5c2e91ab", at="2026-11-20T02:50:00Z", sha="9f3ab27")
    msgs += [result(2, json.dumps(deploys)),
             say_("Deploy dep_5c2e91ab (commit 9f3ab27) went out at 02:50, three minutes before the spike."),
             {"role": "user", "content": [{"type": "text", "text": "Roll it back."}]}]
    out.append(("bench: metrics and deploys (JSON arrays)", {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "messages": msgs}))
    return out


def requests(picks):
    """Each session's requests as the agent sent them, by `ctxclean replay
    --write-requests`: the file names, in call order, per session."""
    came = os.path.join(WORK, "came")
    shutil.rmtree(came, ignore_errors=True)
    subprocess.run([EXE, "replay", "-q", "--jsonl", "--write-requests", came, *[p for _, p in picks]],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = sorted(os.listdir(came)) if os.path.isdir(came) else []
    out = {}
    for name, path in picks:
        # As `replay` names them: the file's stem, the path's hash, the call.
        digest = hashlib.sha256(path.encode()).hexdigest()[:8]
        stem = f"{os.path.splitext(os.path.basename(path))[0]}-{digest}-0-call-"
        out[name] = [f for f in files if f.startswith(stem)]
    return came, out


def tokens(bodies):
    """Each body's tokens (o200k_base, as `ctxclean stats` counts them)."""
    if not bodies:
        return []
    path = os.path.join(ROOT, "target", "bench-serve-bodies.jsonl")
    with open(path, "wb") as f:
        for b in bodies:
            f.write(json.dumps(b).encode() + b"\n")
    r = subprocess.run([EXE, "stats", "--jsonl", "--from", "anthropic", "-q", path], capture_output=True, check=True)
    return [json.loads(l)["tokens"] for l in r.stdout.splitlines()]


def bare(v):
    """A value without `cache_control` markers: where a breakpoint sits does
    not change the content a cache serves."""
    if isinstance(v, dict):
        return {k: bare(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [bare(x) for x in v]
    return v


def common_prefix(prev, cur):
    """The request `cur` with only what it shares with `prev` from the start
    (its system prompt, and the messages up to the first that differs):
    what the stand-in provider bills as a cache read."""
    if prev is None or bare(prev.get("system")) != bare(cur.get("system")):
        return None
    n = 0
    for a, b in zip(prev["messages"], cur["messages"]):
        if bare(a) != bare(b):
            break
        n += 1
    if n == 0 and not cur.get("system"):
        return None
    # A cut at the first message still finds the system prompt in the cache
    # (providers cache tools, then system, then messages).
    return dict(cur, messages=cur["messages"][:n])


def replay(configs, picks, came, calls):
    """Sends every call of every session to every configuration, in turns;
    then writes what each upstream received, by call, in WORK/<config>/."""
    for c in configs:
        c["failed"] = set()
        c["times"] = {}
    for name, _ in picks:
        for f in calls[name]:
            with open(os.path.join(came, f), "rb") as fh:
                data = fh.read()
            for c in configs:
                ok, t = post(c["url"], data, f)
                c["times"][f] = (len(data), t)
                c["errors"] += not ok
                if not ok:
                    c["failed"].add(name)
    for c in configs:
        c["dir"] = os.path.join(WORK, slug(c["name"]))
        shutil.rmtree(c["dir"], ignore_errors=True)
        os.makedirs(c["dir"])
        for bid, body in c["upstream"].received:
            with open(os.path.join(c["dir"], bid), "wb") as fh:
                fh.write(body)


MODEL = ["claude-sonnet-4-5"]


def account(configs, picks, came, calls):
    """Per configuration and session, from `ctxclean replay --forwarded`:
    the one accounting of tokens, cache, dollars, validity and evidence
    the user's own tool gives. And how many bodies each changed."""
    cmd = [EXE, "replay", "-q", "--jsonl", "--model", MODEL[0], *[p for _, p in picks]]
    for c in configs:
        cmd += ["--forwarded", f"{c['name']}={c['dir']}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ctxclean replay failed: {r.stderr}")
    by_path = {p: n for n, p in picks}
    rows = {c["name"]: {} for c in configs}
    for line in r.stdout.splitlines():
        v = json.loads(line)
        if v["recipe"] not in rows:
            continue
        d = rows[v["recipe"]].setdefault(by_path[v["source"]], {
            "requests": 0, "tokens": 0, "cached": 0, "usd": 0.0, "invalid": 0, "evidence": 0, "kept": 0, "changed": 0})
        d["requests"] += 1
        d["tokens"] += v["tokens_sent"]
        d["cached"] += v["cache_read"]
        d["usd"] += v["dollars"] or 0.0
        d["invalid"] += not v["valid"]
        d["evidence"] += v["evidence"]
        d["kept"] += v["kept"]
    for c in configs:
        for name, _ in picks:
            d = rows[c["name"]].get(name)
            for f in calls[name] if d else []:
                got = os.path.join(c["dir"], f)
                if os.path.exists(got) and bare(json.load(open(got))) != bare(json.load(open(os.path.join(came, f)))):
                    d["changed"] += 1
    return [(c["name"], rows[c["name"]]) for c in configs]


def latency(configs, base_body, size, conc, n):
    """Added latency percentiles (ms) of each configuration, against none."""
    out = {}
    for c in configs:
        times = []
        with concurrent.futures.ThreadPoolExecutor(conc) as ex:
            for ok, t in ex.map(lambda i: post(c["url"], base_body, f"lat{i}", record=False), range(n)):
                times.append(t)
                c["errors"] += not ok
        times.sort()
        out[c["name"]] = (times[len(times) // 2] * 1000, times[int(len(times) * 0.99) - 1] * 1000)
    base = out.get("no proxy", (0, 0))
    return {k: (v[0] - base[0], v[1] - base[1]) for k, v in out.items()}


def held_latency(configs, sent):
    """What each proxy added to the sessions' own requests, paired call by
    call with no proxy's time for the same body: p50 and p99 in ms, by the
    request's size (a long session's later requests are the large ones, and
    the ones a proxy holds)."""
    base = configs[0]["times"]
    buckets = [(0, 100_000, "under 100 KB"), (100_000, 300_000, "100-300 KB"), (300_000, 1 << 40, "over 300 KB")]
    say("\nadded latency on the sessions' own requests, ms (p50 / p99), against no proxy:")
    for lo, hi, label in buckets:
        cells = []
        for c in configs[1:]:
            added = sorted(c["times"][f][1] - base[f][1] for f in sent
                           if f in c["times"] and lo <= base[f][0] < hi)
            if added:
                cells.append(f"{c['name']} {added[len(added) // 2] * 1000:.1f} / "
                             f"{added[max(int(len(added) * 0.99) - 1, 0)] * 1000:.1f} ({len(added)} requests)")
        if cells:
            say(f"  {label}: " + ", ".join(cells))


def big_body(tokens_wanted):
    """A conversation of about `tokens_wanted` tokens, tool calls included."""
    msgs, i = [], 0
    while len(json.dumps(msgs)) < tokens_wanted * 4:
        msgs += [{"role": "user", "content": f"step {i}: look at the table " + "data " * 100},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "sql", "input": {"q": "select *"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "row, " * 150}]},
                 {"role": "assistant", "content": f"done {i}"}]
        i += 1
    msgs.append({"role": "user", "content": "and now?"})
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": msgs}).encode()


def rss_mb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main():
    args = sys.argv[1:]
    if "--tap" in args:
        subprocess.run(["cargo", "run", "--release", "-q", "--example", "tap"], cwd=ROOT, check=True)
        return
    n = int(args[args.index("--requests") + 1]) if "--requests" in args else 10000
    if "--recipe" in args:
        RECIPE[:] = args[args.index("--recipe") + 1].split()
    if "--serve-flags" in args:
        SERVE_FLAGS[:] = args[args.index("--serve-flags") + 1].split()
    if not os.path.exists(EXE):
        raise SystemExit("build first: cargo build --release")
    long = "--long" in args
    if long:
        # The long sessions are OpenAI chat requests, priced at the model
        # they ran on; the recipe's budget is theirs (bench/replay.py --long).
        ROUTE[0] = "/v1/chat/completions"
        MODEL[0] = "deepseek-chat"
        if "--recipe" not in args:
            RECIPE[:] = ["compact-tools", "--keep-last", "3", "then", "trim", "--max-tokens", "32000"]
    peers = [] if "--no-headroom" in args else ["headroom cache", "headroom token"]
    peers += [] if "--no-llmtrim" in args else ["llmtrim"]
    configs, procs = [], []
    for name in ["no proxy", "ctxclean"] + peers:
        up = Upstream()
        c = {"name": name, "upstream": up, "errors": 0}
        if name == "no proxy":
            c["url"] = up.url
        elif name == "ctxclean":
            p, c["url"] = start_ctxclean(up)
            c["pid"] = p.pid
            procs.append(p)
        elif name == "llmtrim":
            p, c["url"] = start_llmtrim(up, 18787 + len(procs))
            c["pid"] = p.pid
            procs.append(p)
        else:
            p, c["url"] = start_headroom(up, name.split()[1], 18787 + len(procs))
            c["pid"] = p.pid
            procs.append(p)
        configs.append(c)
    try:
        if long:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from replay import long_files
            picks = [(os.path.basename(f).split(".")[0], os.path.join(ROOT, f)) for f in long_files()]
        else:
            picks = sessions(crush="--no-crush" not in args)
        came, calls = requests(picks)
        picks = [p for p in picks if calls[p[0]]]
        # A request the same as one sent before may be answered from a
        # proxy's own response cache and never reach the upstream: such
        # sessions are left out, so that every configuration is accounted
        # on the same calls.
        seen, unique = set(), []
        for name, path in picks:
            bodies = [open(os.path.join(came, f), "rb").read() for f in calls[name]]
            if any(b in seen for b in bodies):
                say(f"left out: {name} (a request the same as one sent before)")
            else:
                unique.append((name, path))
            seen.update(bodies)
        picks = unique
        say(f"replaying {len(picks)} sessions, {sum(len(calls[n]) for n, _ in picks)} requests each way")
        replay(configs, picks, came, calls)
        failed = set().union(*(c["failed"] for c in configs))
        for c in configs:
            say(f"{c['name']}: {c['errors']} failed requests in the replay")
        kept = [p for p in picks if p[0] not in failed]
        rows = account(configs, kept, came, calls)
        report(rows, kept, failed)
        sent = {f for n, _ in kept for f in calls[n]}
        if not long:
            billed_report(configs, sent)
        if long:
            held_latency(configs, sent)
        if "--quick" in args or long:
            return
        say("\nadded latency, ms (p50 / p99), against no proxy:")
        for size in (10_000, 100_000):
            body = big_body(size)
            for conc in (1, 8, 32):
                res = latency(configs, body, size, conc, max(conc * 10, 100 if size == 10_000 else 40))
                say(f"  {size // 1000}k tokens, {conc:>2} clients: " + ", ".join(
                    f"{k} {v[0]:.1f} / {v[1]:.1f}" for k, v in res.items() if k != "no proxy"))
        body = big_body(10_000)
        for c in configs:
            if c["name"] == "no proxy":
                continue
            count = n if c["name"] == "ctxclean" else max(n // 5, 100)
            before = c["errors"]
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                for ok, _ in ex.map(lambda i: post(c["url"], body, f"err{i}", record=False), range(count)):
                    c["errors"] += not ok
            say(f"{c['name']}: {c['errors'] - before} errors in {count} requests of 10k tokens; "
                f"peak RSS {rss_mb(c['pid']):.0f} MB")
    finally:
        for p in procs:
            p.terminate()


def billed_report(configs, sent):
    """Billed input against ctxclean's count, per configuration; and
    ctxclean's log against what its upstream billed."""
    say("\nbilled against counted (the upstream bills with cl100k_base, ctxclean counts with o200k_base):")
    say("| | billed input | counted by ctxclean | billed / counted |")
    say("|---|---|---|---|")
    for c in configs:
        got = [(bid, json.loads(b)) for bid, b in c["upstream"].received if bid in sent]
        counted = sum(tokens([b for _, b in got]))
        billed = sum(c["upstream"].billed.get(bid, 0) for bid, _ in got)
        say(f"| {c['name']} | {billed:,} | {counted:,} | {billed / max(counted, 1):.3f} |")
        if c["name"] == "ctxclean" and os.path.exists(LOG):
            lines = [json.loads(l) for l in open(LOG) if l.strip()]
            logged = [l for l in lines if l.get("usage") == "billed"]
            b = sum(l["billed"]["input"] + l["billed"]["cache_read"] + l["billed"]["cache_write"] for l in logged)
            n = sum(l.get("tokens_after", 0) for l in logged)
            same = "the same as" if b == billed else "NOT the same as"
            say(f"  ctxclean's log: {len(logged)} answers' usage read, {b:,} billed input ({same} its upstream's), "
                f"{n:,} counted, {b / max(n, 1):.3f} billed per counted")


def report(rows, picks, failed):
    say("\nper session (from `ctxclean replay --forwarded`): tokens received · bodies changed · cached tokens · "
        "invalid · evidence kept · cost")
    if failed:
        say(f"(left out: {len(failed)} sessions a proxy failed requests of: {', '.join(sorted(failed))})")
    keys = ("requests", "tokens", "cached", "usd", "invalid", "evidence", "kept", "changed")
    totals = {}
    for name, per in rows:
        t = totals.setdefault(name, dict.fromkeys(keys, 0))
        for d in per.values():
            for k in keys:
                t[k] += d[k]
    for s, _ in picks:
        cells = []
        for name, per in rows:
            d = per.get(s)
            if d:
                cells.append(f"{name}: {d['tokens']:,} · {d['changed']}/{d['requests']} · {d['cached']:,} · {d['invalid']} · "
                             f"{d['kept']}/{d['evidence']} · ${d['usd']:.4f}")
        say(f"  {s}\n    " + "\n    ".join(cells))
    base = dict(rows[0][1]) if rows and rows[0][0] == "no proxy" else {}
    for name, per in rows[1:]:
        if totals[name]["changed"] == 0:
            say(f"{name}: changed nothing: every body went on as it came (a passthrough, not a contender)")
            continue
        worse_sessions = [s for s, _ in picks if s in per and s in base and per[s]["usd"] > base[s]["usd"] + 1e-9]
        say(f"{name}: changed {totals[name]['changed']} of {totals[name]['requests']} bodies; costs more than no proxy "
            f"on {len(worse_sessions)} of {len(picks)} sessions" + (f" ({', '.join(worse_sessions)})" if worse_sessions else ""))
    say("\n| | tokens received | bodies changed | cost with caching | tokens a prompt cache serves | "
        "bodies the provider would reject | evidence kept |")
    say("|---|---|---|---|---|---|---|")
    for name, t in totals.items():
        say(f"| {name} | {t['tokens']:,} | {t['changed']} of {t['requests']} | ${t['usd']:.4f} | "
            f"{t['cached']:,} ({t['cached'] / max(t['tokens'], 1):.0%}) | {t['invalid']} | "
            f"{t['kept'] / max(t['evidence'], 1):.1%} |")


if __name__ == "__main__":
    main()
