#!/usr/bin/env python3
"""Pathological texts through every operation: linear or not.

One conversation whose single long text is made of one pattern a
hand-written scanner could mishandle (runs of backslashes, quotes, braces,
line breaks, CRLF and spaces, digits, combining marks, tabs; tool
arguments nested deep or wide; many paths, URLs or numbers), at 0.5 MB and
at 2 MB, through `stats`, `compact-tools`, `filter`, `trim` and `validate`.
A linear command takes about 4 times the CPU on 4 times the text; `!!`
marks a ratio over 8 (and over 0.3 s). A run of 300 KB of digits once took
8 s (each piece read the run to its end: docs/robustness.md).

A single piece over 1 MiB (a run of CRLF and spaces, or of combining
marks, is one piece) makes `bpe`'s dictionary once per process, about a
second: that shows as `!!` at 2 MB and is not a quadratic path.

    cargo build --release && python3 bench/pathological.py [KIND...]
    CTXCLEAN_BIN=PATH python3 bench/pathological.py   # another build
"""

import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("CTXCLEAN_BIN") or os.path.join(ROOT, "target", "release", "ctxclean")


def doc(content, args=None):
    msgs = [{"role": "user", "content": "go"}]
    if args is None:
        msgs.append({"role": "assistant", "content": content})
    else:
        call = {"id": "c1", "type": "function", "function": {"name": "run", "arguments": args}}
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": "c1", "content": content})
    return {"messages": msgs}


KINDS = {
    "backslashes": lambda n: doc("\\" * n),
    "quotes": lambda n: doc('"' * n),
    "braces": lambda n: doc("{" * n),
    "newlines": lambda n: doc("\n" * n),
    "crlf-spaces": lambda n: doc(" \r\n" * (n // 3)),
    "digits": lambda n: doc("7" * n),
    "digits-words": lambda n: doc("a1" * (n // 2)),
    "marks": lambda n: doc("a" + "\u0301" * (n // 2)),
    "tabs": lambda n: doc("\tword" * (n // 5)),
    "args-deep": lambda n: doc("ok", json.dumps({"a": "[" * n})),
    "args-wide": lambda n: doc("ok", json.dumps({f"k{i}": i for i in range(n // 10)})),
    "result-json": lambda n: doc(json.dumps([{"id": i, "v": "x"} for i in range(n // 20)]), "{}"),
    "paths": lambda n: doc(" ".join(f"/a/b{i}/c.py:{i}" for i in range(n // 16))),
    "urls": lambda n: doc(" ".join(f"https://x.com/{i}?q={i}" for i in range(n // 22))),
    "numbers": lambda n: doc(" ".join(str(i) for i in range(n // 7))),
    "one-word": lambda n: doc("x" * n),
    "output-lines": lambda n: doc("line of output\n" * (n // 15), '{"cmd":"ls"}'),
}

COMMANDS = {
    "stats": ["stats", "-q"],
    "compact-tools": ["compact-tools", "--max-result-tokens", "10", "-q", "-o", os.devnull],
    "filter": ["filter", "--previous-cycles", "-q", "-o", os.devnull],
    "trim": ["trim", "--max-tokens", "50", "--allow-partial", "-q", "-o", os.devnull],
    "validate": ["validate", "-q"],
}

SIZES = (500_000, 2_000_000)


def cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, capture_output=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    kinds = sys.argv[1:] or list(KINDS)
    print(f"CPU seconds at {SIZES[0]:,} / {SIZES[1]:,} bytes")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            files = {}
            for n in SIZES:
                files[n] = os.path.join(tmp, f"{kind}-{n}.json")
                with open(files[n], "w") as f:
                    json.dump(KINDS[kind](n), f)
            cells = []
            for name, args in COMMANDS.items():
                small, large = (cpu([BIN, *args, files[n]]) for n in SIZES)
                flag = " !!" if large > 0.3 and large / max(small, 1e-3) > 8 else ""
                cells.append(f"{name} {small:.2f}/{large:.2f}{flag}")
            print(f"{kind:13} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
