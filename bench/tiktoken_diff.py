#!/usr/bin/env python3
"""Counts against Python tiktoken, text by text, on 100 MB.

    python3 bench/tiktoken_diff.py [--mb 100] [--skip-build]

Issue 43: exactness is proven, not assumed. Runs in target/py-bench-venv
(the package built in release mode, with tiktoken beside it, as
`bench/python.py` makes it) and compares `ctxclean.count_tokens(text,
tokenizer=E)` with `len(tiktoken.get_encoding(E).encode(text,
disallowed_special=()))` for E in o200k_base and cl100k_base, on:

- every file of fixtures/ and ../shared/corpus/ (when it is there), read as
  text, cut in pieces of 64 KB;
- adversarial text (scripts/adversarial_text.py: every script, combining
  marks, emoji ZWJ sequences, digit and whitespace runs, contractions in
  every case, special-token text, random code points) up to --mb in all.

Prints the megabytes compared, each encoding's mismatches (the first few
shown) and the time each side took. Exit 1 on any mismatch. CI runs the
same comparison on a few MB (python/tests/test_langchain.py).
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "scripts")]


def real_texts():
    roots = [os.path.join(ROOT, "fixtures"), os.path.join(ROOT, "..", "shared", "corpus")]
    for root in roots:
        for dp, _, fs in os.walk(root):
            for f in sorted(fs):
                try:
                    with open(os.path.join(dp, f), "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                text = data.decode("utf-8", errors="replace")
                for k in range(0, len(text), 65536):
                    yield text[k:k + 65536]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inside", action="store_true")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--mb", type=float, default=100)
    args = ap.parse_args()
    if not args.inside:
        import python as bench_python
        if args.skip_build:
            py = os.path.join(bench_python.VENV, "bin", "python")
            os.execv(py, [py, __file__, "--inside", "--mb", str(args.mb)])
        sys.argv = [sys.argv[0], "--mb", str(args.mb)]
        bench_python.__file__ = os.path.abspath(__file__)
        bench_python.setup()
    from tiktoken_reference import seed_cache
    import adversarial_text
    seed_cache()
    import tiktoken
    import ctxclean

    texts = list(real_texts())
    real_mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    rest = max(0.0, args.mb - real_mb)
    # About 1.9 bytes a character.
    texts += adversarial_text.texts(int(rest * 1e6 / 1.9))
    total_mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    print(f"{len(texts):,} texts, {total_mb:.1f} MB ({real_mb:.1f} MB of files, the rest adversarial)")
    bad = 0
    for name in ("o200k_base", "cl100k_base"):
        enc = tiktoken.get_encoding(name)
        ctxclean.count_tokens("warm up", tokenizer=name)
        enc.encode("warm up")
        t0 = time.process_time()
        theirs = [len(enc.encode(t, disallowed_special=())) for t in texts]
        t1 = time.process_time()
        mine = [ctxclean.count_tokens(t, tokenizer=name) for t in texts]
        t2 = time.process_time()
        wrong = [(i, a, b) for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
        bad += len(wrong)
        print(f"{name}: {len(wrong)} mismatches in {len(texts):,} texts ({sum(theirs):,} tokens); "
              f"tiktoken {t1 - t0:.1f} s, ctxclean {t2 - t1:.1f} s CPU")
        for i, a, b in wrong[:5]:
            print(f"  text {i}: ctxclean {a}, tiktoken {b}: {texts[i][:80]!r}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
