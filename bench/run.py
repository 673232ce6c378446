#!/usr/bin/env python3
"""The ctxclean benchmark, in one interleaved session.

1. Generates (seeded, see bench/corpus.py) a 100 MB OpenAI JSONL corpus, a
   10 MB one, and a 1 GB one (the 100 MB corpus ten times).
2. Counts the 100 MB corpus with Python json + tiktoken (o200k_base, the same
   per-message recipe as ctxclean) and checks that `ctxclean stats` gives
   exactly the same total.
3. Times, in interleaved rounds:
   - Python json + tiktoken over the 100 MB corpus (in process, no startup);
   - `ctxclean stats --tokenizer o200k_base` with 1 and 2 jobs (end to end);
   - LangChain `trim_messages(strategy="last", include_system=True,
     start_on="human")` with a tiktoken counter over each conversation of the
     10 MB corpus (only the trim_messages calls are timed: parsing and
     conversion to LangChain messages are not);
   - `ctxclean trim --max-tokens 4000 --start-on user -q` over the 10 MB
     corpus (end to end: start, read, trim, write), 1 and 2 jobs.
4. Measures the peak memory (max RSS) of `ctxclean stats` over the 100 MB and
   the 1 GB corpus.
5. Prints the speed targets of bench/speed.py, each figure next to its
   target (`--no-speed` skips them).

Prints medians and ratios. Needs `pip install tiktoken langchain-core` and a
release build (`cargo build --release`). Run from the repository root:

    python3 bench/run.py [--rounds 3] [--data DIR]

The corpora are kept in DIR (default: a temporary directory) for reruns.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
BINARY = os.path.join(ROOT, "target", "release", "ctxclean")


def corpus(data, name, mb, seed):
    path = os.path.join(data, name)
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), path,
                        "--mb", str(mb), "--seed", str(seed)], check=True)
    return path


def python_count(path, enc):
    """ctxclean's recipe: per message 3 + role + text + per call (3 + name +
    arguments) + tool_call_id on results; per conversation + 3."""
    encode = enc.encode_ordinary
    total = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            conv = json.loads(line)
            n = 3
            for m in conv["messages"]:
                n += 3 + len(encode(m["role"]))
                c = m.get("content")
                if isinstance(c, str):
                    n += len(encode(c))
                for call in m.get("tool_calls") or []:
                    fn = call["function"]
                    n += 3 + len(encode(fn["name"])) + len(encode(fn["arguments"]))
                if m["role"] == "tool":
                    n += len(encode(m["tool_call_id"]))
            total += n
    return total


def to_langchain(msgs):
    """OpenAI messages as LangChain message objects."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out = []
    for m in msgs:
        if m["role"] == "system":
            out.append(SystemMessage(m["content"]))
        elif m["role"] == "user":
            out.append(HumanMessage(m["content"]))
        elif m["role"] == "assistant":
            calls = [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                      "id": c["id"]} for c in m.get("tool_calls") or []]
            out.append(AIMessage(m["content"] or "", tool_calls=calls))
        else:
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))
    return out


def message_counter(enc):
    """A LangChain per-message token counter with tiktoken `enc`: the
    recipe ctxclean counts with (3 a message, its type, content and calls)."""

    from langchain_core.messages import BaseMessage

    # The annotation tells LangChain this counts one message, not a list.
    def count(m: BaseMessage) -> int:
        n = 3 + len(enc.encode(m.type, disallowed_special=()))
        if isinstance(m.content, str):
            n += len(enc.encode(m.content, disallowed_special=()))
        for c in getattr(m, "tool_calls", []) or []:
            n += 3 + len(enc.encode(c["name"])) + len(enc.encode(json.dumps(c["args"])))
        return n

    return count


def run(cmd, stdout=subprocess.DEVNULL):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=stdout)
    return time.perf_counter() - t


def peak_rss_mb(cmd):
    """The command's peak memory (max RSS). Measured from a fresh, small
    Python: a child forked from this one (which has LangChain loaded) would
    start with this process's pages counted as its own."""
    probe = ("import resource, subprocess, sys; "
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-S", "-c", probe, *cmd], check=True, capture_output=True, text=True)
    return int(out.stdout) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default=None)
    ap.add_argument("--no-1gb", action="store_true", help="skip the 1 GB memory check")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed targets (bench/speed.py)")
    args = ap.parse_args()
    if not os.path.exists(BINARY):
        sys.exit("build it first: cargo build --release")

    from tiktoken_reference import seed_cache

    seed_cache()
    import tiktoken
    from langchain_core.messages import trim_messages

    enc = tiktoken.get_encoding("o200k_base")
    data = args.data or tempfile.mkdtemp(prefix="ctxclean-bench-")
    os.makedirs(data, exist_ok=True)
    c100 = corpus(data, "corpus-100mb.jsonl", 100, 7)
    c10 = corpus(data, "corpus-10mb.jsonl", 10, 11)
    c1g = os.path.join(data, "corpus-1gb.jsonl")
    if not args.no_1gb and not os.path.exists(c1g):
        with open(c1g, "wb") as out, open(c100, "rb") as src:
            block = src.read()
            for _ in range(10):
                out.write(block)

    # Exactness first.
    expected = python_count(c100, enc)
    got = json.loads(subprocess.run([BINARY, "stats", "--json", "--by", "file", c100], check=True,
                                    capture_output=True).stdout)["total"]["tokens"]
    if got != expected:
        sys.exit(f"counts differ: ctxclean {got}, Python tiktoken {expected}")

    # LangChain inputs, converted once (not timed).
    with open(c10, encoding="utf-8") as f:
        lc_convs = [to_langchain(json.loads(line)["messages"]) for line in f]

    # Annotated, so that LangChain calls it per message and sums.
    count = message_counter(enc)

    def langchain_trim():
        t = time.perf_counter()
        for msgs in lc_convs:
            trim_messages(msgs, max_tokens=4000 - 3, token_counter=count, strategy="last",
                          include_system=True, start_on="human")
        return time.perf_counter() - t

    def langchain_file():
        """What a LangChain user runs on the file: parse, convert, trim."""
        t = time.perf_counter()
        with open(c10, encoding="utf-8") as f:
            for line in f:
                msgs = to_langchain(json.loads(line)["messages"])
                trim_messages(msgs, max_tokens=4000 - 3, token_counter=count, strategy="last",
                              include_system=True, start_on="human")
        return time.perf_counter() - t

    def python_stats():
        t = time.perf_counter()
        python_count(c100, enc)
        return time.perf_counter() - t

    times = {k: [] for k in ["py", "s1", "s2", "lc", "lf", "t1", "t2"]}
    for _ in range(args.rounds):
        times["py"].append(python_stats())
        times["s1"].append(run([BINARY, "stats", "--by", "file", "-j", "1", c100]))
        times["s2"].append(run([BINARY, "stats", "--by", "file", "-j", "2", c100]))
        times["lc"].append(langchain_trim())
        times["lf"].append(langchain_file())
        times["t1"].append(run([BINARY, "trim", "--max-tokens", "4000", "--start-on", "user", "-q", "-j", "1", c10]))
        times["t2"].append(run([BINARY, "trim", "--max-tokens", "4000", "--start-on", "user", "-q", "-j", "2", c10]))
    med = {k: statistics.median(v) for k, v in times.items()}
    size100 = os.path.getsize(c100) / 1e6
    size10 = os.path.getsize(c10) / 1e6

    rss100 = peak_rss_mb([BINARY, "stats", "--by", "file", c100])
    rss1g = None if args.no_1gb else peak_rss_mb([BINARY, "stats", "--by", "file", c1g])

    print(f"machine: {os.cpu_count()} cores; median of {args.rounds} interleaved rounds")
    print(f"counts: {expected:,} tokens in {size100:.0f} MB, ctxclean equal to Python tiktoken")
    print()
    print(f"{'what':<58}{'time':>9}{'MB/s':>8}{'ratio':>8}")

    def row(what, t, mb, ratio=None):
        r = f"{ratio:7.1f}x" if ratio else ""
        print(f"{what:<58}{t:8.2f}s{mb / t:8.1f}{r:>8}")

    row("Python json + tiktoken (o200k_base), 100 MB", med["py"], size100)
    row("ctxclean stats, 1 job", med["s1"], size100, med["py"] / med["s1"])
    row("ctxclean stats, 2 jobs", med["s2"], size100, med["py"] / med["s2"])
    row("LangChain trim_messages only, tiktoken counter, 10 MB", med["lc"], size10)
    row("LangChain json + messages + trim_messages, 10 MB", med["lf"], size10)
    row("ctxclean trim --max-tokens 4000, 1 job (vs trim only)", med["t1"], size10, med["lc"] / med["t1"])
    row("ctxclean trim --max-tokens 4000, 2 jobs (vs trim only)", med["t2"], size10, med["lc"] / med["t2"])
    row("ctxclean trim --max-tokens 4000, 2 jobs (vs json + trim)", med["t2"], size10, med["lf"] / med["t2"])
    print()
    print(f"peak memory, ctxclean stats: {rss100:.0f} MB on 100 MB"
          + ("" if rss1g is None else f", {rss1g:.0f} MB on 1 GB"))
    print()

    # The speed targets of issue 19, each next to its figure (bench/speed.py).
    if not args.no_speed:
        import speed
        print(f"ctxclean speed, {args.rounds} interleaved rounds, medians of CPU time (user+sys)")
        for figure in speed.FIGURES:
            figure(data, args.rounds)


if __name__ == "__main__":
    main()
