#!/usr/bin/env python3
"""Speed where users feel it (issue 19): each figure next to its target.

Every figure is a median over interleaved rounds of CPU time (user + sys of
the ctxclean process), which is steadier than wall time on a shared machine;
memory is the peak RSS (max over rounds). Inputs are generated, seeded:

1. `summarize --threshold 8000` on one OpenAI conversation of 1k / 10k / 100k
   messages, against `stats` on the same document (target: 100k summarize
   within 2x stats; linear scaling).
2. `convert` and `filter --previous-cycles` on the 30 MB benchmark corpus,
   default (summary line) against `-q` (target: within 1.3x).
3. `trim --max-tokens 500 --out-dir` on 5,000 two-conversation JSONL files of
   about 4 KB, against the same run to standard output (target: within 2x).
4. A 200 MB single JSON document (one OpenAI conversation) against the same
   messages as one-conversation-per-line JSONL: `convert -q` MB/s (target:
   document >= 70% of JSONL) and the document's peak RSS (target: <= 3x its
   size). Two documents: 1.5M tiny generated turns (about 130 bytes of JSON
   each, the worst case for what each message costs), and about 200k messages
   of the benchmark corpus (about 1 KB each, nearer the issue's document of
   58,951 messages in 200 MB).
5. A 300 MB Claude Code session (one message per line) against the same
   messages as one JSON document (target: the log >= 50% of the document's
   MB/s).
6. Exact counting, `stats -q -j1` on the 30 MB corpus in MB/s per core
   (target >= 50); counting alone, the text's MB over what exact counting
   adds to `--tokenizer approx` (target >= 140 MB/s, issue 43); and `-j2`
   CPU time against `-j1` (target <= 1.15x).
7. A streamed JSONL of 4M small conversations (about 500 MB): peak RSS of
   convert, filter, trim and stats (target <= 200 MB each).

Needs GNU time (`/usr/bin/time`, Debian package `time`). Run from the
repository root after `cargo build --release`:

    python3 bench/speed.py [--rounds 3] [--data DIR] [--only 1,2,...]

Generated inputs are kept in DIR (default: a temporary directory) for reruns.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "ctxclean")
sys.path.insert(0, os.path.join(ROOT, "bench"))

import scaling  # noqa: E402  (the long-conversation generators)


def run(cmd, stdout=subprocess.DEVNULL):
    """CPU seconds (user + sys) and peak RSS in MB of one run, as GNU time
    measures them: the rusage of a child forked from this (large) Python
    process would count the memory it inherited before exec."""
    with tempfile.NamedTemporaryFile("r") as t:
        proc = subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%U %S %M", *cmd],
                              stdout=stdout, stderr=subprocess.DEVNULL)
        if proc.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}")
        user, sys_, rss = t.read().split()[-3:]
    return float(user) + float(sys_), int(rss) / 1024


def rounds(cmds, n, before=None):
    """Runs each command n times, interleaved; medians of CPU, max of RSS."""
    cpu = {k: [] for k in cmds}
    rss = {k: 0.0 for k in cmds}
    for _ in range(n):
        for k, cmd in cmds.items():
            if before:
                before(k)
            c, m = run(cmd)
            cpu[k].append(c)
            rss[k] = max(rss[k], m)
    return {k: statistics.median(v) for k, v in cpu.items()}, rss


def line(what, value, target, ok):
    mark = "ok" if ok else "NOT MET"
    print(f"  {what:58} {value:>18}   target {target:14} {mark}", flush=True)


def mb(path):
    return os.path.getsize(path) / 1e6


def corpus30(data):
    path = os.path.join(data, "corpus30.jsonl")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), path,
                        "--mb", "30", "--seed", "7"], check=True)
    return path


def summarize(data, n):
    print("1. summarize on one long conversation, against stats", flush=True)
    big = None
    for size in (1_000, 10_000, 100_000):
        path = os.path.join(data, f"openai-{size}.json")
        if not os.path.exists(path):
            scaling.write("openai", size, path)
        cpu, _ = rounds({
            "summarize": [BIN, "summarize", "-q", "--threshold", "8000", path],
            "stats": [BIN, "stats", "-q", path],
        }, n)
        ratio = cpu["summarize"] / cpu["stats"]
        print(f"  {size:>7,} messages: summarize {cpu['summarize']:.2f} s, stats {cpu['stats']:.2f} s",
              flush=True)
        if size == 100_000:
            big = ratio
        if size == 1_000:
            base = cpu["summarize"]
        if size == 100_000:
            scale = cpu["summarize"] / base
    line("summarize 100k / stats 100k (CPU)", f"{big:.2f}x", "<= 2x", big <= 2)
    line("summarize 100k / 1k (CPU; linear is ~100x)", f"{scale:.0f}x", "<= 200x", scale <= 200)


def summary_line(data, n):
    print("2. the summary line against -q (30 MB corpus)", flush=True)
    path = corpus30(data)
    for name, cmd in (("convert", ["convert"]), ("filter --previous-cycles", ["filter", "--previous-cycles"])):
        cpu, _ = rounds({
            "default": [BIN, *cmd, path],
            "quiet": [BIN, *cmd, "-q", path],
        }, n)
        r = cpu["default"] / cpu["quiet"]
        line(f"{name}: default / -q (CPU)", f"{cpu['default']:.2f}/{cpu['quiet']:.2f} = {r:.2f}x",
             "<= 1.3x", r <= 1.3)


def out_dir(data, n):
    print("3. --out-dir on 5,000 small files, against standard output", flush=True)
    src = os.path.join(data, "many")
    if not os.path.exists(src):
        os.makedirs(src)
        msgs = scaling.turns(14)
        for i in range(5000):
            conv = {"messages": [{**m, "content": f"{m['content']} #{i}"} if isinstance(m.get("content"), str)
                                 else m for m in msgs]}
            with open(os.path.join(src, f"c{i:04d}.jsonl"), "w") as f:
                f.write(json.dumps(conv) + "\n" + json.dumps(conv) + "\n")
    # Each run writes into a folder never used before (reusing a deleted one
    # makes ext4 hunt for inodes, which would time the file system).
    outs = os.path.join(data, "outs")
    os.makedirs(outs, exist_ok=True)
    cpu_o, cpu_s = [], []
    for r in range(n):
        dest = os.path.join(outs, f"run{os.getpid()}-{r}")
        c, _ = run([BIN, "trim", "--max-tokens", "500", "-q", "--out-dir", dest, src])
        cpu_o.append(c)
        c, _ = run([BIN, "trim", "--max-tokens", "500", "-q", src])
        cpu_s.append(c)
    o, s = statistics.median(cpu_o), statistics.median(cpu_s)
    line("trim --out-dir / to stdout (CPU)", f"{o:.2f}/{s:.2f} = {o / s:.2f}x", "<= 2x", o / s <= 2)


def document(data, n):
    print("4. a 200 MB JSON document against the same messages as JSONL", flush=True)
    doc = os.path.join(data, "doc200.json")
    jsonl = os.path.join(data, "doc200.jsonl")
    if not os.path.exists(doc):
        msgs = scaling.turns(1_500_000)
        with open(doc, "w") as f:
            json.dump({"messages": msgs}, f)
        with open(jsonl, "w") as f:
            for k in range(0, len(msgs), 10):
                f.write(json.dumps({"messages": msgs[k:k + 10]}) + "\n")
    compare_document("tiny turns", doc, jsonl, n)
    # The benchmark corpus's messages (tool calls, long results, non-ASCII
    # text) gathered into one conversation of about 200 MB.
    doc = os.path.join(data, "corpus200.json")
    jsonl = os.path.join(data, "corpus200.jsonl")
    if not os.path.exists(doc):
        corpus = os.path.join(data, "corpus100.jsonl")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), corpus,
                        "--mb", "100", "--seed", "7"], check=True)
        with open(corpus) as f:
            lines = f.readlines()
        msgs, size = [], 0
        while size < 200e6:
            for text in lines:
                msgs.extend(json.loads(text).get("messages") or [])
                size += len(text)
                if size >= 200e6:
                    break
        with open(doc, "w") as f:
            json.dump({"messages": msgs}, f)
        with open(jsonl, "w") as f:
            for k in range(0, len(msgs), 10):
                f.write(json.dumps({"messages": msgs[k:k + 10]}) + "\n")
        os.remove(corpus)
    compare_document("corpus messages", doc, jsonl, n)


def compare_document(name, doc, jsonl, n):
    cpu, rss = rounds({
        "doc": [BIN, "convert", "-q", "-j1", doc],
        "jsonl": [BIN, "convert", "-q", "-j1", jsonl],
    }, n)
    d, j = mb(doc) / cpu["doc"], mb(jsonl) / cpu["jsonl"]
    with open(doc) as f:
        count = len(json.load(f)["messages"])
    print(f"  {name}: document {mb(doc):.0f} MB ({count:,} messages), JSONL {mb(jsonl):.0f} MB",
          flush=True)
    line(f"{name}: document MB/s / JSONL MB/s (CPU)", f"{d:.0f}/{j:.0f} = {d / j:.0%}",
         ">= 70%", d / j >= 0.7)
    line(f"{name}: document peak RSS / size", f"{rss['doc']:.0f} MB = {rss['doc'] / mb(doc):.1f}x",
         "<= 3x", rss["doc"] / mb(doc) <= 3)


def session(data, n):
    print("5. a 300 MB one-message-per-line session against one JSON document", flush=True)
    log = os.path.join(data, "session300.jsonl")
    doc = os.path.join(data, "session300.json")
    if not os.path.exists(log):
        scaling.write("claude-code", 900_000, log)
        scaling.write("cline", 900_000, doc)
    cpu, rss = rounds({
        "log": [BIN, "convert", "-q", "-j1", "--from", "claude-code", log],
        "doc": [BIN, "convert", "-q", "-j1", "--from", "cline", doc],
    }, n)
    lg, dc = mb(log) / cpu["log"], mb(doc) / cpu["doc"]
    print(f"  session {mb(log):.0f} MB, document {mb(doc):.0f} MB; log peak RSS {rss['log']:.0f} MB",
          flush=True)
    line("session MB/s / document MB/s (convert -q -j1, CPU)", f"{lg:.0f}/{dc:.0f} = {lg / dc:.0%}",
         ">= 50%", lg / dc >= 0.5)


def text_mb(path):
    """MB (UTF-8) of the text `stats` counts in an OpenAI JSONL file: roles,
    names, string contents and text parts, tool calls' names and arguments,
    tool_call_ids (the texts, not the JSON around them)."""
    total = 0

    def add(s):
        nonlocal total
        if isinstance(s, str):
            total += len(s.encode("utf-8"))

    with open(path, encoding="utf-8") as f:
        for line in f:
            for m in json.loads(line)["messages"]:
                for k in ("role", "name", "tool_call_id"):
                    add(m.get(k))
                c = m.get("content")
                if isinstance(c, str):
                    add(c)
                elif isinstance(c, list):
                    for part in c:
                        add(part.get("text"))
                for call in m.get("tool_calls") or []:
                    add(call["function"]["name"])
                    add(call["function"]["arguments"])
    return total / 1e6


def counting(data, n):
    print("6. exact counting (stats, 30 MB corpus)", flush=True)
    path = corpus30(data)
    cpu, _ = rounds({
        "j1": [BIN, "stats", "-q", "-j1", path],
        "j2": [BIN, "stats", "-q", "-j2", path],
        "approx": [BIN, "stats", "-q", "-j1", "--tokenizer", "approx", path],
    }, n)
    rate = mb(path) / cpu["j1"]
    line("stats -j1, MB/s per core (CPU)", f"{rate:.0f} MB/s", ">= 50 MB/s", rate >= 50)
    # Counting alone: what exact counting adds to reading (`approx` reads and
    # walks every message, and counts by length), over the text it counts.
    text = text_mb(path)
    alone = text / max(cpu["j1"] - cpu["approx"], 1e-3)
    line(f"counting alone ({text:.1f} MB of text), MB/s per core (CPU)", f"{alone:.0f} MB/s",
         ">= 140 MB/s", alone >= 140)
    r = cpu["j2"] / cpu["j1"]
    line("stats -j2 / -j1 (CPU)", f"{cpu['j2']:.2f}/{cpu['j1']:.2f} = {r:.2f}x", "<= 1.15x", r <= 1.15)


def streaming(data, n):
    print("7. peak memory on a stream of 4M small conversations", flush=True)
    path = os.path.join(data, "small4m.jsonl")
    if not os.path.exists(path):
        with open(path, "w") as f:
            for i in range(4_000_000):
                f.write(json.dumps({"messages": [
                    {"role": "user", "content": f"hello number {i}, how are you?"},
                    {"role": "assistant", "content": f"fine, thanks {i}"}]}) + "\n")
    print(f"  {mb(path):.0f} MB", flush=True)
    for cmd in (["convert"], ["filter", "--exclude-roles", "system"], ["trim", "--max-tokens", "10"],
                ["stats"]):
        cpu, rss = rounds({"x": [BIN, *cmd, path]}, 1)
        line(f"{' '.join(cmd)}: peak RSS ({cpu['x']:.0f} s CPU)", f"{rss['x']:.0f} MB", "<= 200 MB",
             rss["x"] <= 200)


FIGURES = [summarize, summary_line, out_dir, document, session, counting, streaming]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data")
    ap.add_argument("--only", help="comma list of figure numbers, e.g. 1,3")
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    figures = FIGURES
    only = {int(x) for x in args.only.split(",")} if args.only else set(range(1, 8))
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or tmp
        os.makedirs(data, exist_ok=True)
        print(f"ctxclean speed, {args.rounds} interleaved rounds, medians of CPU time (user+sys)")
        for k, f in enumerate(figures, 1):
            if k in only:
                f(data, args.rounds)


if __name__ == "__main__":
    main()
