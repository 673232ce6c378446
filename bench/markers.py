#!/usr/bin/env python3
"""Agents' own cache markers through the proxy: what `serve` is billed, against
no proxy and against what `replay` predicted (issue 57).

    cargo build --release && python3 bench/markers.py [--recipe "compact-tools --keep-last 3"]

Each Claude Code and Cline session of fixtures/ (and ../shared/corpus when
it is there) with at least 3 model calls is rebuilt by `ctxclean replay
--write-requests` as the agent sends it (its `cache_control` markers
placed as the agent places them: Claude Code's move to the newest block on
every call), then sent call by call straight to one bench/upstream.py and
through `ctxclean serve -- RECIPE` to another, both billing as Anthropic
does (markers, minimums, writes). Per session: what each upstream billed,
and what `replay` predicted for the recipe. The table is what
docs/benchmarks.md publishes.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.path.join(ROOT, "target", "release", "ctxclean")
WORK = os.path.join(ROOT, "target", "bench-markers")
MODEL = "claude-sonnet-4-5"
HEADERS = {"Content-Type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "k"}


def sessions():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from replay import walk_sessions
    found = walk_sessions(("claude-code", "cline"),
                          ("claude-code-viewer", "session-share", "agent-sessions/claude", "claude-code-transcripts"),
                          (".json", ".jsonl"))
    return [os.path.join(ROOT, f) for f in found]


def start(args):
    p = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    m = re.search(r"listening on (http://[\d.:]+)", p.stderr.readline())
    if not m:
        raise SystemExit(f"{args[0]} did not start")
    return p, m.group(1)


def post(url, body):
    req = urllib.request.Request(url + "/v1/messages", data=body, method="POST", headers=HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            return True
    except urllib.error.HTTPError as e:
        print(f"(left out: the proxy answered {e.code}: {e.read()[:160]!r})", file=sys.stderr)
        return False


def billed(url):
    with urllib.request.urlopen(url + "/bill", timeout=30) as r:
        return json.load(r)["dollars"] or 0.0


def one(path, recipe):
    """(calls, no proxy $, proxy $, replay's prediction $), or None."""
    requests = os.path.join(WORK, "requests")
    shutil.rmtree(requests, ignore_errors=True)
    r = subprocess.run([EXE, "replay", "-q", "--jsonl", path, "--model", MODEL, "--write-requests", requests,
                        "--", *recipe], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.isdir(requests):
        return None
    calls = [json.loads(l) for l in r.stdout.splitlines()]
    if sum(c["recipe"] == "none" for c in calls) < 3:
        return None
    # Replay's bill of the recipe's calls, each answered with one token as
    # the upstreams answer (replay prices the outputs the log recorded).
    p = json.load(open(os.path.join(ROOT, "core", "data", "models.json")))["models"][MODEL]
    predicted = sum((c["billed_in"] - c["cache_read"] - c["cache_write"]) * p["input"] + c["cache_read"] * p["cache_read"]
                    + c["cache_write"] * p["cache_write"] + p["output"]
                    for c in calls if c["recipe"] == " ".join(recipe))
    bodies = [open(os.path.join(requests, f), "rb").read() for f in sorted(os.listdir(requests))]
    if not all(json.loads(b).get("messages") for b in bodies):
        return None
    upstream = [sys.executable, os.path.join(ROOT, "bench", "upstream.py"), "--port", "0", "--ctxclean", EXE,
                "--model", MODEL]
    direct, direct_url = start(upstream)
    through, through_url = start(upstream)
    proxy, proxy_url = start([EXE, "serve", "--upstream", through_url, "--listen", "127.0.0.1:0", "--model", MODEL,
                              "--log", os.path.join(WORK, "serve.log"), "--", *recipe])
    try:
        for body in bodies:
            post(direct_url, body)
            if not post(proxy_url, body):
                return None
        return len(bodies), billed(direct_url), billed(through_url), predicted
    finally:
        for p in (proxy, direct, through):
            p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipe", default="compact-tools --keep-last 3 then trim --max-tokens 8000")
    args = ap.parse_args()
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release")
    os.makedirs(WORK, exist_ok=True)
    recipe = args.recipe.split()
    print(f"recipe: {args.recipe}; {MODEL} prices; each upstream bills as Anthropic does")
    print()
    print("| session | calls | no proxy | through ctxclean | against no proxy | replay predicted |")
    print("|---|---|---|---|---|---|")
    totals = [0, 0.0, 0.0, 0.0]
    for path in sessions():
        got = one(path, recipe)
        if got is None:
            continue
        calls, came, spent, predicted = got
        totals = [totals[0] + calls, totals[1] + came, totals[2] + spent, totals[3] + predicted]
        name = os.path.relpath(path, os.path.join(ROOT, ".."))
        print(f"| {name} | {calls} | ${came:.4f} | ${spent:.4f} | {spent / max(came, 1e-12):.1%} | ${predicted:.4f} |")
    calls, came, spent, predicted = totals
    print(f"| **all** | {calls} | ${came:.4f} | ${spent:.4f} | {spent / max(came, 1e-12):.1%} | ${predicted:.4f} |")


if __name__ == "__main__":
    main()
