#!/usr/bin/env python3
"""Holds a ctxclean binary to its promises on random transcripts of hostile
shape (scripts/random_transcripts.py), seed by seed, in thirty-five formats:

  - `convert` with nothing changed gives the input back byte for byte;
  - every operation exits 0, and on an input `validate` passes, its output
    passes too (no body made invalid);
  - a second run of an operation on its own output changes nothing
    (`summarize` aside: a summary past the threshold is summarized again;
    and a file that picks its own branch, whose branch a run said it moved);
  - what the report says each conversation kept is what its output reads
    back as (the number of messages; Open WebUI aside, whose texts around a
    call's block join into one message once the block goes);
  - on a valid input, `convert --to` each request format gives a valid body;
  - `replay` of the session through recipes (the proxy's in-flight engine
    on each model call's request, and the oracle) exits 0, and makes no
    request that came valid invalid; a session of no model call is
    refused as such, and one whose requests cannot be rebuilt only when
    `validate` refuses it;
  - an operation whose report lists no change gives its input back byte for
    byte;
  - with --lossless (`cargo build --release --example lossless`), every
    message an operation's report does not name reads back from its output
    as it went in (examples/lossless.rs: the library reads both), and from
    the body the proxy forwards for each model call's request, held or not
    (its `--in-flight`).

    python3 scripts/invariants.py BINARY [--seeds 0:50] [--scale 1] [--formats openai,cline]
    python3 scripts/invariants.py BINARY --corpus DIR    # real transcripts instead
    python3 scripts/invariants.py BINARY --lossless target/release/examples/lossless

Prints each broken promise with its seed, format and command, and exits 1
if there is one. Found, on 2026-11-30: writers that put two results of
one call id in the wrong block, or dropped one; `compact-tools` and
`filter` notes replaced again by a second run. In the next session, with
fifteen more formats and the report held to its output: two calls of one
id paired wrongly (and a result lost by `summarize`), notes in an image's
place in the chat shape (Crush, Responses, Gemini, Bedrock, ChatGPT), a
Droid result's `is_error` and a Copilot CLI failure's `error` lost by
`convert`, a blank Gemini turn, a reasoning item left for a second run.
In the session after, with twelve more (Continue, Zed, Amazon Q, Cursor,
Kimi Code, OpenHands, Letta, VS Code Copilot Chat, Agents SDK run states,
Grok Build, Claude.ai, Amp): a Continue result of no call, and the item a
Continue session is cut at, dropped by `convert`; Copilot Chat calls of
one id given each other's arguments; a Letta summary left out of a
context listed by ids; a Kimi Code summary put where a compaction wipes
it; an Amp result given a second id key by `convert`; a Grok Build
session trimmed to two lines read back as LangChain; a conversation the
assistant opens, or of system instructions alone, converted to an
invalid Anthropic or Gemini body. In the session after, the runs
through `replay` (the proxy's engine on every model call, and the oracle),
the operations that report no change, and seven more selections and trims
(2,870 transcripts, 2026-12-01) broke nothing. With --lossless (the same
day, 2,800 transcripts at --scale 1 to 3): a result shared by two calls
of one id (VS Code Copilot Chat, Zed), one of them replaced, written over
with the note, the text gone; a Zed image replaced in the report and not
in the file; a result of a doubled id moved into the other one's block
(Anthropic's family, Bedrock, Goose, Crush, Grok CLI); a LibreChat
result inside the second of two calls of one id paired with the first,
and the call that held it taken; and a loss in a summary put on the
input's first message. Its `--in-flight` (the next session): a held body's
log line named none of the changes its body carried, so a request whose
earlier requests the proxy replayed first went on without results its
report never named.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_transcripts  # noqa: E402

OPERATIONS = [
    "filter --previous-cycles",
    "filter --dedupe-tool-results",
    "filter --moved-past",
    "filter --retried-failures",
    "filter --read-again",
    "filter --supersede read_file=path",
    "filter --drop-thinking --strip-processed-images",
    "filter --exclude-roles tool",
    "filter --exclude-tool-calls",
    "compact-tools --keep-last 1 --max-result-tokens 5",
    "compact-tools --max-total-tokens 60 --clear-inputs",
    "compact-tools --keep-last 0 --max-result-tokens 0 --truncate-items 10 --preview-chars 20",
    "filter --exclude-roles assistant",
    "filter --exclude-tools bash,read_file",
    "filter --include-roles user,assistant",
    "trim --max-tokens 300",
    "trim --max-tokens 300 --strategy first",
    "trim --max-tokens 300 --allow-partial --no-placeholder",
    "trim --max-messages 5 --start-on user",
    "trim --max-turns 2 --no-system",
    "trim --max-tokens 200 --step 100",
    "summarize --threshold 200",
]
# Chains, for --lossless: one report for all their steps.
CHAINS = [
    "filter --previous-cycles then compact-tools --keep-last 1 --max-result-tokens 5"
    " then trim --max-tokens 300",
    "filter --dedupe-tool-results --moved-past then summarize --threshold 200",
]
TARGETS = ["openai", "anthropic", "responses", "gemini"]
# Recipes `replay` runs through the proxy's engine, call by call.
REPLAYED = [
    "compact-tools --keep-last 1 --max-result-tokens 5 then trim --max-tokens 300",
    "filter --previous-cycles --moved-past then compact-tools --max-total-tokens 60 --clear-inputs",
    "filter --drop-thinking --strip-processed-images --read-again --retried-failures",
]


def run(exe, args):
    p = subprocess.run([exe] + args, capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def check(exe, path, out_path, say):
    """Every promise on one input; `say` reports a broken one."""
    src = open(path, "rb").read()
    rc, out, err = run(exe, ["convert", "-q", path])
    if rc != 0 or out != src:
        say(f"convert did not give it back byte for byte (exit {rc}) {err[:300]}")
    valid = run(exe, ["validate", "-q", path])[0] == 0
    for op in OPERATIONS:
        words = op.split()
        report = out_path + ".report.json"
        rc, once, err = run(exe, [words[0], "-q"] + words[1:] + [path, "--report", report])
        if rc != 0:
            say(f"{op}: exit {rc} {err[:300]}")
            continue
        with open(out_path, "wb") as f:
            f.write(once)
        # A conversation the operation emptied (said on stderr) is no valid
        # request: the user's selection took every message.
        emptied = "no messages left" in err
        if valid and not emptied and run(exe, ["validate", "-q", out_path])[0] != 0:
            say(f"{op}: a valid input made invalid")
        # A file that picks its own branch, cut at the branch's end, picks
        # another (said as a loss): read again, it is another conversation.
        moved = "the branch kept as the conversation" in err
        said = json.load(open(report))["conversations"]
        if once != src and not any(c["changes"] for c in said):
            say(f"{op}: the report lists no change, yet the output is not the input")
        kept = [c["after"]["messages"] for c in said]
        rc, stats, err = run(exe, ["stats", "--json", out_path])
        read = [c["messages"] for c in json.loads(stats)["conversations"]] if rc == 0 else None
        # Open WebUI: the texts around a call's block are messages of their
        # own, and once the block goes they are one text, read back as one
        # message (nothing lost; the count differs).
        joined = "open-webui" in path
        # A conversation emptied (said as such) writes nothing to read back.
        if read is not None and [k for k in kept if k] == [r for r in read if r]:
            read = kept
        if read != kept and not moved and not joined:
            say(f"{op}: the report kept {kept[:5]} messages, its output reads back as {read}")
        rc, twice, err = run(exe, [words[0], "-q"] + words[1:] + [out_path])
        if rc != 0 or (twice != once and words[0] != "summarize" and not moved):
            say(f"{op}: a second run changed its own output (exit {rc}) {err[:300]}")
    replayed(exe, path, valid, say)
    if valid:
        for to in TARGETS:
            rc, body, err = run(exe, ["convert", "-q", "--to", to, path])
            if rc != 0:
                say(f"convert --to {to}: exit {rc} {err[:300]}")
                continue
            with open(out_path, "wb") as f:
                f.write(body)
            if run(exe, ["validate", "-q", out_path])[0] != 0:
                say(f"convert --to {to}: the body is not valid")


def replayed(exe, path, valid, say):
    """`replay` through each of REPLAYED, with the oracles beside them."""
    for recipe in REPLAYED:
        args = ["replay", "-q", "--json", "--budget", "300", "--oracle", "--oracle-recall", "0.9"]
        rc, out, err = run(exe, args + [path, "--"] + recipe.split())
        if rc == 1 and (
            "no model call to replay" in err
            or (not valid and "could be rebuilt as a request" in err)
        ):
            return
        if rc != 0:
            say(f"replay -- {recipe}: exit {rc} {err[:300]}")
            continue
        for row in json.loads(out)["recipes"]:
            if row["made_invalid"]:
                say(
                    f"replay -- {recipe}: {row['recipe']} made {row['made_invalid']} valid requests invalid"
                )


def lossless(example, path, say):
    """examples/lossless.rs on one input, through OPERATIONS and CHAINS, as
    the command line runs them and as the proxy does (`--in-flight`, call
    by call with its holds): each line it prints is a message an operation
    changed or lost without naming it."""
    ops = [w for op in OPERATIONS + CHAINS for w in ("--op", op)]
    for mode in ([], ["--in-flight"]):
        p = subprocess.run([example] + mode + ops + [path], capture_output=True, timeout=600)
        if p.returncode != 0:
            lines = p.stdout.decode(errors="replace").splitlines()
            for line in lines[:-1] or [f"lossless: exit {p.returncode} {p.stderr[:300]!r}"]:
                say(line)


def corpus(exe, root, tmp, broken, example=None):
    """Every JSON or JSONL file under `root` that ctxclean reads (under 3
    MB), held to the same promises; how many were."""
    paths = sorted(
        os.path.join(d, f)
        for d, _, names in os.walk(root)
        for f in names
        if f.endswith((".json", ".jsonl"))
    )
    checked = 0
    for path in paths:
        if os.path.getsize(path) >= 3_000_000 or run(exe, ["stats", "-q", path])[0] != 0:
            continue

        def say(what, path=path):
            broken.append(f"{path}: {what}")
            print(broken[-1], flush=True)

        ext = "jsonl" if path.endswith(".jsonl") else "json"
        check(exe, path, os.path.join(tmp, f"out.{ext}"), say)
        if example:
            lossless(example, path, say)
        checked += 1
    return checked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--seeds", default="0:50", help="A:B, seeds A to B-1")
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--formats", default=",".join(sorted(random_transcripts.GEN)))
    ap.add_argument("--corpus", help="a directory of real transcripts, checked instead")
    ap.add_argument(
        "--lossless", metavar="EXAMPLE", help="examples/lossless.rs built, run on each input too"
    )
    a = ap.parse_args()
    exe = os.path.abspath(a.binary)
    example = a.lossless and os.path.abspath(a.lossless)
    first, last = (int(x) for x in a.seeds.split(":"))
    broken = []
    with tempfile.TemporaryDirectory(prefix="ctxclean-invariants-") as tmp:
        if a.corpus:
            runs = corpus(exe, a.corpus, tmp, broken, example)
            print(f"{runs} files, {len(broken)} broken promises")
            sys.exit(1 if broken else 0)
        for seed in range(first, last):
            for fmt in a.formats.split(","):
                ext = "jsonl" if fmt in random_transcripts.JSONL else "json"
                path = os.path.join(tmp, f"{fmt}-{seed}.{ext}")
                random_transcripts.write(path, seed, fmt, a.scale)

                def say(what, fmt=fmt, seed=seed):
                    line = f"{fmt} seed {seed} (--scale {a.scale}): {what}"
                    broken.append(line)
                    print(line, flush=True)

                check(exe, path, os.path.join(tmp, f"out.{ext}"), say)
                if example:
                    lossless(example, path, say)
            # A run stopped early (a timeout) still tells how far it got.
            done = (seed - first + 1) * len(a.formats.split(","))
            print(f"seed {seed} done: {done} transcripts, {len(broken)} broken promises so far",
                  file=sys.stderr, flush=True)
    runs = (last - first) * len(a.formats.split(","))
    print(f"{runs} transcripts, {len(broken)} broken promises")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
