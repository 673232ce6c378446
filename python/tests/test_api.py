"""The package's own promises: errors as exceptions, the GIL released,
async variants, the Open WebUI filter on real Open WebUI chats."""

import asyncio
import importlib.util
import json
import os
import subprocess
import threading
import time

import pytest

import ctxclean
from conftest import ROOT


def big_conversation(n):
    msgs = [{"role": "system", "content": "You are a careful agent."}]
    for k in range(n):
        msgs.append({"role": "user", "content": f"step {k}: look at table {k} and tell me what changed since yesterday"})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "sql", "arguments": "{\"q\": \"select 1\"}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"row {k}, " * 20})
        msgs.append({"role": "assistant", "content": f"Table {k} has 20 rows."})
    return msgs


def test_bad_input_is_an_exception_naming_where():
    with pytest.raises(ctxclean.InputError) as e:
        ctxclean.apply(b'{"messages": [{"role": "user", "content": "hi"},\n  {"role": ', [{"op": "trim", "max_tokens": 10}],
                       source="chat.json")
    assert e.value.source == "chat.json" and e.value.line == 2
    assert "chat.json:2" in str(e.value)
    jsonl = b'{"messages": [{"role": "user", "content": "a"}]}\nnot json\n'
    with pytest.raises(ctxclean.InputError) as e:
        ctxclean.count_tokens(jsonl)
    assert e.value.line == 2
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("recipe, says", [
    ([{"op": "trim"}], "max_tokens"),
    ([{"op": "trim", "max_tokens": "many"}], "many"),
    ([{"op": "trim", "max_tokenz": 5}], "unknown key"),
    ([{"op": "frobnicate"}], "unknown op"),
    ([{"max_tokens": 5}], "op"),
    ('[[step]]\nop = "trim"\nmax-tokens = -3\n', "recipe:3"),
    ("not = [toml", "recipe:1"),
    ([{"op": "trim", "max_tokens": 5, "output": "x.json"}], "-o"),
    (42, "recipe"),
])
def test_a_bad_recipe_is_a_value_error(recipe, says):
    with pytest.raises(ValueError) as e:
        ctxclean.apply({"messages": [{"role": "user", "content": "hi"}]}, recipe)
    assert says in str(e.value), str(e.value)


def test_steps_seen_before_are_told_apart_by_their_values_types():
    # A recipe's steps are remembered by their values and types: True is
    # not the step 1 is, whichever comes first.
    body = {"messages": [{"role": "user", "content": "hi"}]}
    ctxclean.apply(body, [{"op": "trim", "max_tokens": 1}])
    with pytest.raises(ValueError):
        ctxclean.apply(body, [{"op": "trim", "max_tokens": True}])
    with pytest.raises(ValueError):
        ctxclean.apply(body, [{"op": "trim", "max_tokens": float("nan")}])
    # A step holding a list is not remembered, and still read.
    out = ctxclean.apply(body, [{"op": "trim", "max_tokens": 1000, "start_on": ["user"]}])
    assert out


def test_bad_arguments_are_value_errors():
    msgs = [{"role": "user", "content": "hi"}]
    for kwargs in ({"max_tokens": -1}, {"max_tokens": 10, "strategy": "middle"}, {"max_tokens": 10, "start_on": "robot"}):
        with pytest.raises(ValueError):
            ctxclean.trim_messages(msgs, **kwargs)
    with pytest.raises(ValueError):
        ctxclean.count_tokens(msgs, model="no-such-model-at-all")
    with pytest.raises(ValueError):
        ctxclean.validate({"messages": msgs}, provider="nobody")
    with pytest.raises(ValueError):
        ctxclean.apply(object(), [{"op": "trim", "max_tokens": 5}])
    import datetime
    with pytest.raises(ValueError):
        ctxclean.trim_messages([{"role": "user", "content": datetime.date.today()}], max_tokens=5)


def test_the_body_comes_back_as_it_was_given():
    body = {"model": "gpt-4o", "temperature": 1.0, "messages": [{"role": "user", "content": "hi"}]}
    recipe = [{"op": "trim", "max_tokens": 1000}]
    assert ctxclean.apply(body, recipe).body == body
    text = json.dumps(body)
    assert ctxclean.apply(text, recipe).body == text
    assert ctxclean.apply(text.encode(), recipe).body == text.encode()
    assert ctxclean.trim_messages([], max_tokens=5) == []


def test_the_gil_is_released_while_rust_works():
    # 5,000 messages: 1.3 s of work in the tests' debug build (20,000 took
    # 6.4 s and told no more), about a tenth of that in a release build.
    msgs = big_conversation(5000)
    ticks = 0
    stop = threading.Event()

    def tick():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    body = json.dumps({"messages": msgs}).encode()
    try:
        start = time.perf_counter()
        ticks_before = ticks
        ctxclean.apply(body, [{"op": "compact-tools", "keep_last": 2, "max_result_tokens": 20},
                              {"op": "trim", "max_tokens": 5000}])
        elapsed = time.perf_counter() - start
        during = ticks - ticks_before
    finally:
        stop.set()
        t.join()
    # The other thread ran through the call: at least a third of the ticks
    # it makes when nothing else runs (a held GIL would give it none).
    assert elapsed > 0.05, "the work is long enough to tell"
    assert during >= elapsed / 0.001 / 3 * 0.5, (during, elapsed)


def test_async_variants():
    msgs = big_conversation(50)

    async def both():
        a = await ctxclean.aapply({"messages": msgs}, [{"op": "trim", "max_tokens": 300}])
        b = await ctxclean.atrim_messages(msgs, max_tokens=300)
        return a, b

    a, b = asyncio.run(both())
    assert a.body["messages"] == b
    assert ctxclean.count_tokens(b) <= 300


def open_webui_filter():
    spec = importlib.util.spec_from_file_location("open_webui_filter", os.path.join(ROOT, "examples", "open_webui_filter.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Filter


def test_the_open_webui_filter_cleans_real_chats(exe):
    Filter = open_webui_filter()
    checked = 0
    for name in sorted(os.listdir(os.path.join(ROOT, "fixtures", "open-webui"))):
        path = os.path.join("fixtures", "open-webui", name)
        r = subprocess.run([exe, "convert", "--to", "openai", "-q", path], cwd=ROOT, capture_output=True)
        assert r.returncode == 0, r.stderr
        try:
            docs = [json.loads(r.stdout)]
        except ValueError:
            docs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        for doc in docs:
            # As Open WebUI sends a chat to its model: the messages, the
            # model, stream, and its own keys.
            msgs = [{"role": m["role"], "content": m.get("content") or ""} for m in doc["messages"]]
            body = {"model": "llama3.1:8b", "messages": msgs, "stream": True,
                    "metadata": {"chat_id": "c1", "message_id": "m1"}, "options": {"num_ctx": 2048}}
            codes = lambda ms: sorted(p["code"] for p in ctxclean.validate({"messages": ms}, "openai"))
            for hold in (False, True):
                f = Filter()
                f.valves.recipe = '[[step]]\nop = "trim"\nmax-tokens = 60\n'
                f.valves.hold = hold
                out = f.inlet(json.loads(json.dumps(body)), {"id": "u1"})
                others = lambda b: {k: v for k, v in b.items() if k != "messages"}
                assert others(out) == others(body)
                assert out["messages"][-1] == msgs[-1] and set(codes(out["messages"])) <= set(codes(msgs)), name
                if not hold:
                    assert out["messages"] == ctxclean.apply({"messages": msgs}, f.valves.recipe).body["messages"]
                    continue
            checked += 1
    assert checked >= 3
    # Held: a chat that grows a turn at a time sends what went last time,
    # the new turn appended, until that passes the budget; then it is cut
    # again (to half the budget), and held from there.
    f = Filter()
    f.valves.recipe = '[[step]]\nop = "trim"\nmax-tokens = 1500\n'
    chat, sent, held = [], None, 0
    for k in range(40):
        chat += [{"role": "user", "content": f"question {k}: " + "why " * 60},
                 {"role": "assistant", "content": f"answer {k}: " + "because " * 60}]
        now = f.inlet({"model": "llama3.1:8b", "messages": chat[:-1]})["messages"]
        assert ctxclean.count_tokens(now) <= 1500 and now[-1] == chat[-2]
        if sent is not None and now[:len(sent)] == sent:
            held += 1
        sent = now + [chat[-1]]
    assert 30 <= held < 39, held
    # The default recipe, on a body with tool traffic of earlier cycles.
    f = Filter()
    msgs = big_conversation(3) + [{"role": "user", "content": "and now?"}]
    out = f.inlet({"model": "m", "messages": msgs})
    assert not any(m["role"] == "tool" for m in out["messages"])
    assert f.outlet({"messages": msgs}) == {"messages": msgs}


def test_the_open_webui_filter_never_fails_on_a_model_without_prices():
    """Ollama's tags are not in the price table: counted as o200k_base,
    said, and the chat goes on (issue 54)."""
    Filter = open_webui_filter()
    msgs = big_conversation(3) + [{"role": "user", "content": "and now?"}]
    for model in ("qwen2.5:7b-instruct", "gpt-oss:20b"):
        for hold in (True, False):
            f = Filter()
            f.valves.model, f.valves.hold = model, hold
            with pytest.warns(ctxclean.CtxcleanWarning, match="counting with o200k_base"):
                out = f.inlet({"model": model, "messages": msgs})
            assert out["messages"][-1]["content"] == "and now?"
            assert not any(m["role"] == "tool" for m in out["messages"])


def test_nan_and_infinities_are_refused_in_python_terms():
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match="not a number ctxclean can use"):
        ctxclean.apply(body, [{"op": "trim", "max_tokens": [float("inf")]}])
    with pytest.raises(ValueError, match="NaN or an infinity"):
        ctxclean.apply({"messages": [{"role": "user", "content": float("nan")}]}, [{"op": "trim", "max_tokens": 5}])
    with pytest.raises(ValueError, match="NaN or an infinity"):
        ctxclean.trim_messages([{"role": "user", "content": "hi", "x": float("nan")}], max_tokens=50)


def test_what_the_command_line_warns_of_is_a_warning():
    msgs = [{"role": "user", "content": "hello " * 300}]
    with pytest.warns(ctxclean.CtxcleanWarning, match="over budget"):
        kept = ctxclean.trim_messages(msgs, max_tokens=10)
    assert kept == msgs, "never emptied"
    with pytest.warns(ctxclean.CtxcleanWarning, match="over budget"):
        result = ctxclean.apply({"messages": msgs}, [{"op": "trim", "max_tokens": 10}])
    assert any("over budget" in w for w in result.warnings)
    thinking = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"}, {"type": "text", "text": "hello"}]}],
        "model": "claude-sonnet-4-5", "max_tokens": 100}
    with pytest.warns(ctxclean.CtxcleanWarning, match="lost"):
        converted = ctxclean.apply(thinking, [{"op": "convert", "to": "openai"}], format="anthropic")
    assert converted.lost and converted.warnings


def test_a_system_only_list_is_never_emptied_in_silence():
    """Issue 39: with include_system=False, [system] came back [] with no
    warning."""
    msgs = [{"role": "system", "content": "You are a helpful assistant who answers in great detail."}]
    for kwargs in ({"max_tokens": 10}, {"max_tokens": 1000, "end_on": "ai"}):
        with pytest.warns(ctxclean.CtxcleanWarning):
            kept = ctxclean.trim_messages(msgs, include_system=False, **kwargs)
        assert kept == msgs, kwargs


def test_langchains_token_counter_is_refused_saying_what_to_use():
    with pytest.raises(TypeError, match="model=.*tokenizer="):
        ctxclean.trim_messages([{"role": "user", "content": "hi"}], max_tokens=10, token_counter=len)
    assert "max_tokens" in ctxclean.trim_messages.__doc__ and "end_on" in ctxclean.trim_messages.__doc__


@pytest.mark.parametrize("call, says", [
    (lambda m: ctxclean.trim_messages(m, max_tokens=2**70), "max_tokens = 1180591620717411303424: too large"),
    (lambda m: ctxclean.apply({"messages": m}, [{"op": "trim", "max_tokens": float("nan")}]),
     "max_tokens = nan: not a number"),
    (lambda m: ctxclean.apply({"messages": m}, [{"op": "trim", "max_tokens": None}]),
     "max_tokens = None: a step's keys take values"),
    (lambda m: ctxclean.apply(b'{"x": 1}', [{"op": "trim", "max_tokens": 5}]), "give format= to name it"),
    (lambda m: ctxclean.stats({"messages": m}, model="no-such-model-at-all"), "model no-such-model-at-all"),
    (lambda m: ctxclean.apply({"messages": m}, [{"op": "trim"}]), "max_tokens"),
    (lambda m: ctxclean.count_tokens("hi", tokenizer="nope"), "'tokenizer'"),
])
def test_errors_are_in_pythons_terms(call, says):
    """Issue 39: errors named CLI flags (--from, --prices), serde internals
    (2**70) and said "expected value" for NaN."""
    with pytest.raises(ValueError) as e:
        call([{"role": "user", "content": "hi"}])
    text = str(e.value)
    assert says in text, text
    assert "--" not in text and "serde" not in text and "expected value" not in text, text


@pytest.mark.parametrize("fn", [lambda m: ctxclean.trim_messages(m, max_tokens=5), ctxclean.filter_messages])
def test_messages_that_are_not_a_list_are_named(fn):
    for wrong in (None, "hi", {"role": "user"}):
        with pytest.raises(TypeError, match="messages: a list of messages"):
            fn(wrong)


def test_the_package_carries_its_licence():
    import importlib.metadata

    dist = importlib.metadata.distribution("ctxclean")
    assert dist.metadata["License-Expression"] == "MIT OR Apache-2.0"
    files = {os.path.basename(str(f)) for f in dist.files or []}
    assert {"LICENSE-MIT", "LICENSE-APACHE"} <= files, files


def agent_history(n, seed):
    """A long agent history: tasks, each a few tool cycles, some parallel,
    answers of random lengths."""
    import random

    rnd = random.Random(seed)
    msgs = [{"role": "system", "content": "You are an agent."}]
    k = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": f"task {k}: " + "please " * rnd.randint(1, 60)})
        for _ in range(rnd.randint(0, 3)):
            ids = [f"c{k}_{j}" for j in range(rnd.randint(1, 3))]
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}} for i in ids]})
            for i in ids:
                msgs.append({"role": "tool", "tool_call_id": i, "content": "line " * rnd.randint(1, 300)})
            k += 1
        if rnd.random() < 0.8:
            msgs.append({"role": "assistant", "content": "done " * rnd.randint(1, 80)})
        k += 1
    return msgs


@pytest.mark.parametrize("seed", range(12))
def test_trimming_a_long_history_from_its_tail_gives_what_the_whole_list_gives(seed, monkeypatch):
    """Issue 43: a long history is trimmed from a tail that settles the cut
    (not converting or counting the rest); the answer and the warnings are
    the whole list's, on random agent histories and every option."""
    import random
    import warnings

    rnd = random.Random(seed)
    msgs = agent_history(rnd.choice([80, 300, 1500]), seed)
    for budget in (0, 50, 400, 3000, 10 ** 6):
        kwargs = dict(max_tokens=budget, include_system=rnd.random() < 0.7, allow_partial=rnd.random() < 0.3,
                      end_on=rnd.choice([None, "human", "ai", ["human", "tool"]]))

        def run():
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                got = ctxclean.trim_messages(msgs, **kwargs)
            return got, [str(x.message) for x in w]

        tail, tail_said = run()
        monkeypatch.setattr(ctxclean, "_TAIL_FROM", 10 ** 9)
        whole, whole_said = run()
        monkeypatch.undo()
        assert tail == whole and tail_said == whole_said, (budget, kwargs)
        assert [id(m) for m in tail if any(m is x for x in msgs)] == [id(m) for m in whole if any(m is x for x in msgs)]


@pytest.mark.parametrize("seed", range(6))
def test_langchain_objects_are_trimmed_from_their_tail_too(seed, monkeypatch):
    """The same tail for LangChain message objects: only the tail is
    converted, and the answer is the whole list's, the same objects."""
    import random

    from langchain_core.messages import convert_to_messages

    rnd = random.Random(seed)
    objs = convert_to_messages(agent_history(rnd.choice([120, 600]), seed))
    for budget in (50, 400, 3000):
        kwargs = dict(max_tokens=budget, include_system=rnd.random() < 0.7, end_on=rnd.choice([None, "human", "ai"]))
        tail = ctxclean.trim_messages(objs, **kwargs)
        monkeypatch.setattr(ctxclean, "_TAIL_FROM", 10 ** 9)
        whole = ctxclean.trim_messages(objs, **kwargs)
        monkeypatch.undo()
        assert [id(m) for m in tail] == [id(m) for m in whole], (budget, kwargs)
