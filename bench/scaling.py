#!/usr/bin/env python3
"""Linear time, checked: every command over one long conversation of 10,000
and of 100,000 messages, in each layout a long agent session comes in.

A linear command takes about 10 times the CPU time (user + sys) on ten times
the messages; a quadratic one about 100 times. Each pair is timed in
interleaved rounds (10k, 100k, 10k, 100k, …) and the median ratio printed,
with `QUADRATIC?` when it is over 25. Two quadratic paths were found this way
(reading a JSONL session copied the rest of the file for every line;
extractive summaries re-counted their whole text for every line dropped).

Layouts (generated, seeded by the message index, so reruns are identical):

- `claude-code`: a session JSONL of user and assistant lines chained by
  `parentUuid`, one tool call and result every fourth turn;
- `cline`: the same conversation as one JSON list of Anthropic messages
  (`api_conversation_history.json`);
- `openai`: the same as one OpenAI Chat Completions document.

Run from the repository root after `cargo build --release`:

    python3 bench/scaling.py [--rounds 3] [--only claude-code]

`--formats` does the same for every format `scripts/random_transcripts.py`
writes (seed 5, `--scale 100` and `--scale 1000`), whose files grow by other
factors than 10: each command's growth in CPU is printed divided by its
file's growth in bytes (`CPU/size`, about 1 when linear), with
`SUPERLINEAR?` past 2, and the peak RSS of the larger run against its
file's size.
"""

import argparse
import json
import os
import resource
import random
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "ctxclean")

COMMANDS = [
    ["stats"],
    ["validate"],
    ["filter", "--previous-cycles"],
    ["compact-tools"],
    ["trim", "--max-tokens", "4000"],
    ["summarize", "--threshold", "1000"],
    ["convert", "--to", "openai"],
]


def turns(n):
    """OpenAI messages: n of them, a tool cycle every fourth turn."""
    msgs = []
    i = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": f"question {i}: what is in src/file{i}.rs?"})
        if i % 4 == 3:
            call = f"call_{i}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/file{i}.rs"})}}]})
            msgs.append({"role": "tool", "tool_call_id": call,
                         "content": "\n".join(f"line {k} of file {i}" for k in range(20))})
        msgs.append({"role": "assistant", "content": f"answer {i}: the file has {i % 97} functions."})
        i += 1
    return msgs[:n] if msgs[n - 1]["role"] != "tool" else msgs[:n + 1]


def anthropic(msgs):
    out = []
    for m in msgs:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            out.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                 "input": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]]})
        else:
            out.append({"role": m["role"], "content": [{"type": "text", "text": m["content"]}]})
    return out


def write(layout, n, path):
    msgs = turns(n)
    with open(path, "w") as f:
        if layout == "openai":
            json.dump({"messages": msgs}, f)
        elif layout == "cline":
            json.dump(anthropic(msgs), f)
        else:
            parent = None
            for i, m in enumerate(anthropic(msgs)):
                uuid = f"00000000-0000-4000-8000-{i:012d}"
                f.write(json.dumps({
                    "parentUuid": parent, "isSidechain": False, "userType": "external",
                    "cwd": "/work", "sessionId": "bench", "version": "2.0.0",
                    "type": m["role"], "message": m, "uuid": uuid,
                    "timestamp": "2025-01-01T00:00:00.000Z"}) + "\n")
                parent = uuid


def cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=["claude-code", "cline", "openai"])
    ap.add_argument("--parallel", action="store_true",
                    help="one turn of 4k to 32k parallel tool blocks (Anthropic)")
    ap.add_argument("--relink", action="store_true",
                    help="relinking over side lines (5k to 40k), and a deep ChatGPT export's memory")
    ap.add_argument("--formats", action="store_true",
                    help="every format of scripts/random_transcripts.py at two scales")
    ap.add_argument("--hostile", action="store_true",
                    help="hostile sizes (issue 54): parallel calls validated, Kimi Code undos and "
                         "compactions, a deep LibreChat export, p50k on one letter, a long bill line")
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    if args.relink:
        relink(args.rounds)
        return
    if args.hostile:
        hostile(args.rounds)
        return
    if args.formats:
        formats(args.rounds)
        return
    if args.parallel:
        parallel(args.rounds)
        return
    layouts = [args.only] if args.only else ["claude-code", "cline", "openai"]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'layout':12} {'command':32} {'10k s':>8} {'100k s':>8} {'ratio':>6}")
        for layout in layouts:
            ext = "jsonl" if layout == "claude-code" else "json"
            small, big = (os.path.join(tmp, f"{layout}-{n}.{ext}") for n in (10_000, 100_000))
            write(layout, 10_000, small)
            write(layout, 100_000, big)
            frm = ["--from", layout]
            for c in COMMANDS:
                t_small, t_big = [], []
                for _ in range(args.rounds):
                    t_small.append(cpu([BIN, *c, *frm, small]))
                    t_big.append(cpu([BIN, *c, *frm, big]))
                s, b = statistics.median(t_small), statistics.median(t_big)
                ratio = b / s if s > 0 else float("inf")
                flag = "  QUADRATIC?" if ratio > 25 else ""
                print(f"{layout:12} {' '.join(c):32} {s:8.2f} {b:8.2f} {ratio:6.1f}{flag}", flush=True)



def formats(rounds):
    gen = os.path.join(ROOT, "scripts", "random_transcripts.py")
    names = subprocess.run([sys.executable, gen, "--list"], capture_output=True, text=True,
                           check=True).stdout.split()
    print(f"{'format':14} {'command':24} {'MB':>11} {'CPU s':>11} {'CPU/size':>8} {'RSS/size':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            paths = []
            for scale in (100, 1000):
                path = os.path.join(tmp, f"{name}-{scale}.transcript")
                subprocess.run([sys.executable, gen, path, "5", name, "--scale", str(scale)], check=True)
                paths.append(path)
            small, big = (os.path.getsize(p) / 1e6 for p in paths)
            for c in COMMANDS:
                if c[0] == "summarize":
                    continue
                t_small, t_big, rss = [], [], 0.0
                for _ in range(rounds):
                    t_small.append(cpu_and_rss([BIN, *c, paths[0]])[0])
                    t, r = cpu_and_rss([BIN, *c, paths[1]])
                    t_big.append(t)
                    rss = max(rss, r)
                s, b = statistics.median(t_small), statistics.median(t_big)
                ratio = (b / s if s > 0 else float("inf")) / (big / small)
                flag = "  SUPERLINEAR?" if ratio > 2 and b > 1 else ""
                print(f"{name:14} {' '.join(c):24} {small:5.1f}/{big:5.1f} {s:5.2f}/{b:5.2f} "
                      f"{ratio:8.2f} {rss / big:7.1f}x{flag}", flush=True)


# Relinking over side lines, and a deep export's memory (issue 38).
#
# A Claude Code session has a side line (progress, a stop hook) hanging on
# each message, and pi sessions the same with custom entries; trimming such
# a session to its last 2 messages relinks every side line to the nearest
# kept message. That walk was once quadratic (5k: 0.7 s, 40k: 122 s). A
# ChatGPT export 100,000 messages deep once peaked at 1.9 GB for 47 MB.
#
#     python3 bench/scaling.py --relink [--rounds 3]
#     python3 bench/scaling.py --parallel [--rounds 3]


def side_lines(layout, n, path):
    """n messages, each followed by a side line whose parent is it."""
    with open(path, "w") as f:
        parent = None
        for i in range(n):
            uid = f"m{i}"
            role = "user" if i % 2 == 0 else "assistant"
            if layout == "claude-code":
                content = f"message {i} about src/file{i}.rs"
                f.write(json.dumps({"parentUuid": parent, "isSidechain": False, "sessionId": "b",
                                    "type": role, "uuid": uid,
                                    "message": {"role": role, "content": content}}) + "\n")
                f.write(json.dumps({"parentUuid": uid, "isSidechain": False, "sessionId": "b",
                                    "type": "progress", "uuid": f"p{i}",
                                    "data": {"type": "hook_progress"}}) + "\n")
            else:  # pi
                if i == 0:
                    f.write(json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/w"}) + "\n")
                text = [{"type": "text", "text": f"message {i} about src/file{i}.rs"}]
                f.write(json.dumps({"type": "message", "id": uid, "parentId": parent, "timestamp": "t",
                                    "message": {"role": role, "content": text}}) + "\n")
                f.write(json.dumps({"type": "custom", "id": f"p{i}", "parentId": uid, "timestamp": "t",
                                    "customType": "note", "data": {}}) + "\n")
            parent = uid


def deep_chatgpt(n, path, side=False):
    """n messages deep; with `side`, a regenerated answer hanging off each
    turn (once quadratic to splice: each walked up the removed run)."""
    mapping = {}
    parent = None
    for i in range(n):
        uid = f"n{i}"
        role = "user" if i % 2 == 0 else "assistant"
        kids = ([f"n{i + 1}"] if i + 1 < n else []) + ([f"s{i}"] if side and i else [])
        mapping[uid] = {"id": uid, "parent": parent, "children": kids,
                        "message": {"id": uid, "author": {"role": role}, "create_time": float(i),
                                    "content": {"content_type": "text", "parts": [f"message {i} " + "x" * 300]}}}
        if side and i:
            mapping[f"s{i}"] = {"id": f"s{i}", "parent": uid, "children": [],
                                "message": {"id": f"s{i}", "author": {"role": "assistant"}, "create_time": i + 0.5,
                                            "content": {"content_type": "text", "parts": [f"side {i}"]}}}
        parent = uid
    with open(path, "w") as f:
        json.dump([{"title": "deep", "create_time": 0.0, "current_node": parent, "mapping": mapping}], f)


def cpu_and_rss(cmd):
    """CPU seconds (user + sys) and peak RSS in MB of one run of `cmd`."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def parallel_blocks(k, path, in_progress=False):
    """One Anthropic turn of k parallel tool_use blocks and its k results."""
    uses = [{"type": "tool_use", "id": f"toolu_{i:06d}", "name": "read", "input": {"path": f"f{i}.txt"}}
            for i in range(k)]
    res = [{"type": "tool_result", "tool_use_id": f"toolu_{i:06d}", "content": f"content of file {i}"}
           for i in range(k)]
    msgs = [{"role": "user", "content": "read all"}, {"role": "assistant", "content": uses},
            {"role": "user", "content": res}]
    if not in_progress:
        msgs += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    with open(path, "w") as f:
        json.dump({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": msgs}, f)


def parallel(rounds):
    """Cleaning one turn of K parallel tool blocks (issue 39: 32,000 took
    21.5 s in the proxy; writing the results back scanned the turn per
    result)."""
    cmds = [["compact-tools", "--keep-last", "3"], ["trim", "--max-tokens", "1000"],
            ["summarize", "--threshold", "1000"]]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'command':28} {'K':>7} {'CPU s':>7} {'× the half':>11}")
        for c in cmds:
            prev = None
            for k in (4_000, 8_000, 16_000, 32_000):
                path = os.path.join(tmp, f"par-{k}.json")
                parallel_blocks(k, path, in_progress=c[0] == "trim")
                t = statistics.median(cpu_and_rss([BIN, *c, path])[0] for _ in range(rounds))
                grow = f"{t / prev:11.1f}" if prev else " " * 11
                flag = "  QUADRATIC?" if prev and t / prev > 3 else ""
                print(f"{' '.join(c):28} {k:7,} {t:7.2f} {grow}{flag}", flush=True)
                prev = t


def relink(rounds):
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'layout':12} {'messages':>9} {'trim to 2, CPU s':>17} {'× the half':>11}")
        for layout, sizes in [("claude-code", [5_000, 10_000, 20_000, 40_000]), ("pi", [5_000, 10_000, 20_000])]:
            prev = None
            for n in sizes:
                path = os.path.join(tmp, f"{layout}-{n}.jsonl")
                side_lines(layout, n, path)
                t = statistics.median(
                    cpu_and_rss([BIN, "trim", "--max-messages", "2", "--from", layout, path])[0]
                    for _ in range(rounds))
                grow = f"{t / prev:11.1f}" if prev else " " * 11
                flag = "  QUADRATIC?" if prev and t / prev > 3 else ""
                print(f"{layout:12} {n:9,} {t:17.2f} {grow}{flag}", flush=True)
                prev = t
        path = os.path.join(tmp, "deep.json")
        deep_chatgpt(100_000, path)
        mb = os.path.getsize(path) / 1e6
        t, rss = cpu_and_rss([BIN, "trim", "--max-messages", "2", path])
        print(f"chatgpt export 100,000 deep: {mb:.0f} MB, trim {t:.2f} s CPU, peak RSS {rss:.0f} MB ({rss / mb:.1f}× the file)")
        prev = None
        for n in (10_000, 20_000, 40_000):
            deep_chatgpt(n, path, side=True)
            t = cpu_and_rss([BIN, "trim", "--max-messages", "2", path])[0]
            grow = f", {t / prev:.1f}× the half" if prev else ""
            flag = "  QUADRATIC?" if prev and t / prev > 3 else ""
            print(f"chatgpt export {n:,} deep, a regeneration on each turn: trim {t:.2f} s CPU{grow}{flag}", flush=True)
            prev = t


# Hostile sizes (issue 54). Each case doubles its input; a linear command
# about doubles its CPU time (`QUADRATIC?` past 3×). Peak memory is shown
# where memory was the attack.
#
#     python3 bench/scaling.py --hostile [--rounds 3]


def openai_parallel(k, path):
    """One assistant message with k parallel tool_calls, and their results."""
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": "read", "arguments": json.dumps({"path": f"f{i}"})}} for i in range(k)]
    msgs = [{"role": "user", "content": "read all"},
            {"role": "assistant", "content": None, "tool_calls": calls}]
    msgs += [{"role": "tool", "tool_call_id": f"call_{i}", "content": f"file {i}"} for i in range(k)]
    with open(path, "w") as f:
        json.dump({"model": "gpt-4o", "messages": msgs}, f)


def parallel_as(fmt):
    """openai_parallel's k calls, converted to another request format."""
    def make(k, path):
        openai_parallel(k, path + ".openai.json")
        with open(path, "w") as f:
            subprocess.run([BIN, "convert", "-q", "--to", fmt, path + ".openai.json"], stdout=f, check=True)
    return make


def kimi_undos(n, path):
    """A Kimi Code wire log of n user turns, each answered, with an undo and
    a compaction every few turns."""
    with open(path, "w") as f:
        def line(v):
            f.write(json.dumps(v) + "\n")
        line({"type": "metadata", "protocol_version": "1.5", "created_at": 1787050000000})
        for i in range(n):
            line({"type": "context.append_message", "message": {
                "role": "user", "content": [{"type": "text", "text": f"turn {i}: look at src/m{i}.rs"}],
                "toolCalls": [], "origin": {"kind": "user"}}, "time": 1787050000000 + i})
            line({"type": "context.append_message", "message": {
                "role": "assistant", "content": [{"type": "text", "text": f"done {i}"}], "toolCalls": []},
                "time": 1787050000000 + i})
            if i % 3 == 2:
                line({"type": "context.undo", "count": 1})
            if i % 7 == 6:
                line({"type": "context.apply_compaction", "summary": f"summary {i}",
                      "compactedCount": 2, "keptUserMessageCount": 1})


def librechat_deep(n, path):
    """A recursive LibreChat export: one branch n replies deep."""
    nodes = [{"messageId": f"m{i}", "parentMessageId": f"m{i-1}" if i else "00000000-0000-0000-0000-000000000000",
              "isCreatedByUser": i % 2 == 0, "text": f"message {i} " + "word " * 20, "createdAt": str(i),
              "children": []} for i in range(n)]
    for i in range(n - 1):
        nodes[i]["children"].append(nodes[i + 1])
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * n))
    with open(path, "w") as f:
        json.dump({"conversationId": "c", "exportAt": "t", "recursive": True, "messagesTree": [nodes[0]]}, f)
    sys.setrecursionlimit(limit)


def one_letter(mb, path, letter="a"):
    # Written a megabyte at a time: a forked child's peak memory starts at
    # its parent's, so this process stays small.
    with open(path, "w") as f:
        f.write('{"messages":[{"role":"user","content":"')
        for _ in range(mb):
            f.write(letter * (1 << 20))
        f.write('"}]}')


def one_digit(mb, path):
    # Each piece of a run of digits is three of them: a run read to its end
    # for each piece was quadratic (300 KB took 8 s).
    one_letter(mb, path, "7")


def long_bill_line(mb, path):
    with open(path, "w") as f:
        f.write('{"route":"openai-chat","pad":"')
        for _ in range(mb):
            f.write("x" * (1 << 20))
        f.write('"}\n')
        f.write('{"time":1795702232,"route":"openai-chat","model":"gpt-4o","dollars":0.5}\n')


def cpu_and_peak(cmd):
    """CPU seconds and peak memory (MB) of a command. The peak is GNU time's
    when it is installed: a child forked from this process starts with this
    process's peak (Linux counts the memory it had before its exec)."""
    gnu = "/usr/bin/time"
    if not os.path.exists(gnu):
        return cpu_and_rss(cmd)
    p = subprocess.Popen([gnu, "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = p.communicate()
    lines = err.decode(errors="replace").strip().splitlines()
    peak = int(lines[-1]) / 1024 if lines and lines[-1].isdigit() else float("nan")
    return cpu_time_of(p), peak


_last = [resource.getrusage(resource.RUSAGE_CHILDREN)]


def cpu_time_of(_p):
    """CPU seconds of the children reaped since the last call."""
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, _last[0] = _last[0], now
    return (now.ru_utime - before.ru_utime) + (now.ru_stime - before.ru_stime)


def many_results(n, path):
    """N tool results of 30 random words each, every one over a small
    --max-result-tokens: compact-tools --max-total-tokens then walks every
    candidate with all of them fired."""
    rng = random.Random(n)
    msgs = [{"role": "user", "content": "go"}]
    for k in range(n):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}",
                     "content": " ".join(f"w{rng.randint(0, 99999)}" for _ in range(30))})
    msgs.append({"role": "assistant", "content": "done"})
    with open(path, "w") as f:
        json.dump({"messages": msgs}, f)


def cline_turn(k, path):
    """A Cline history whose one assistant message makes K XML calls, then
    K results, each followed by a short answer."""
    calls = "".join(f"<read_file>\n<path>f{i}.py</path>\n</read_file>\n" for i in range(k))
    msgs = [{"role": "user", "content": [{"type": "text", "text": "<task>\nread\n</task>"}]},
            {"role": "assistant", "content": calls}]
    for i in range(k):
        msgs.append({"role": "user", "content": [{"type": "text", "text": f"[read_file for 'f{i}.py'] Result:"},
                                                 {"type": "text", "text": f"contents {i}"}]})
        msgs.append({"role": "assistant", "content": "ok"})
    with open(path, "w") as f:
        json.dump(msgs, f)


def hostile(rounds):
    cases = [
        ("validate --request, Responses, K calls", parallel_as("responses"), (8_000, 16_000, 32_000), "json",
         lambda p: [BIN, "validate", "--request", "--from", "responses", p]),
        ("filter, LangChain, K parallel calls", parallel_as("langchain"), (8_000, 16_000, 32_000), "json",
         lambda p: [BIN, "filter", "--previous-cycles", "--from", "langchain", p]),
        ("Cline, one turn of K XML calls", cline_turn, (10_000, 20_000, 40_000, 80_000), "json",
         lambda p: [BIN, "stats", "--from", "cline", p]),
        ("compact-tools --max-total-tokens, N results", many_results, (20_000, 40_000, 80_000, 160_000),
         "json", lambda p: [BIN, "compact-tools", "--max-result-tokens", "10", "--max-total-tokens", "100", p]),
        ("validate --request, K parallel calls", openai_parallel, (8_000, 16_000, 32_000, 64_000), "json",
         lambda p: [BIN, "validate", "--request", p]),
        ("Kimi Code, N turns, undos, compactions", kimi_undos, (10_000, 20_000, 40_000, 80_000), "jsonl",
         lambda p: [BIN, "stats", p]),
        ("LibreChat recursive, N deep", librechat_deep, (250, 500, 1_000, 2_000), "json",
         lambda p: [BIN, "trim", "--max-messages", "2", p]),
        ("p50k_base, N MB of one letter", one_letter, (5, 10, 20), "json",
         lambda p: [BIN, "stats", "--tokenizer", "p50k_base", p]),
        ("o200k_base, N MB of one digit", one_digit, (5, 10, 20), "json",
         lambda p: [BIN, "stats", p]),
        ("bill, one line of N MB", long_bill_line, (100, 200, 400), "log",
         lambda p: [BIN, "bill", p]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'case':42} {'N':>7} {'CPU s':>7} {'peak MB':>8} {'× the half':>11}")
        for name, make, sizes, ext, cmd in cases:
            prev = None
            for n in sizes:
                path = os.path.join(tmp, f"case.{ext}")
                make(n, path)
                runs = []
                for _ in range(rounds):
                    cpu_time_of(None)
                    runs.append(cpu_and_peak(cmd(path)))
                t = statistics.median(r[0] for r in runs)
                rss = max(r[1] for r in runs)
                grow = f"{t / prev:11.1f}" if prev else " " * 11
                flag = "  QUADRATIC?" if prev and t / prev > 3 and t > 0.2 else ""
                print(f"{name:42} {n:7,} {t:7.2f} {rss:8.0f} {grow}{flag}", flush=True)
                prev = t


if __name__ == "__main__":
    main()
