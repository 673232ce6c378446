#!/usr/bin/env python3
"""The Python package against LangChain and tiktoken, in one process.

    python3 bench/python.py [--mb 10] [--rounds 3] [--max-tokens 4000] [--lengths-only]

Builds the package in release mode into target/py-bench-venv (maturin,
with LangChain and tiktoken beside it), then re-runs itself there and, on a
seeded corpus of `bench/corpus.py` (OpenAI conversations with tool calls,
code, CJK, emoji), times in interleaved rounds:

- `ctxclean.trim_messages(msgs, max_tokens=N)` on the conversations as
  dicts, and on them as LangChain message objects (objects in, the same
  objects out), against LangChain's `trim_messages(strategy="last",
  include_system=True)` with a tiktoken o200k_base counter per message
  (the recipe ctxclean counts with), on the objects;
- `ctxclean.count_tokens(text)` against `len(enc.encode(text))` on each
  message's text.

CPU time of the process (the Rust work runs on the calling thread), per
call and per MB; the vocabulary is loaded once, before timing. Prints a
table and the ratios against the targets (trim ≥ 20×, counting ≥ 5×).

ctxclean remembers the tokens of the texts and words it has counted and
the recipes it has made ready: an agent loop that trims a growing
conversation counts each message once. The rounds after the first see
the same corpus again, so the table also has each ctxclean row's first
pass, in a process of its own where nothing is remembered ("cold").
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "target", "py-bench-venv")
PACKAGES = ["maturin==1.16.0", "langchain-core==1.8.3", "tiktoken==0.14.0"]


def setup():
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    py = os.path.join(VENV, "bin", "python")
    env = dict(os.environ, VIRTUAL_ENV=VENV, PATH=os.path.join(VENV, "bin") + os.pathsep + os.environ["PATH"])
    # A wheel, not an editable install: the tests' `maturin develop` puts
    # a debug build in python/ctxclean/.
    wheels = os.path.join(ROOT, "target", "bench-wheels")
    subprocess.run([os.path.join(VENV, "bin", "maturin"), "build", "--release", "--locked", "-q", "-o", wheels],
                   cwd=os.path.join(ROOT, "python"), env=env, check=True)
    wheel = max((os.path.join(wheels, w) for w in os.listdir(wheels) if w.endswith(".whl")), key=os.path.getmtime)
    subprocess.run([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", wheel], check=True)
    os.execve(py, [py, __file__, "--inside", *sys.argv[1:]], env)


def corpus(mb):
    path = os.path.join(ROOT, "target", f"bench-python-{mb}mb.jsonl")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), path, "--mb", str(mb)], check=True)
    with open(path, encoding="utf-8") as f:
        convs = [json.loads(line)["messages"] for line in f]
    return convs, os.path.getsize(path)


def real_texts():
    """Every string of 20 characters or more in the real transcripts of
    fixtures/ (and ../shared/corpus, when it is there): text that repeats
    less than the generated corpus's."""
    out = []

    def walk(v):
        if isinstance(v, str) and len(v) >= 20:
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    roots = [os.path.join(ROOT, "fixtures"), os.path.join(ROOT, "..", "shared", "corpus")]
    for root in roots:
        for dp, _, fs in os.walk(root):
            for f in sorted(fs):
                if not f.endswith((".json", ".jsonl")) or "malformed" in dp:
                    continue
                with open(os.path.join(dp, f), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for chunk in [text] if f.endswith(".json") else text.splitlines():
                    try:
                        walk(json.loads(chunk))
                    except ValueError:
                        pass
    return out


def cpu(fn):
    t = time.process_time()
    fn()
    return time.process_time() - t


def cold(key, args):
    """The CPU time of the first pass of `key`, in a new process (the
    vocabulary loaded before timing, nothing counted yet)."""
    argv = [sys.executable, __file__, "--inside", "--cold", key, "--mb", str(args.mb),
            "--max-tokens", str(args.max_tokens)]
    return float(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inside", action="store_true")
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=4000)
    ap.add_argument("--cold", help=argparse.SUPPRESS)
    ap.add_argument("--lengths-only", action="store_true",
                    help="only the table of trimming one history by its length")
    ap.add_argument("--threads-only", action="store_true",
                    help="only the table of two threads against one")
    args = ap.parse_args()
    if not args.inside:
        setup()
    sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "scripts")]
    from tiktoken_reference import seed_cache

    seed_cache()
    import tiktoken
    from langchain_core.messages import trim_messages
    from run import message_counter, to_langchain

    import ctxclean

    enc = tiktoken.get_encoding("o200k_base")

    count = message_counter(enc)

    convs, size = corpus(args.mb)
    objs = [to_langchain(c) for c in convs]
    texts = [m["content"] for c in convs for m in c if isinstance(m.get("content"), str)]
    text_mb = sum(len(t.encode()) for t in texts) / 1e6
    real = real_texts()
    real_mb = sum(len(t.encode()) for t in real) / 1e6
    n = args.max_tokens
    # Warm: the vocabularies, once each, outside the timing.
    ctxclean.count_tokens("warm up"), enc.encode("warm up")

    # An agent loop: a model call wherever the conversation waits for the
    # model (after a user message, or a turn's last tool result), each call
    # trimming the conversation so far.
    agent = [(j, c, o) for c, o in zip(convs, objs) for j in range(2, len(c) + 1)
             if c[j - 1].get("role") in ("user", "tool") and (j == len(c) or c[j].get("role") == "assistant")]

    def langchain(o):
        return trim_messages(o, max_tokens=n - 3, token_counter=count, strategy="last", include_system=True)

    if args.lengths_only:
        lengths(convs, objs, n, langchain, args.rounds)
        return
    if args.threads_only:
        for _ in range(args.rounds):
            threads(convs, n)
        return
    passes = {
        "ours_dicts": lambda: [ctxclean.trim_messages(c, max_tokens=n) for c in convs],
        "ours_objects": lambda: [ctxclean.trim_messages(o, max_tokens=n) for o in objs],
        "loop_dicts": lambda: [ctxclean.trim_messages(c[:j], max_tokens=n) for j, c, _ in agent],
        "loop_objects": lambda: [ctxclean.trim_messages(o[:j], max_tokens=n) for j, _, o in agent],
        "count_ours": lambda: [ctxclean.count_tokens(t) for t in texts],
        "real_ours": lambda: [ctxclean.count_tokens(t) for t in real],
    }
    if args.cold:
        print(cpu(passes[args.cold]))
        return
    first = {key: cold(key, args) for key in passes}
    timed = {
        "ours_dicts": passes["ours_dicts"],
        "langchain": lambda: [langchain(o) for o in objs],
        "ours_objects": passes["ours_objects"],
        "count_ours": passes["count_ours"],
        "count_tiktoken": lambda: [len(enc.encode(t, disallowed_special=())) for t in texts],
        "real_ours": passes["real_ours"],
        "real_tiktoken": lambda: [len(enc.encode(t, disallowed_special=())) for t in real],
    }
    runs = {k: [] for k in timed}
    for _ in range(args.rounds):
        for key, fn in timed.items():
            runs[key].append(cpu(fn))
    med = {k: statistics.median(v) for k, v in runs.items()}
    # No memo in LangChain's: one pass, in this process.
    med["loop_langchain"] = cpu(lambda: [langchain(o[:j]) for j, _, o in agent])
    med["loop_dicts"], med["loop_objects"] = first["loop_dicts"], first["loop_objects"]
    assert all(ctxclean.count_tokens(t) == len(enc.encode(t, disallowed_special=())) for t in texts[:2000] + real)
    mb = size / 1e6
    loop_mb = mb * sum(j for j, _, _ in agent) / sum(map(len, convs))
    print(f"corpus: {len(convs):,} conversations, {sum(map(len, convs)):,} messages, {mb:.1f} MB "
          f"({text_mb:.1f} MB of message text); budget {n} tokens; median CPU of {args.rounds} interleaved rounds")
    print("| what | CPU | per call | per MB | ratio | cold: per call, ratio |")
    print("|---|---|---|---|---|---|")
    rows = [("LangChain `trim_messages`, tiktoken counter (objects)", "langchain", len(convs), mb, None),
            ("`ctxclean.trim_messages` (dicts)", "ours_dicts", len(convs), mb, "langchain"),
            ("`ctxclean.trim_messages` (LangChain objects)", "ours_objects", len(convs), mb, "langchain"),
            (f"agent loop, {len(agent):,} calls: LangChain `trim_messages` (objects)", "loop_langchain", len(agent),
             loop_mb, None),
            ("agent loop: `ctxclean.trim_messages` (dicts), cold process", "loop_dicts", len(agent), loop_mb,
             "loop_langchain"),
            ("agent loop: `ctxclean.trim_messages` (objects), cold process", "loop_objects", len(agent), loop_mb,
             "loop_langchain"),
            ("tiktoken `len(enc.encode(text))`", "count_tiktoken", len(texts), text_mb, None),
            ("`ctxclean.count_tokens(text)`", "count_ours", len(texts), text_mb, "count_tiktoken"),
            (f"tiktoken, real transcripts' strings ({real_mb:.1f} MB)", "real_tiktoken", len(real), real_mb, None),
            ("`ctxclean.count_tokens(text)`, the same strings", "real_ours", len(real), real_mb, "real_tiktoken")]
    for label, key, calls, per, against in rows:
        ratio = f"**{med[against] / med[key]:.1f}×**" if against else ""
        c = f"{first[key] / calls * 1e6:.0f} µs, {med[against] / first[key]:.1f}×" \
            if key in first and not key.startswith("loop") else ""
        print(f"| {label} | {med[key]:.2f} s | {med[key] / calls * 1e6:.0f} µs | {med[key] / per * 1e3:.0f} ms | {ratio} | {c} |")
    caching(agent, n, langchain)
    lengths(convs, objs, n, langchain, args.rounds)


def lengths(convs, objs, n, langchain, rounds):
    """One history of each length (the corpus's conversations one after
    another, a system message first), trimmed to the budget: ctxclean's
    work should follow what it keeps, not the history (issue 43)."""
    import ctxclean

    flat = [m for c in convs for m in c if m.get("role") != "system"]
    flat_o = [m for o in objs for m in o if getattr(m, "type", "") != "system"]
    system = [convs[0][0]] if convs[0][0].get("role") == "system" else []
    system_o = objs[0][:1] if system else []
    print()
    print(f"Trimming one history to {n} tokens, by its length (per call, median of {rounds} interleaved rounds):")
    print("| history | LangChain `trim_messages` (objects) | ctxclean (dicts) | ratio | ctxclean (objects) | ratio |")
    print("|---|---|---|---|---|---|")
    per = {}
    for length in (50, 200, 1_000, 10_000, 100):
        # A history ending where a call waits: on a user message.
        end = length
        while end < len(flat) and flat[end - 1].get("role") not in ("user", "tool"):
            end += 1
        h, ho = system + flat[:end], system_o + flat_o[:end]
        reps = max(1, 2_000 // length)
        fns = {
            "langchain": lambda: [langchain(ho) for _ in range(reps)],
            "dicts": lambda: [ctxclean.trim_messages(h, max_tokens=n) for _ in range(reps)],
            "objects": lambda: [ctxclean.trim_messages(ho, max_tokens=n) for _ in range(reps)],
        }
        runs = {k: [] for k in fns}
        for _ in range(rounds):
            for k, fn in fns.items():
                runs[k].append(cpu(fn) / reps)
        med = {k: statistics.median(v) for k, v in runs.items()}
        per[length] = med
        if length == 100:
            continue
        print(f"| {length:,} messages | {med['langchain'] * 1e6:,.0f} µs | {med['dicts'] * 1e6:,.0f} µs | "
              f"**{med['langchain'] / med['dicts']:.0f}×** | {med['objects'] * 1e6:,.0f} µs | "
              f"**{med['langchain'] / med['objects']:.0f}×** |")
    for kind in ("dicts", "objects"):
        print(f"10,000 messages against its last 100, {kind}: {per[10_000][kind] / per[100][kind]:.1f}× (target ≤ 2×)")


def caching(agent, n, langchain):
    """Prompt caching in the agent loop: what each way of trimming sends
    at each call, how much of it the previous call sent first (what a
    prompt cache serves), and what that costs at claude-sonnet-4-5's
    cache prices ($0.30 a million tokens read from the cache, $3.75
    written to it)."""
    import ctxclean
    from ctxclean import _native
    from langchain_core.messages import convert_to_openai_messages

    tokens = {}

    def size(m):
        key = json.dumps(m, sort_keys=True)
        if key not in tokens:
            tokens[key] = ctxclean.count_tokens([m]) - 3  # less the reply priming of a list
        return tokens[key]

    flight = _native.InFlight(ctxclean._steps([{"op": "trim", "max_tokens": n}]), "claude-sonnet-4-5")

    def held(c):
        body = json.dumps({"model": "claude-sonnet-4-5", "messages": c}, ensure_ascii=False).encode()
        sent = flight.clean(body)[0]
        return c if sent is None else json.loads(sent)["messages"]

    ways = [
        ("no trimming", lambda c, o: c),
        ("LangChain `trim_messages`", lambda c, o: convert_to_openai_messages(langchain(o))),
        ("`ctxclean.trim_messages`", lambda c, o: ctxclean.trim_messages(c, max_tokens=n)),
        ("`CtxcleanMiddleware` (holding, as `ctxclean serve`)", lambda c, o: held(c)),
    ]
    print(f"\nprompt caching in the agent loop ({len(agent):,} calls, budget {n} tokens):")
    print("| what | tokens sent | a call, on average | served by the cache | calls over the budget | cost |")
    print("|---|---|---|---|---|---|")
    for label, way in ways:
        sent_total = cached = over = 0
        prev, prev_conv = None, None
        for j, c, o in agent:
            sent = way(c[:j], o[:j])
            sizes = [size(m) for m in sent]
            sent_total += sum(sizes) + 3
            over += sum(sizes) + 3 > n
            if prev is not None and prev_conv is c:
                k = 0
                while k < min(len(prev), len(sent)) and prev[k] == sent[k]:
                    k += 1
                cached += sum(sizes[:k])
            prev, prev_conv = sent, c
        cost = (cached * 0.30 + (sent_total - cached) * 3.75) / 1e6
        print(f"| {label} | {sent_total:,} | {sent_total / len(agent):,.0f} | {cached / sent_total:.0%} | {over:,} "
              f"| ${cost:.2f} |")
    threads(convs, n)


def threads(convs, n):
    """Two threads repeating `trim_messages` on the same conversations
    against one (issue 39: the repeated calls once ran on 1.0 cores while
    new text ran on 1.96): the work in Rust runs with the GIL released."""
    import threading

    import ctxclean

    def work(reps):
        for _ in range(reps):
            for c in convs:
                ctxclean.trim_messages(c, max_tokens=n)

    work(1)
    print("\nthreads, the same conversations trimmed again (the memo path):")
    print("| threads | calls/s | CPU cores busy |")
    print("|---|---|---|")
    for k in (1, 2):
        ts = [threading.Thread(target=work, args=(5,)) for _ in range(k)]
        c0, w0 = time.process_time(), time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        print(f"| {k} | {k * 5 * len(convs) / wall:,.0f} | {cpu / wall:.2f} |")


if __name__ == "__main__":
    main()
