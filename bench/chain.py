#!/usr/bin/env python3
"""A 3-step chain in one process against the same steps as three piped
processes, on the benchmark corpus (bench/corpus.py, OpenAI JSONL).

    chain: ctxclean filter --previous-cycles then compact-tools --keep-last 2
           then trim --max-tokens 4000 CORPUS
    pipes: ctxclean filter --previous-cycles CORPUS | ctxclean compact-tools
           --keep-last 2 | ctxclean trim --max-tokens 4000

Both write the same bytes (checked first). Timed in interleaved rounds:
CPU time (user + sys of every process, steadier than wall time on shared
machines) and wall time, medians. Both print their summary lines (the
tokens counted), as a user would run them.

Run from the repository root after `cargo build --release`:

    python3 bench/chain.py [--mb 10] [--rounds 5] [--jobs 2]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "ctxclean")
STEPS = [
    ["filter", "--previous-cycles"],
    ["compact-tools", "--keep-last", "2"],
    ["trim", "--max-tokens", "4000"],
]


def timed(cmd, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(out, "wb") as f:
        subprocess.run(cmd, shell=True, stdout=f, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), corpus, "--mb", str(args.mb)],
                       check=True, stdout=subprocess.DEVNULL)
        j = f"-j {args.jobs}"
        chain = f"{BIN} " + " then ".join(" ".join(s) for s in STEPS) + f" {j} {corpus}"
        pipes = f"{BIN} {' '.join(STEPS[0])} {j} {corpus}" + "".join(
            f" | {BIN} {' '.join(s)} {j}" for s in STEPS[1:])
        a, b = os.path.join(tmp, "chain.out"), os.path.join(tmp, "pipes.out")
        timed(chain, a)
        timed(pipes, b)
        with open(a, "rb") as x, open(b, "rb") as y:
            if x.read() != y.read():
                sys.exit("the chain and the pipes wrote different bytes")
        runs = {"chain": [], "pipes": []}
        for _ in range(args.rounds):
            runs["chain"].append(timed(chain, a))
            runs["pipes"].append(timed(pipes, b))
        size = os.path.getsize(corpus) / 1e6
        print(f"corpus: {size:.1f} MB, {args.rounds} rounds, -j {args.jobs}; outputs identical")
        med = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in runs.items()}
        for k, (cpu, wall) in med.items():
            print(f"{k:6} cpu {cpu:6.2f} s   wall {wall:6.2f} s")
        print(f"chain / pipes: cpu {med['chain'][0] / med['pipes'][0]:.2f}, wall {med['chain'][1] / med['pipes'][1]:.2f}")


if __name__ == "__main__":
    main()
