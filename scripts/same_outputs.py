#!/usr/bin/env python3
"""Runs two ctxclean binaries over every fixture with every operation and
says where their outputs differ (standard output, standard error with the
binary's path left out, exit code, and any report file).

    python3 scripts/same_outputs.py OLD_BINARY NEW_BINARY [--fixtures DIR] [--random A:B]

--random A:B also runs them over the random transcripts of seeds A to B-1
in each format of scripts/random_transcripts.py (ids given twice, results
missing or out of order: shapes the fixtures hold few of).

Used once per change that must not change behaviour (issue 55's crate
split: "every fixture's output, for every operation, is byte-identical").
"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OPERATIONS = [
    ["stats"],
    ["stats", "--json"],
    ["stats", "--tokenizer", "cl100k_base", "--json"],
    ["stats", "--tokenizer", "p50k_base", "--json"],
    ["filter", "--previous-cycles"],
    ["filter", "--strip-processed-images", "--dedupe-tool-results", "--drop-thinking"],
    ["compact-tools", "--max-result-tokens", "50"],
    ["trim", "--max-tokens", "300"],
    ["trim", "--max-tokens", "2000", "--strategy", "first"],
    ["summarize", "--threshold", "300", "--keep", "4"],
    ["validate"],
    ["convert", "--to", "openai"],
    ["convert", "--to", "anthropic"],
    ["filter", "--previous-cycles", "then", "trim", "--max-tokens", "800"],
]


def inputs(fixtures):
    out = []
    for d, dirs, files in os.walk(fixtures):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".md"):
                out.append(os.path.join(d, f))
    # Folders: the agents' stores (OpenCode's storage, databases).
    for d in sorted(os.listdir(fixtures)):
        p = os.path.join(fixtures, d)
        if os.path.isdir(p):
            out.append(p)
    return out


def run(exe, args, path, tmp):
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):
        os.remove(report)
    reporting = args[0] not in ("stats", "validate")
    cmd = [exe, *args, path] + (["--report", report] if reporting else [])
    r = subprocess.run(cmd, capture_output=True, timeout=300, cwd=ROOT)
    rep = open(report, "rb").read() if os.path.exists(report) else b""
    return r.returncode, r.stdout, r.stderr.replace(exe.encode(), b"ctxclean"), rep


def main():
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    fixtures = os.path.join(ROOT, "fixtures")
    if "--fixtures" in sys.argv:
        fixtures = sys.argv[sys.argv.index("--fixtures") + 1]
    differ, runs, ok = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        paths = inputs(fixtures)
        if "--random" in sys.argv:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import random_transcripts

            first, last = (int(x) for x in sys.argv[sys.argv.index("--random") + 1].split(":"))
            for seed in range(first, last):
                for fmt in sorted(random_transcripts.GEN):
                    ext = "jsonl" if fmt == "claude-code" else "json"
                    path = os.path.join(tmp, f"random-{fmt}-{seed}.{ext}")
                    random_transcripts.write(path, seed, fmt)
                    paths.append(path)
        for path in paths:
            rel = os.path.relpath(path, ROOT)
            for args in OPERATIONS:
                a = run(old, args, rel, tmp)
                b = run(new, args, rel, tmp)
                runs += 1
                ok += b[0] == 0
                if a != b:
                    what = [n for n, x, y in zip(("exit", "stdout", "stderr", "report"), a, b)
                            if x != y]
                    differ.append(f"{' '.join(args)} {rel}: {', '.join(what)} differ")
    print(f"{runs} runs ({ok} exited 0 with the new binary), {len(differ)} with different outputs")
    for d in differ:
        print("  " + d)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
