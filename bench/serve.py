#!/usr/bin/env python3
"""`ctxclean serve` against no proxy and Headroom's proxy, in one run.

    cargo build --release && python3 bench/serve.py [--requests 10000] [--no-headroom]
        [--recipe "compact-tools --keep-last 3 then trim --max-tokens 8000"] [--quick]
    python3 bench/serve.py --tap

--tap: what reading an answer's usage costs (examples/tap.rs: streamed
10k-token answers of each provider fed through the proxy's tap in 4 KiB
chunks; issue 41's target is 0.2 ms at p50 on the way).

Replays real agent sessions turn by turn (each request is the session up to
one model call, as an agent sends it) through

  (a) no proxy, (b) `ctxclean serve`, (c) Headroom's proxy in its `cache`
  and (d) `token` modes (`pip install "headroom-ai[proxy]"`, into target/),

all in front of the same kind of loopback upstream (one per configuration,
each recording what it receives), one request at a time, the configurations
taking turns. Reports, per session and in total: the tokens the upstream
received, the share of requests whose body keeps the previous body as its
prefix, the tokens a provider's prompt cache would serve, the bodies the
provider would reject (`ctxclean validate`, beyond what the session itself
had), and what the session costs at claude-sonnet-4-5's prices from the
LiteLLM snapshot ctxclean ships (a request's prefix shared with the previous
request read from the cache, the rest written to it). Then the latency each
proxy adds (p50/p99) at 1, 8 and 32 concurrent clients for 10k- and
100k-token bodies, the errors in --requests requests, and each proxy's peak
RSS.

Billed against counted: the upstream answers each replayed request with
the usage a provider would bill, counted with a tokenizer that is not
ctxclean's (cl100k_base, standing in for a provider's own): the prefix
shared with the session's previous request as a cache read, the rest as a
cache write. Each configuration's billed input is set against ctxclean's
count (o200k_base) of the bodies the upstream received, and ctxclean's
own log (its `billed` and `tokens_after`) is checked to say the same.

Sessions: the agent sessions of fixtures/ (Claude Code, Cline, pi,
OpenHands, Codex), and of ../shared/corpus when it is there, converted to
Anthropic requests by `ctxclean convert --to anthropic`.
"""

import concurrent.futures
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.path.join(ROOT, "target", "release", "ctxclean")
HEADROOM_VENV = os.path.join(ROOT, "target", "headroom-venv")
RECIPE = ["compact-tools", "--keep-last", "3", "--max-result-tokens", "500", "then", "trim", "--max-tokens", "8000"]
SERVE_FLAGS = []
PRICES = json.load(open(os.path.join(ROOT, "data", "models.json")))["models"]["claude-sonnet-4-5"]


def say(msg):
    print(msg, flush=True)


_BILL_CACHE = {}
_BILL_LOCK = threading.Lock()


def provider_tokens(body):
    """A body's tokens as the stand-in provider bills them (cl100k_base)."""
    key = hash(json.dumps(body, sort_keys=True))
    with _BILL_LOCK:
        if key in _BILL_CACHE:
            return _BILL_CACHE[key]
    r = subprocess.run([EXE, "stats", "--jsonl", "--from", "anthropic", "--tokenizer", "cl100k_base", "-q"],
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


class Upstream:
    """Records bodies; answers as Anthropic does, not streamed, with the
    usage the stand-in provider bills for a replayed request."""

    def __init__(self):
        self.received = []
        self.billed = {}
        rec, billed, previous = self.received, self.billed, {}
        plain = answer_for({"input_tokens": 1, "output_tokens": 1})

        def bill(bid, body):
            session = bid.rsplit("#", 1)[0]
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
                answer = plain
                if self.headers.get("x-bench-record") != "no":
                    bid = self.headers.get("x-bench-id")
                    rec.append((bid, body))
                    answer = bill(bid, body)
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
    env = dict(os.environ, ANTHROPIC_TARGET_API_URL=up.url, OPENAI_TARGET_API_URL=up.url + "/v1",
               HEADROOM_TELEMETRY="off", HEADROOM_BEACON="off", DO_NOT_TRACK="1")
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


def post(url, body, bid, record=True):
    req = urllib.request.Request(url + "/v1/messages", data=body, method="POST", headers={
        "Content-Type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01",
        "x-bench-id": bid, "x-bench-record": "yes" if record else "no"})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            ok = r.status == 200
    except Exception:
        ok = False
    return ok, time.perf_counter() - t


def sessions():
    roots = [os.path.join(ROOT, "fixtures", d) for d in ("claude-code", "cline", "pi", "openhands", "codex")]
    shared = os.path.join(ROOT, "..", "shared", "corpus")
    for d in ("agent-sessions", "swe-agent", "session-share"):
        if os.path.isdir(os.path.join(shared, d)):
            roots.append(os.path.join(shared, d))
    seen, out = set(), []
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
                    out.append((os.path.relpath(os.path.join(dp, f), os.path.join(ROOT, "..")), body))
    return out


def turns(body):
    msgs = body["messages"]
    for k in range(len(msgs)):
        if msgs[k]["role"] == "user" and (k + 1 == len(msgs) or msgs[k + 1]["role"] != "user"):
            yield dict(body, messages=msgs[:k + 1])


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
    (its system prompt, and the messages up to the first that differs)."""
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


def replay(configs, picks):
    """Sends every turn of every session to every configuration, in turns."""
    sent = {}
    for c in configs:
        c["failed"] = set()
    for name, body in picks:
        for t, req in enumerate(turns(body)):
            data = json.dumps(req).encode()
            bid = f"{name}#{t}"
            sent[bid] = req
            for c in configs:
                ok, _ = post(c["url"], data, bid)
                c["errors"] += not ok
                if not ok:
                    c["failed"].add(name)
    return sent


def account(configs, picks, sent):
    rows = []
    for c in configs:
        got = {bid: json.loads(b) for bid, b in c["upstream"].received if bid in sent}
        per = {}
        order = [bid for bid in sent if bid in got]
        totals = tokens([got[b] for b in order])
        prefixes = []
        prev_by_session = {}
        for bid in order:
            s = bid.rsplit("#", 1)[0]
            prefixes.append(common_prefix(prev_by_session.get(s), got[bid]))
            prev_by_session[s] = got[bid]
        pre_tok = tokens([p for p in prefixes if p is not None])
        it = iter(pre_tok)
        for bid, total, p in zip(order, totals, prefixes):
            s = bid.rsplit("#", 1)[0]
            cached = next(it) if p is not None else 0
            d = per.setdefault(s, {"requests": 0, "tokens": 0, "cached": 0, "kept_prefix": 0, "usd": 0.0, "invalid": 0})
            d["requests"] += 1
            d["tokens"] += total
            d["cached"] += cached
            d["kept_prefix"] += p is not None and len(p["messages"]) == len(prev_for(order, bid, got))
            d["usd"] += cached * PRICES["cache_read"] + (total - cached) * PRICES["cache_write"]
            d["invalid"] += worse(sent[bid], got[bid])
        rows.append((c["name"], per))
    return rows


def prev_for(order, bid, got):
    s, t = bid.rsplit("#", 1)
    prev = f"{s}#{int(t) - 1}"
    return got[prev]["messages"] if prev in got else [None]


def problems(body):
    r = subprocess.run([EXE, "validate", "--json", "--provider", "anthropic", "--from", "anthropic", "-q"],
                       input=json.dumps(body).encode(), capture_output=True)
    try:
        return json.loads(r.stdout)["problems"]
    except (ValueError, KeyError):
        return [{"code": "unreadable"}]


def worse(sent, got):
    if sent == got:
        return 0
    count = lambda ps, code: sum(1 for p in ps if p["code"] == code)
    a, b = problems(sent), problems(got)
    return int(any(count(b, p["code"]) > count(a, p["code"]) for p in b))


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
    configs, procs = [], []
    for name in ["no proxy", "ctxclean"] + ([] if "--no-headroom" in args else ["headroom cache", "headroom token"]):
        up = Upstream()
        c = {"name": name, "upstream": up, "errors": 0}
        if name == "no proxy":
            c["url"] = up.url
        elif name == "ctxclean":
            p, c["url"] = start_ctxclean(up)
            c["pid"] = p.pid
            procs.append(p)
        else:
            p, c["url"] = start_headroom(up, name.split()[1], 18787 + len(procs))
            c["pid"] = p.pid
            procs.append(p)
        configs.append(c)
    try:
        picks = sessions()
        say(f"replaying {len(picks)} sessions, {sum(1 for _, b in picks for _ in turns(b))} requests each way")
        sent = replay(configs, picks)
        rows = account(configs, picks, sent)
        failed = set().union(*(c["failed"] for c in configs))
        for c in configs:
            say(f"{c['name']}: {c['errors']} failed requests in the replay")
        report(rows, [p for p in picks if p[0] not in failed], failed)
        billed_report(configs, sent)
        if "--quick" in args:
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
    say("\nper session: tokens received · requests keeping the previous prefix · cached tokens · invalid · cost")
    if failed:
        say(f"(left out of the totals: {len(failed)} sessions a proxy failed requests of: {', '.join(sorted(failed))})")
    totals = {}
    kept = {s for s, _ in picks}
    for name, per in rows:
        t = totals.setdefault(name, {"requests": 0, "tokens": 0, "cached": 0, "kept_prefix": 0, "usd": 0.0, "invalid": 0})
        for s, d in per.items():
            if s not in kept:
                continue
            for k in t:
                t[k] += d[k]
    for s, _ in picks:
        cells = []
        for name, per in rows:
            d = per.get(s)
            if d:
                cells.append(f"{name}: {d['tokens']:,} · {d['kept_prefix']}/{d['requests']} · {d['cached']:,} · {d['invalid']} · ${d['usd']:.4f}")
        say(f"  {s}\n    " + "\n    ".join(cells))
    base = dict(rows[0][1]) if rows and rows[0][0] == "no proxy" else {}
    for name, per in rows[1:]:
        worse_sessions = [s for s, _ in picks if s in per and s in base and per[s]["usd"] > base[s]["usd"] + 1e-9]
        say(f"{name}: costs more than no proxy on {len(worse_sessions)} of {len(picks)} sessions"
            + (f" ({', '.join(worse_sessions)})" if worse_sessions else ""))
    say("\n| | tokens received | requests keeping the prefix | cached tokens | invalid bodies | cost (claude-sonnet-4-5, with caching) |")
    say("|---|---|---|---|---|---|")
    for name, t in totals.items():
        share = t["kept_prefix"] / max(t["requests"], 1)
        say(f"| {name} | {t['tokens']:,} | {share:.0%} | {t['cached']:,} ({t['cached'] / max(t['tokens'], 1):.0%}) | {t['invalid']} | ${t['usd']:.4f} |")


if __name__ == "__main__":
    main()
