#!/usr/bin/env python3
"""Benchmark: `ctxclean trim` against LangChain `trim_messages` on the same input.

Generates a seeded 100,000-message OpenAI transcript (user turns, answers,
tool calls with JSON results, code, CJK, emoji), then, in one interleaved
session, times:

- `ctxclean trim --max-tokens N` (release build), end to end: process start,
  parse, count, trim, write;
- LangChain `trim_messages(strategy="last", include_system=True,
  start_on="human")` with a tiktoken o200k_base counter (per message, the
  same recipe as ctxclean), on messages already converted to LangChain
  objects (conversion not timed).

Prints the times, the ratio, and checks that ctxclean's output is within
budget by its own `stats`. Needs `pip install tiktoken langchain-core` and
`cargo build --release`. Run: python3 bench/trim.py [--messages N] [--rounds R]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def generate(n, seed=7):
    rng = random.Random(seed)
    words = "the data query result table user model token cost budget agent tool call".split()
    cjk = "数据查询结果表用户模型令牌成本预算"
    emoji = "😀🚀🔥✅📊🧠"

    def text(k):
        out = []
        for _ in range(k):
            r = rng.random()
            out.append(rng.choice(words) if r < 0.8 else (rng.choice(cjk) * 2 if r < 0.9 else rng.choice(emoji)))
        return " ".join(out)

    msgs = [{"role": "system", "content": "You are a data assistant. " + text(40)}]
    call = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": text(rng.randint(5, 40))})
        if rng.random() < 0.4:
            call += 1
            cid = f"call_{call}"
            rows = [{"id": i, "name": text(2), "value": rng.randint(0, 10**6)} for i in range(rng.randint(1, 30))]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "run_sql", "arguments": json.dumps({"query": f"SELECT * FROM t{call}"})}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": json.dumps({"rows": rows})})
        msgs.append({"role": "assistant", "content": text(rng.randint(10, 80)) + ("\n```python\nprint(1)\n```" if rng.random() < 0.1 else "")})
    return msgs[:n] if msgs[n - 1]["role"] != "tool" else msgs[: n - 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--max-tokens", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from tiktoken_reference import seed_cache

    seed_cache()
    import tiktoken
    from langchain_core.messages import trim_messages
    from run import message_counter

    enc = tiktoken.get_encoding("o200k_base")

    count = message_counter(enc)

    binary = os.path.join(ROOT, "target", "release", "ctxclean")
    if not os.path.exists(binary):
        sys.exit("build it first: cargo build --release")
    msgs = generate(args.messages)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "big.json")
    with open(path, "w") as f:
        json.dump({"messages": msgs}, f)
    size = os.path.getsize(path)
    from run import to_langchain

    lc_msgs = to_langchain(msgs)

    ours, theirs = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        out = subprocess.run([binary, "trim", "--max-tokens", str(args.max_tokens), "--start-on", "user", "-q", path],
                             check=True, capture_output=True).stdout
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        kept = trim_messages(lc_msgs, max_tokens=args.max_tokens - 3, token_counter=count, strategy="last",
                             include_system=True, start_on="human")
        theirs.append(time.perf_counter() - t)
    stats = json.loads(subprocess.run([binary, "stats", "--json"], input=out, check=True, capture_output=True).stdout)
    kept_ours = stats["total"]["messages"]
    assert stats["total"]["tokens"] <= args.max_tokens, stats["total"]
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"input: {len(msgs):,} messages, {size / 1e6:.1f} MB; budget {args.max_tokens} tokens (o200k_base)")
    print(f"ctxclean trim (end to end, release):     {a:7.3f} s   kept {kept_ours} messages")
    print(f"LangChain trim_messages (tiktoken):      {b:7.3f} s   kept {len(kept)} messages")
    print(f"ratio: ctxclean is {b / a:.1f}x faster (median of {args.rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
