#!/usr/bin/env python3
"""What each recipe keeps, on real sessions, and how long replaying takes.

    cargo build --release && python3 bench/replay.py [--budget 8000] [--chart FILE] [--scale]
    python3 bench/replay.py --long [--budget 32000]

Replays the agent sessions of fixtures/ (and ../shared/corpus when it is
there: agent-sessions, swe-agent, session-share) with `ctxclean replay`,
priced at claude-sonnet-4-5's rates with prompt caching, the four
baselines beside `compact-tools --keep-last 3 then trim --max-tokens
BUDGET` (bench/serve.py's recipe) and `compact-tools --keep-last 3`, and
prints the table docs/benchmarks.md publishes.

--long: the long real sessions of bench/long/ (100 model calls and more
each; see bench/long/SOURCES.md), unpacked into target/bench-long/, priced
at the model they ran on (deepseek-chat), a row per session and recipe,
with the oracle that loses nothing and the oracle held to 99% recall
(`--oracle-recall 0.99`) beside them.

--scale: one synthetic agent session of 1,000 model calls (each a tool
call and a result of ~100 words), replayed with one recipe and the four
baselines; CPU seconds and peak RSS (issue 40's target: 30 s on one core).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.path.join(ROOT, "target", "release", "ctxclean")


def walk_sessions(fixtures, shared_dirs, endings=(".json", ".jsonl", ".traj")):
    """The session files under fixtures/'s `fixtures` folders and, when it
    is there, ../shared/corpus's `shared_dirs` (subagents' and malformed
    files left out), relative to the repository."""
    roots = [os.path.join(ROOT, "fixtures", d) for d in fixtures]
    shared = os.path.join(ROOT, "..", "shared", "corpus")
    roots += [os.path.join(shared, d) for d in shared_dirs if os.path.isdir(os.path.join(shared, d))]
    out = []
    for root in roots:
        for dp, _, fs in os.walk(root):
            for f in sorted(fs):
                if f.endswith(endings) and "subagents" not in dp and "malformed" not in dp:
                    out.append(os.path.relpath(os.path.join(dp, f), ROOT))
    return out


def session_files():
    return walk_sessions(("claude-code", "cline", "pi", "openhands", "codex", "swe-agent"),
                         ("agent-sessions", "swe-agent", "session-share"))


def replay_json(files, model, budget, *extra):
    """`ctxclean replay --json` of `files` at `model`'s prices: none, the
    baselines, `compact-tools --keep-last 3`, and the proxy's recipe."""
    cmd = [EXE, "replay", "-q", "--json", "--model", model, "--budget", str(budget), *extra,
           "--compare", compact_3(), *files, "--", "compact-tools", "--keep-last", "3", "then", "trim",
           "--max-tokens", str(budget)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(r.stdout)


def replayable(path):
    r = subprocess.run([EXE, "replay", "-q", "--json", path, "--", "trim", "--max-tokens", "1000000"],
                       capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        return False
    calls = json.loads(r.stdout)["recipes"][0]["calls"]
    return calls >= 3


def compact_3():
    """The recipe `compact-tools --keep-last 3`, as a file for --compare."""
    recipe = os.path.join(tempfile.mkdtemp(), "compact-3.toml")
    with open(recipe, "w") as f:
        f.write('[[step]]\nop = "compact-tools"\nkeep-last = 3\n')
    return recipe


def table(budget, chart=None):
    files = [f for f in session_files() if replayable(f)]
    v = replay_json(files, "claude-sonnet-4-5", budget, *(["--chart", chart] if chart else []))
    recipes = v["recipes"]
    none = recipes[0]
    print(f"{none['sessions']} sessions, {none['calls']} model calls; claude-sonnet-4-5 prices, "
          f"tokens by {v['tokenizer']}; budget {budget}")
    print()
    print("| recipe | tokens sent | $ with caching | cache read | invalid bodies | evidence recall (mean / worst session) | calls over the window |")
    print("|---|---|---|---|---|---|---|")
    for s in recipes:
        dollars = s["dollars"] or 0.0
        print(f"| {s['recipe']} | {s['tokens_sent']:,} ({s['tokens_share']:.0%}) | ${dollars:.2f} "
              f"({dollars / none['dollars']:.0%}) | {s['cache_read_share']:.0%} | {s['invalid']} "
              f"| {s['recall_mean']:.1%} / {s['recall_worst']:.1%} | {s['over_window']} |")


LONG = os.path.join(ROOT, "bench", "long")


def long_files():
    """bench/long's sessions, unpacked (xz) into target/bench-long/."""
    import lzma
    out = []
    for dp, _, fs in os.walk(LONG):
        for f in sorted(fs):
            if not f.endswith(".xz"):
                continue
            agent = os.path.relpath(dp, LONG)
            dest = os.path.join(ROOT, "target", "bench-long", agent, f[:-3])
            if not os.path.exists(dest):
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with lzma.open(os.path.join(dp, f)) as src, open(dest + ".part", "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(dest + ".part", dest)
            out.append(os.path.relpath(dest, ROOT))
    return sorted(out)


def long_table(budget, model="deepseek-chat"):
    """Per session and recipe: dollars with caching against none, the cache
    share, evidence kept, bodies made invalid."""
    files = long_files()
    v = replay_json(files, model, budget, "--oracle", "--oracle-recall", "0.99")
    recipes = v["recipes"]
    none = recipes[0]
    print(f"{none['sessions']} sessions, {none['calls']} model calls; {model} prices with its prompt cache "
          f"(ctxclean::inflight::cache), tokens by {v['tokenizer']}; budget {budget}")
    print()
    names = [s["recipe"] for s in recipes]
    print("| session | calls | tokens as they came | $ as they came | " + " | ".join(names[1:]) + " |")
    print("|---|---|---|---|" + "---|" * (len(names) - 1))
    rows = [{x["source"]: x for x in s["per_session"]} for s in recipes]
    for src, base in rows[0].items():
        cells = []
        for by in rows[1:]:
            x = by[src]
            cells.append(f"{(x['dollars'] or 0) / max(base['dollars'] or 0, 1e-12):.0%} $, "
                         f"{x['recall']:.0%} kept, {x['cache_read_share']:.0%} cached"
                         + (f", {x['made_invalid']} broken" if x["made_invalid"] else ""))
        name = os.path.basename(src).split(".")[0]
        print(f"| {name} | {base['calls']} | {base['tokens_sent']:,} | ${base['dollars'] or 0:.2f} | "
              + " | ".join(cells) + " |")
    cells = []
    for s in recipes[1:]:
        cells.append(f"**{(s['dollars'] or 0) / max(none['dollars'] or 0, 1e-12):.0%} $**, "
                     f"{s['recall_mean']:.1%} kept (worst {s['recall_worst']:.0%}), {s['cache_read_share']:.0%} cached"
                     + (f", {s['made_invalid']} broken" if s["made_invalid"] else ""))
    print(f"| **all** | {none['calls']} | {none['tokens_sent']:,} | ${none['dollars'] or 0:.2f} | "
          + " | ".join(cells) + " |")


def long_session(path, calls=1000):
    random.seed(1)
    msgs = [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "fix the failing test in src/lib.rs"}]
    for k in range(calls - 1):
        cid = f"call_{k}"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function",
                     "function": {"name": "read", "arguments": json.dumps({"path": f"src/mod_{k}.rs"})}}]})
        words = " ".join(f"tok{random.randint(0, 5000)}" for _ in range(100))
        msgs.append({"role": "tool", "tool_call_id": cid, "content": f"src/mod_{k}.rs line {k * 7}: {words}"})
    msgs.append({"role": "assistant", "content": "Done."})
    with open(path, "w") as f:
        json.dump({"model": "gpt-4.1", "messages": msgs}, f)


def scale():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "long.json")
        long_session(path)
        out = os.path.join(tmp, "out.txt")
        with open(out, "w") as f:
            p = subprocess.Popen([EXE, "replay", "-q", path, "--budget", "50000", "--", "compact-tools",
                                  "--keep-last", "3", "--max-result-tokens", "50"], stdout=f)
            _, _, ru = os.wait4(p.pid, 0)
        with open(out) as f:
            print(f.read())
        print(f"1,000 calls, 5 recipes (4 baselines and one): {ru.ru_utime + ru.ru_stime:.1f} s CPU, "
              f"peak RSS {ru.ru_maxrss / 1024:.0f} MB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=8000)
    ap.add_argument("--scale", action="store_true")
    ap.add_argument("--long", action="store_true", help="the long sessions of bench/long/")
    ap.add_argument("--chart", help="also write the chart (SVG) here")
    args = ap.parse_args()
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release")
    if args.scale:
        scale()
    elif args.long:
        long_table(args.budget if args.budget != 8000 else 32000)
    else:
        table(args.budget, args.chart)


if __name__ == "__main__":
    main()
