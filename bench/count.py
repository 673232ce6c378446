#!/usr/bin/env python3
"""Counting speed on every corpus, against bpe-openai's own encoder (issue 55).

Runs `bench/count/` (a crate outside the workspace: (ctxclean's `Tokenizer::count_text` and
bpe-openai's tokenizer over the same texts), each side in a process of its
own, interleaved rounds, the median CPU time of counting; the counts must
agree) on:

  1. the bench's own corpus (bench/corpus.py, 30 MB, seed 7);
  2. a high-entropy corpus: random words, identifiers, base64, CJK
     (../shared/bench/gen_corpus.py --target-mb 30 --seed 42, when
     ../shared is there);
  3. the real sessions of fixtures/ (every file);
  4. the real sessions of ../shared/corpus/ (when it is there).

    python3 bench/count.py [--rounds 3] [--data DIR] [--encoding o200k_base]

Target: >= 100 MB/s per core on each, and never slower than bpe-openai.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def files_under(d):
    out = []
    for base, dirs, files in os.walk(d):
        dirs.sort()
        out += [os.path.join(base, f) for f in sorted(files)
                if f.endswith((".json", ".jsonl")) and os.path.getsize(os.path.join(base, f)) > 0]
    return out


def median(v):
    return sorted(v)[len(v) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default=None)
    ap.add_argument("--encoding", default="o200k_base")
    args = ap.parse_args()
    data = args.data or tempfile.mkdtemp(prefix="ctxclean-count-")
    os.makedirs(data, exist_ok=True)
    crate = os.path.join(ROOT, "bench", "count")
    subprocess.run(["cargo", "build", "--release", "--locked", "--manifest-path",
                    os.path.join(crate, "Cargo.toml"), "--target-dir",
                    os.path.join(ROOT, "target", "bench-count")], check=True)
    exe = os.path.join(ROOT, "target", "bench-count", "release", "ctxclean-count-bench")
    corpora = []
    own = os.path.join(data, "bench-30mb.jsonl")
    if not os.path.exists(own):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py"), own,
                        "--mb", "30", "--seed", "7"], check=True)
    corpora.append(("bench/corpus.py, 30 MB", [own]))
    gen = os.path.join(SHARED, "bench", "gen_corpus.py")
    if os.path.exists(gen):
        high = os.path.join(data, "high-entropy-30mb.jsonl")
        if not os.path.exists(high):
            subprocess.run([sys.executable, gen, "--target-mb", "30", "--seed", "42",
                            "--out", high], check=True)
        corpora.append(("gen_corpus.py high entropy, 30 MB", [high]))
    else:
        print("(../shared/bench/gen_corpus.py not found: the high-entropy corpus is left out)")
    corpora.append(("fixtures/ (real sessions)", files_under(os.path.join(ROOT, "fixtures"))))
    if os.path.isdir(os.path.join(SHARED, "corpus")):
        corpora.append(("../shared/corpus/ (real sessions)",
                        files_under(os.path.join(SHARED, "corpus"))))
    print(f"| corpus ({args.encoding}) | MB of text | ctxclean MB/s per core | bpe-openai MB/s per core | ctxclean / bpe-openai |")
    print("|---|---|---|---|---|")
    for name, files in corpora:
        times = {"ctxclean": [], "bpe-openai": []}
        counts, mb = set(), 0.0
        for _ in range(args.rounds):
            for side in times:
                r = subprocess.run([exe, "--encoding", args.encoding, "--side", side, *files],
                                   capture_output=True, text=True, check=True)
                n, seconds, mb = r.stdout.split()
                counts.add(int(n))
                times[side].append(float(seconds))
                mb = float(mb)
        if len(counts) != 1:
            print(f"| {name} | counts differ: {sorted(counts)} |")
            continue
        ours, theirs = (mb / median(times[s]) for s in ("ctxclean", "bpe-openai"))
        print(f"| {name} | {mb:.1f} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
