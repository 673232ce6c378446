"""ctxclean.trim_messages beside LangChain's, message objects, the agent
middleware and the context-editing strategy."""

import json
import os
import sys
import subprocess
import warnings

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.messages import trim_messages as lc_trim

import ctxclean
from conftest import ROOT, fixture_files


def conversations(exe):
    """The fixtures' conversations with tool calls, as OpenAI messages."""
    out = []
    for path in fixture_files():
        r = subprocess.run([exe, "convert", "--to", "openai", "-q", path], cwd=ROOT, capture_output=True)
        try:
            body = json.loads(r.stdout) if r.returncode == 0 else None
        except ValueError:
            continue
        msgs = body.get("messages") if isinstance(body, dict) else None
        if not msgs or len(msgs) < 4:
            continue
        # LangChain wants a content on every message, and arguments it can
        # parse: conversations it cannot take are left out.
        msgs = [dict(m, content=m.get("content") or "") for m in msgs]
        try:
            convert_to_messages(msgs)
        except (ValueError, TypeError, KeyError):
            continue
        out.append((path, msgs))
    return out


def problems(msgs) -> dict:
    """What an OpenAI-compatible server would reject, counted by kind."""
    if msgs and not isinstance(msgs[0], dict):
        msgs = convert_to_openai_messages(msgs)
    counts = {}
    for p in ctxclean.validate({"messages": msgs}, "openai"):
        counts[p["code"]] = counts.get(p["code"], 0) + 1
    return counts


def orphans(msgs, given=()) -> list:
    """The problems of `msgs` the conversation it came from (`given`) did
    not have as many of: a tool result without its call, a call without
    its results."""
    before, after = problems(list(given)), problems(msgs)
    return [code for code, n in after.items() if n > before.get(code, 0)]


def counter(msgs):
    return ctxclean.count_tokens(convert_to_openai_messages(msgs))


def test_trim_messages_is_langchains_wherever_langchains_answer_is_valid(exe):
    same, langchain_orphans, compared = 0, 0, 0
    for path, msgs in conversations(exe):
        objs = convert_to_messages(msgs)
        total = ctxclean.count_tokens(msgs)
        for share in (0.15, 0.3, 0.5, 0.8):
            budget = max(int(total * share), 10)
            theirs = lc_trim(objs, max_tokens=budget, token_counter=counter, strategy="last", include_system=True)
            ours = ctxclean.trim_messages(objs, max_tokens=budget)
            assert not orphans(ours, objs), f"{path} at {budget}: ctxclean orphaned a tool message"
            compared += 1
            rest = [m for m in theirs if not isinstance(m, SystemMessage)]
            if not theirs or orphans(theirs, objs) or (rest and isinstance(rest[0], ToolMessage)):
                langchain_orphans += bool(theirs)
                continue
            # LangChain drops the call in progress when it does not fit;
            # ctxclean keeps it (the cycle the model is in the middle of).
            if counter(ours) > budget:
                continue
            assert [id(m) for m in ours] == [id(m) for m in theirs], f"{path} at {budget}"
            same += 1
    assert compared > 40 and same > 10, (compared, same)
    assert langchain_orphans > 0, "the corpus shows LangChain orphaning a tool message somewhere"


def test_message_objects_come_back_as_themselves():
    msgs = [
        SystemMessage("You answer briefly.", id="s"),
        HumanMessage("What is in the log? " + "noise " * 200, id="h1"),
        AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "read_log", "args": {"path": "/var/log/x"}}]),
        ToolMessage("line " * 300, tool_call_id="c1", id="t1"),
        AIMessage("The log is long.", id="a2"),
        HumanMessage("And now?", id="h2"),
    ]
    kept = ctxclean.trim_messages(msgs, max_tokens=60)
    assert kept and all(any(k is m for m in msgs) for k in kept)
    assert [m.id for m in kept] == ["s", "a2", "h2"]
    # The call and its result go together, never the result alone.
    kept = ctxclean.trim_messages(msgs, max_tokens=700)
    ids = [m.id for m in kept]
    assert ("a1" in ids) == ("t1" in ids)
    filtered = ctxclean.filter_messages(msgs, exclude_tool_calls=True)
    assert [m.id for m in filtered] == ["s", "h1", "a2", "h2"]
    assert ctxclean.filter_messages(msgs, include_types=[HumanMessage, "system"]) == [msgs[0], msgs[1], msgs[5]]
    assert ctxclean.filter_messages(msgs, exclude_types="ai") == [msgs[0], msgs[1], msgs[5]]
    with pytest.raises(ValueError):
        ctxclean.filter_messages(msgs, include_ids=["h1"])


class Recording:
    """A chat model that answers from a script and records what it was sent."""

    @staticmethod
    def make(script):
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.outputs import ChatGeneration, ChatResult

        class Model(BaseChatModel):
            answers: list
            seen: list

            @property
            def _llm_type(self) -> str:
                return "recording"

            def bind_tools(self, tools, **kwargs):
                return self

            def _generate(self, messages, stop=None, run_manager=None, **kwargs):
                self.seen.append(list(messages))
                return ChatResult(generations=[ChatGeneration(message=self.answers.pop(0))])

        return Model(answers=list(script), seen=[])


def test_the_middleware_cleans_each_model_call_of_an_agent_loop():
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from ctxclean.langchain import CtxcleanMiddleware

    @tool
    def read_file(path: str) -> str:
        """Reads a file."""
        return f"contents of {path}: " + "data " * 400

    script = [AIMessage("", tool_calls=[{"id": f"c{k}", "name": "read_file", "args": {"path": f"f{k}"}}])
              for k in range(4)] + [AIMessage("Done: the files are read.")]
    model = Recording.make(script)
    recipe = [{"op": "compact-tools", "keep_last": 1, "max_result_tokens": 50}]
    agent = create_agent(model, [read_file], system_prompt="You read files.", middleware=[CtxcleanMiddleware(recipe)])
    out = agent.invoke({"messages": [HumanMessage("Read four files.")]})
    assert len(model.seen) == 5
    last = model.seen[-1]
    results = [m for m in last if isinstance(m, ToolMessage)]
    assert len(results) == 4
    # The newest result whole, the older ones compacted; the state is whole.
    assert len(results[-1].content) > 1500 and all(len(r.content) < 600 for r in results[:-1])
    assert isinstance(last[0], SystemMessage)
    stored = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert all(len(r.content) > 1500 for r in stored)
    assert not orphans(last)


def agent_calls(hold):
    """What a model was sent at each call of a 12-call agent loop whose tool
    results pass a 1,500-token trim budget, with or without holding (the
    default cache prices, 0.1 of the input's), or (``hold=None``) with no
    middleware; and the agent's state."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from ctxclean.langchain import CtxcleanMiddleware

    @tool
    def read_file(path: str) -> str:
        """Reads a file."""
        return f"contents of {path}: " + " ".join(f"line{k}" for k in range(120))

    script = [AIMessage("", tool_calls=[{"id": f"c{k}", "name": "read_file", "args": {"path": f"f{k}"}}])
              for k in range(11)] + [AIMessage("Done.")]
    model = Recording.make(script)
    middleware = [] if hold is None else [CtxcleanMiddleware([{"op": "trim", "max_tokens": 1500}], hold=hold)]
    agent = create_agent(model, [read_file], system_prompt="You read files.", middleware=middleware)
    state = agent.invoke({"messages": [HumanMessage("Read the files.")]})["messages"]
    return model.seen, state


def test_the_middleware_holds_what_it_sent_while_the_conversation_grows():
    (held, state), (plain, _) = agent_calls(True), agent_calls(False)
    assert len(held) == len(plain) == 12

    def extends(calls):
        # Calls that send the previous call's messages first (a prompt
        # cache serves all of them).
        return sum(c[:len(p)] == p for p, c in zip(calls, calls[1:]))

    def tokens(msgs):
        return ctxclean.count_tokens(convert_to_openai_messages(msgs))

    # Without holding, the cut moves at every call past the budget; held,
    # a cut stays until the budget is passed, then the conversation is
    # cleaned again (and held from there).
    assert extends(held) >= 8 and extends(plain) <= 5, (extends(held), extends(plain))
    assert all(tokens(c) <= 1500 for c in held)
    assert any(tokens(c) > 1500 for c in agent_calls(None)[0])
    for calls in (held, plain):
        assert all(isinstance(c[0], SystemMessage) for c in calls)
        assert not any(orphans(c) for c in calls)
    # What went on as it came is the agent's own message objects.
    assert all(any(m is n for n in state) for c in held for m in c[1:])


def test_a_request_that_goes_on_as_it_came_is_said():
    # A summarizer that is down: the proxy's rule, the request goes on as it
    # came (not cut without its summary), and the middleware warns of it.
    from ctxclean.langchain import CtxcleanMiddleware

    recipe = [{"op": "summarize", "threshold": 50, "keep": 1, "engine": "ollama", "url": "http://127.0.0.1:9",
               "timeout": 1}]
    middleware = CtxcleanMiddleware(recipe)

    class Request:
        system_message = None
        messages = [HumanMessage("a question " * 100), AIMessage("an answer " * 100), HumanMessage("and?")]

        def override(self, **kw):
            return kw

    with pytest.warns(ctxclean.CtxcleanWarning, match="go on as they came: the summarizer failed"):
        sent = middleware._request(Request())
    assert sent["messages"] == Request.messages and all(a is b for a, b in zip(sent["messages"], Request.messages))


def test_the_middleware_cleans_async_model_calls_too():
    import asyncio

    from langchain.agents import create_agent

    from ctxclean.langchain import CtxcleanMiddleware

    model = Recording.make([AIMessage("Done.")])
    agent = create_agent(model, [], middleware=[CtxcleanMiddleware([{"op": "trim", "max_tokens": 40}])])
    history = [HumanMessage("an old question " * 200, id="old"), AIMessage("an old answer", id="a"),
               HumanMessage("and now?", id="new")]
    out = asyncio.run(agent.ainvoke({"messages": history}))
    assert [m.id for m in model.seen[0]] == ["a", "new"]
    assert out["messages"][0].id == "old", "the state keeps the whole history"


def test_the_context_edit_replaces_the_messages_in_place():
    from langchain.agents.middleware import ContextEditingMiddleware

    from ctxclean.langchain import CtxcleanEdit

    msgs = [HumanMessage("hello " * 300, id="h1"), AIMessage("hi", id="a1"), HumanMessage("again", id="h2")]
    edit = CtxcleanEdit([{"op": "trim", "max_tokens": 40}])
    ContextEditingMiddleware(edits=[edit])
    work = list(msgs)
    edit.apply(work, count_tokens=lambda m: 0)
    assert [m.id for m in work] == ["a1", "h2"]


def test_a_recipe_that_converts_is_refused_not_an_empty_list():
    # It gave back no message at all: the converted records are not the
    # list's, and none was taken for one.
    from ctxclean.langchain import CtxcleanEdit

    msgs = [SystemMessage("s", id="s"), HumanMessage("hi", id="h"), AIMessage("yo", id="a")]
    for recipe in ([{"op": "convert", "to": "anthropic"}], [{"op": "trim", "max_tokens": 100, "to": "gemini"}]):
        work = list(msgs)
        with pytest.raises(ValueError, match="another format"):
            CtxcleanEdit(recipe).apply(work, count_tokens=lambda m: 0)
        assert work == msgs
    edit = CtxcleanEdit([{"op": "convert", "to": "openai"}])
    work = list(msgs)
    edit.apply(work, count_tokens=lambda m: 0)
    assert work == msgs


def test_counts_are_tiktokens(tiktoken_cache):
    import tiktoken

    texts = []
    for path in fixture_files()[:30]:
        texts.append(open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()[:20000])
    texts += ["", " ", "Hello world, it's 2024!\n\n", "日本語のテキスト 🎉 and ascii", "x" * 5000]
    for name, model in (("o200k_base", "gpt-4o"), ("cl100k_base", "gpt-4")):
        enc = tiktoken.get_encoding(name)
        for t in texts:
            assert ctxclean.count_tokens(t, tokenizer=name) == len(enc.encode(t, disallowed_special=())), (name, t[:40])
        # Messages, as OpenAI's cookbook counts them with tiktoken: 3 a
        # message, each value's tokens, 1 more for a name, 3 to prime the reply.
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there", "name": "bob"},
                {"role": "assistant", "content": "Hello! How can I help?"}]
        want = 3 + sum(3 + sum(len(enc.encode(v)) for v in m.values()) + (1 if "name" in m else 0) for m in msgs)
        assert ctxclean.count_tokens(msgs, model=model) == want


def test_counts_are_tiktokens_on_adversarial_text(tiktoken_cache):
    """scripts/adversarial_text.py: every script, combining marks, emoji
    ZWJ sequences, digit and whitespace runs, contractions in every case,
    special-token text, random code points; 2 MB here, 100 MB in
    bench/tiktoken_diff.py."""
    import tiktoken

    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import adversarial_text

    texts = adversarial_text.texts(1_000_000)
    for name in ("o200k_base", "cl100k_base"):
        enc = tiktoken.get_encoding(name)
        wrong = [t for t in texts if ctxclean.count_tokens(t, tokenizer=name) != len(enc.encode(t, disallowed_special=()))]
        assert not wrong, (name, len(wrong), wrong[0][:80])


def test_message_objects_read_as_langchains_converter_writes_them(exe):
    """The package reads a message object with str content without
    LangChain's converter: what it makes is what the converter makes, on
    every fixture's messages and on what the converter treats specially
    (names, refusals, a developer role, tool calls with non-ASCII args);
    anything else is left to the converter."""
    from ctxclean import _openai_dict

    objects = [m for _, msgs in conversations(exe) for m in convert_to_messages(msgs)]
    objects += [
        HumanMessage("hi", name="ann", id="h1"),
        SystemMessage("be brief", additional_kwargs={"__openai_role__": "developer"}),
        AIMessage("", additional_kwargs={"refusal": "no"}),
        AIMessage("calling", tool_calls=[{"name": "f", "args": {"q": "日本", "n": [1, 2.5]}, "id": "c1"}], name="bot"),
        ToolMessage("42", tool_call_id="c1", name="f"),
    ]
    made = 0
    for m in objects:
        mine = _openai_dict(m)
        if mine is not None:
            assert mine == convert_to_openai_messages(m), m
            made += 1
    assert made > 200
    # Not a str content, a subclass, a chat message: the converter's.
    from langchain_core.messages import AIMessageChunk, ChatMessage

    for m in (HumanMessage([{"type": "text", "text": "a"}]), AIMessageChunk("a"), ChatMessage("a", role="critic")):
        assert _openai_dict(m) is None
    # And a list holding one of them is read through it, whole.
    msgs = [SystemMessage("s"), ChatMessage("a", role="user"), HumanMessage([{"type": "text", "text": "b"}])]
    assert ctxclean.trim_messages(msgs, max_tokens=1000) == msgs


def test_anthropic_shaped_messages_never_give_back_a_result_without_its_call():
    """Issue 39: an AIMessage with a tool_use block, then a HumanMessage
    with the tool_result and text (what convert_to_messages makes of
    Anthropic dicts): the result came back without its call."""
    from langchain_core.messages import convert_to_messages

    raw = [
        {"role": "user", "content": "list the files " + "please " * 40},
        {"role": "assistant", "content": [{"type": "text", "text": "Listing."},
                                          {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt " * 40},
                                     {"type": "text", "text": "and now?"}]},
        {"role": "assistant", "content": "Done."},
    ]
    msgs = convert_to_messages(raw)
    for budget in (5, 20, 60, 120, 400):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept = ctxclean.trim_messages(msgs, max_tokens=budget)
        calls = {b["id"] for m in kept if isinstance(m.content, list)
                 for b in m.content if isinstance(b, dict) and b.get("type") == "tool_use"}
        results = [b["tool_use_id"] for m in kept if isinstance(m.content, list)
                   for b in m.content if isinstance(b, dict) and b.get("type") == "tool_result"]
        assert all(r in calls for r in results), (budget, kept)
        assert kept[-1] is msgs[-1]
    kept = ctxclean.trim_messages(msgs, max_tokens=10_000)
    assert all(a is b for a, b in zip(kept, msgs)) and len(kept) == len(msgs)
