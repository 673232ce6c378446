#!/usr/bin/env python3
"""Inputs of hostile shape, at two sizes: does any command grow faster than
its input? (The engineering standard "think about size": a 10-message test
hides a quadratic loop.)

Each shape is made at a size and at ten (or four) times it, and each
command is timed on both, CPU time of the process; a ratio well past the
sizes' is flagged `QUADRATIC?`. The shapes:

  messages   10k and 100k OpenAI messages, converted to every request format
  calls      one turn of 8k and 32k parallel calls and their results, in
             every request format
  parts      one message of 10k and 40k content parts, in every request format
  records    every JSONL fixture's records repeated to 1 and 10 MB
  lists      every JSON fixture's largest list repeated to 0.3 and 3 MB

    cargo build --release && python3 bench/shapes.py [--only calls]

On 2026-11-30 it found five quadratic paths (many calls without ids paired,
Cline's XML calls, Responses validated, LangChain written back,
`compact-tools --max-total-tokens`): see docs/robustness.md.
"""

import argparse
import copy
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "ctxclean")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402

REQUEST_FORMATS = ["openai", "anthropic", "responses", "gemini", "langchain", "sharegpt", "hf-chat"]
COMMANDS = [["stats"], ["filter", "--previous-cycles"], ["compact-tools", "--keep-last", "3"],
            ["trim", "--max-tokens", "4000"], ["validate", "--request"],
            ["summarize", "--threshold", "1000"], ["convert", "--to", "anthropic"]]
LOG_COMMANDS = [["stats"], ["filter", "--previous-cycles"], ["compact-tools"],
                ["trim", "--max-tokens", "4000"], ["validate"]]


def cpu(cmd):
    """CPU seconds of a command, its exit status (`TIMEOUT` past 300 s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            timeout=300).returncode
    except subprocess.TimeoutExpired:
        rc = "TIMEOUT"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, rc


def compare(name, commands, small, big, growth, extra=()):
    for c in commands:
        s, rs = cpu([BIN, *c, *extra, small])
        b, rb = cpu([BIN, *c, *extra, big])
        ratio = b / s if s > 0.02 else 0.0
        flag = "  QUADRATIC?" if rb == "TIMEOUT" or (ratio > 2.5 * growth and b > 0.3) else ""
        print(f"{name:38} {' '.join(c):28} {s:7.2f} {b:7.2f} {ratio:6.1f}{flag}", flush=True)


def converted(make, n, fmt, tmp):
    src = os.path.join(tmp, f"src-{n}.json")
    make(n, src)
    out = os.path.join(tmp, f"{fmt}-{n}.json")
    with open(out, "w") as f:
        subprocess.run([BIN, "convert", "-q", "--to", fmt, src], stdout=f, check=True)
    return out


def parts(k, path):
    ps = [{"type": "text", "text": f"part {i} " + "w " * 5} for i in range(k)]
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": ps},
            {"role": "assistant", "content": ps}, {"role": "user", "content": "again"}]
    with open(path, "w") as f:
        json.dump({"model": "gpt-4o", "messages": msgs}, f)


def messages(n, path):
    scaling.write("openai", n, path)


def request_shapes(kind, tmp):
    make, sizes = {"messages": (messages, (10_000, 100_000)),
                   "calls": (scaling.openai_parallel, (8_000, 32_000)),
                   "parts": (parts, (10_000, 40_000))}[kind]
    for fmt in REQUEST_FORMATS:
        small, big = (converted(make, n, fmt, tmp) for n in sizes)
        compare(f"{kind}, {fmt}", COMMANDS, small, big, sizes[1] / sizes[0], ("--from", fmt))


def format_of(path):
    r = subprocess.run([BIN, "stats", "--json", path], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["conversations"][0]["format"]
    except (ValueError, KeyError, IndexError):
        return None


def records(tmp):
    seen = set()
    for f in sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.jsonl"), recursive=True)):
        fmt = format_of(f)
        if fmt is None or fmt in seen:
            continue
        lines = [line for line in open(f, encoding="utf-8", errors="replace").read().split("\n") if line.strip()]
        if len(lines) < 3:
            continue
        seen.add(fmt)
        size = sum(len(line) for line in lines)
        paths = []
        for target in (1_000_000, 10_000_000):
            path = os.path.join(tmp, f"records-{len(paths)}.jsonl")
            with open(path, "w") as out:
                out.write("\n".join(lines * max(1, target // size)) + "\n")
            paths.append(path)
        compare(f"records, {fmt} ({os.path.basename(f)[:16]})", LOG_COMMANDS, *paths, 10, ("--from", fmt))


def biggest_list(v, path=()):
    """The path of the largest list of objects in a JSON value, by its text."""
    best = (0, None)
    if isinstance(v, list):
        if len(v) >= 2 and all(isinstance(x, dict) for x in v):
            best = (len(json.dumps(v)), path)
        items = enumerate(v[:50])
    elif isinstance(v, dict):
        items = v.items()
    else:
        return best
    for k, x in items:
        best = max(best, biggest_list(x, path + (k,)), key=lambda t: t[0])
    return best


def lists(tmp):
    seen = set()
    for f in sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.json"), recursive=True)):
        if "/malformed/" in f or "/serve/" in f:
            continue
        fmt = format_of(f)
        if fmt is None or fmt in seen:
            continue
        try:
            doc = json.load(open(f))
        except ValueError:
            continue
        size, where = biggest_list(doc)
        if where is None or size < 200:
            continue
        seen.add(fmt)
        paths = []
        for target in (300_000, 3_000_000):
            d = copy.deepcopy(doc)
            items = d
            for k in where:
                items = items[k]
            items[:] = items * max(1, target // size)
            path = os.path.join(tmp, f"lists-{len(paths)}.json")
            with open(path, "w") as out:
                json.dump(d, out)
            paths.append(path)
        compare(f"lists, {fmt} ({os.path.basename(f)[:16]})", LOG_COMMANDS, *paths, 10, ("--from", fmt))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["messages", "calls", "parts", "records", "lists"])
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    print(f"{'shape':38} {'command':28} {'small s':>7} {'big s':>7} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ["messages", "calls", "parts", "records", "lists"]:
            if args.only not in (None, kind):
                continue
            if kind in ("messages", "calls", "parts"):
                request_shapes(kind, tmp)
            elif kind == "records":
                records(tmp)
            else:
                lists(tmp)


if __name__ == "__main__":
    main()
