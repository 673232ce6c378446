"""ctxclean for Python: clean LLM conversations before they go back to a
model, in process.

Every function calls the Rust library ctxclean's command line is built on
(the GIL released while it works): the same recipe does the same thing here
as in ``ctxclean apply``, byte for byte. This module only turns Python
values into JSON and back.

    import ctxclean
    result = ctxclean.apply(body, [{"op": "trim", "max_tokens": 8000}])
    result.body, result.report

    ctxclean.trim_messages(messages, max_tokens=8000)
    ctxclean.count_tokens(messages, model="gpt-4o")
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import re
import warnings as _warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

from . import _native

__all__ = [
    "InputError",
    "CtxcleanWarning",
    "Result",
    "InFlight",
    "apply",
    "aapply",
    "trim_messages",
    "atrim_messages",
    "filter_messages",
    "count_tokens",
    "stats",
    "validate",
]


class InputError(ValueError):
    """An input ctxclean cannot read: ``source`` names it (``<python>``
    unless given), ``line`` is the 1-based line of the problem."""

    def __init__(self, message: str, source: Optional[str] = None, line: Optional[int] = None):
        super().__init__(message)
        self.source = source
        self.line = line


class CtxcleanWarning(UserWarning):
    """What the command line warns of on standard error, raised with
    :mod:`warnings`: a conversation kept over its budget, a summary that
    fell back to truncation, an emptied conversation, what a conversion
    lost."""


@dataclass(frozen=True)
class Result:
    """What :func:`apply` made: ``body`` (the same kind it was given: a
    dict or list, a str, or bytes), ``report`` (what ``--report`` writes),
    ``lost`` (what a conversion could not hold), ``warnings`` (what was
    also warned of with :class:`CtxcleanWarning`)."""

    body: Any
    report: dict
    lost: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def _tell(said: list, lost: list, depth: int = 3) -> list:
    """Warns of what the command line says on standard error (``depth``:
    the caller's frame, for the warning's line)."""
    said = list(said)
    for loss in lost:
        said.append(f"lost: {loss['what']} ({loss['reason']})")
    for text in said:
        _warnings.warn(f"ctxclean: {text}", CtxcleanWarning, stacklevel=depth)
    return said


Recipe = Union[str, "os.PathLike[str]", Sequence[dict]]


# The library's messages name the command line's flags; in Python they are
# arguments (``format=``) or a recipe step's keys (``max_tokens``).
_PHRASES = (("use --from to name the format", "give format= to name it"),)
_ARGUMENTS = {"from": "format"}
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?: <[A-Z_]+>| [A-Z]+\b)?")


def _python_terms(message: str) -> str:
    """A library message in Python's terms: ``--from`` is ``format``, a
    step's ``--max-tokens <N>`` its key ``max_tokens``."""
    for cli, python in _PHRASES:
        message = message.replace(cli, python)
    return _FLAG.sub(lambda m: _ARGUMENTS.get(m.group(1)) or m.group(1).replace("-", "_"), message)


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except _native.NativeInputError as e:
        message, source, line = e.args
        raise InputError(_python_terms(message), source, line) from None
    except ValueError as e:
        raise ValueError(_python_terms(str(e))) from None


def _non_finite(value) -> bool:
    """Whether a value holds NaN or an infinity, at any depth."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_non_finite(v) for v in value)
    return False


def _checked_steps(recipe: Sequence[dict]) -> None:
    """Refuses, in Python's terms, a step value a recipe cannot hold: None,
    NaN or an infinity (at any depth), an int outside TOML's 64 bits."""
    for n, step in enumerate(recipe, 1):
        for key, value in step.items():
            where = f"step {n}: {str(key).replace('-', '_')} = {value!r}"
            if value is None:
                raise ValueError(f"{where}: a step's keys take values; leave the key out for its default")
            if _non_finite(value):
                raise ValueError(f"{where}: not a number ctxclean can use")
            if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
                raise ValueError(f"{where}: too large (a recipe's numbers fit in 64 bits)")


@functools.lru_cache(maxsize=256)
def _steps_of_json(text: str) -> list:
    return _call(_native.steps_from_json, text)


@functools.lru_cache(maxsize=64)
def _steps_of_toml(text: str, name: str) -> list:
    return _call(_native.steps_from_toml, text, name)


@functools.lru_cache(maxsize=256)
def _steps_of_key(key: tuple) -> list:
    recipe = [{k: v for k, _, v in step} for step in key]
    _checked_steps(recipe)
    return _steps_of_json(json.dumps(recipe))


def _steps_key(recipe) -> Optional[tuple]:
    """A list of step tables as a key of the steps seen before: each value
    with its type (``True`` and ``1`` are different steps); None when a
    value cannot be a key (a list)."""
    try:
        key = tuple(tuple((k, type(v), v) for k, v in step.items()) for step in recipe)
        hash(key)
    except TypeError:
        return None
    return key


def _steps(recipe: Recipe) -> list:
    """A recipe as the words of its steps: TOML text, a path to a TOML
    file, or a list of step tables (``{"op": "trim", "max_tokens": 8000}``).
    The words of a recipe seen before are remembered."""
    if isinstance(recipe, (list, tuple)):
        if not all(isinstance(s, dict) for s in recipe):
            raise ValueError("a recipe's steps are tables: [{'op': 'trim', 'max_tokens': 8000}]")
        key = _steps_key(recipe)
        if key is not None:
            return _steps_of_key(key)
        _checked_steps(recipe)
        return _steps_of_json(json.dumps(list(recipe)))
    if isinstance(recipe, os.PathLike) or (
        isinstance(recipe, str) and "[[step]]" not in recipe and os.path.isfile(recipe)
    ):
        path = os.fspath(recipe)
        with open(path, encoding="utf-8") as f:
            return _steps_of_toml(f.read(), path)
    if isinstance(recipe, str):
        return _steps_of_toml(recipe, "recipe")
    raise ValueError(f"a recipe is TOML text, a path, or a list of steps, not {type(recipe).__name__}")


def _encode(body: Any):
    """A body as bytes, and how to give the result back."""
    if isinstance(body, bytes):
        return body, "bytes"
    if isinstance(body, str):
        return body.encode("utf-8"), "str"
    if isinstance(body, (dict, list)):
        try:
            return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8"), "json"
        except ValueError as e:
            if _non_finite(body):
                raise InputError("a body is JSON, whose numbers are finite: it holds NaN or an infinity") from None
            raise ValueError(f"a body is JSON: {e}") from None
        except TypeError as e:
            raise ValueError(f"a body is JSON: {e}") from None
    raise ValueError(f"a body is a dict, a list, a str or bytes, not {type(body).__name__}")


def _decode(data: bytes, kind: str):
    if kind == "bytes":
        return data
    if kind == "str":
        return data.decode("utf-8")
    return json.loads(data)


def apply(
    body: Any,
    recipe: Recipe,
    *,
    format: Optional[str] = None,
    model: Optional[str] = None,
    tokenizer: Optional[str] = None,
    source: str = "<python>",
    full_report: bool = True,
) -> Result:
    """Applies a recipe to a request body or a transcript (any format
    ctxclean reads; ``format`` forces one), as ``ctxclean apply`` does to a
    file. ``model`` and ``tokenizer`` are ``--model`` and ``--tokenizer``
    unless a step gives them. ``full_report=False``: the report says what
    changed but counts only what the operations counted (faster)."""
    data, kind = _encode(body)
    steps = _steps(recipe)
    out, report, lost, said = _call(_native.apply, data, steps, source, format, model, tokenizer, full_report)
    lost = json.loads(lost)
    return Result(_decode(out, kind), json.loads(report), lost, _tell(said, lost))


async def aapply(body: Any, recipe: Recipe, **kwargs) -> Result:
    """:func:`apply` on a worker thread: a summarizer server may take seconds."""
    return await asyncio.to_thread(apply, body, recipe, **kwargs)


class InFlight:
    """A recipe applied to the requests of an app or agent in flight, as
    ``ctxclean serve`` applies it (the same library call): each request
    body is cleaned without being made invalid for its provider, and a
    conversation seen before is held, what went on last time sent again
    with the new messages appended (a prompt cache, or Ollama's, keeps
    serving all of it), until the recipe's trim budget is passed or cleaning
    again has paid for itself: once the reads of what it would take out,
    added up request by request, reach the cache write it costs (rent or
    buy), or with ``cache_horizon`` N when it costs less within N more
    requests; a trim then cuts half its budget (unless given a
    ``step``). One per app; safe to share between threads. Up to 1,024
    conversations are held (256 MiB of requests), the least recently used
    forgotten first."""

    def __init__(self, recipe: Recipe, *, model: Optional[str] = None, tokenizer: Optional[str] = None,
                 cache_horizon: Optional[int] = None):
        self._native = _call(_native.InFlight, _steps(recipe), model, tokenizer, cache_horizon)

    def clean(self, body: dict) -> dict:
        """The OpenAI-shaped request body (``{"model": …, "messages":
        […], …}``) to send: the body itself when it goes on as it came, else
        a new one, every key but the messages as it came. What the command
        line would warn of, and a body that goes on as it came because the
        recipe would make it invalid or its summary failed, is a
        :class:`CtxcleanWarning`."""
        data, _ = _encode(body)
        sent, _cache, kept_because, said = _call(self._native.clean, data)
        if kept_because:
            said = [*said, f"the messages go on as they came: {kept_because}"]
        _tell(said, [])
        return body if sent is None else json.loads(sent)


# LangChain's message types, as ctxclean's roles.
_TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
          "function": "function", "developer": "developer", "user": "user", "assistant": "assistant"}


def _roles(spec) -> Optional[str]:
    """A type, class, or list of them (LangChain's ``start_on``,
    ``include_types``) as ctxclean's comma list of roles."""
    if spec is None:
        return None
    items = [spec] if isinstance(spec, (str, type)) else list(spec)
    roles = []
    for item in items:
        name = item
        if isinstance(item, type) and "type" in getattr(item, "model_fields", {}):
            name = item.model_fields["type"].default
        if name not in _TYPES:
            raise ValueError(f"message type {item!r}: one of {', '.join(sorted(_TYPES))}")
        roles.append(_TYPES[name])
    return ",".join(dict.fromkeys(roles))


def _as_dicts(messages: Sequence[Any]):
    """Messages as OpenAI dicts; for LangChain message objects, the objects
    too, to give back."""
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Iterable):
        raise TypeError(f"messages: a list of messages (dicts or LangChain messages), not {type(messages).__name__}")
    messages = list(messages)
    if all(isinstance(m, dict) for m in messages):
        return messages, None
    from langchain_core.messages import BaseMessage, convert_to_openai_messages

    if not all(isinstance(m, BaseMessage) for m in messages):
        raise ValueError("messages are all dicts or all LangChain messages")
    dicts = [_openai_dict(m) for m in messages]
    if all(d is not None for d in dicts):
        return dicts, messages
    # Message by message: a human message holding Anthropic tool_result
    # blocks is one tool message per result, then the rest as the user's,
    # each a piece of it to give back (LangChain's converter put the text
    # before the results, or dropped the results: a result lost its call).
    fast, dicts, objects = dicts, [], []
    for m, d in zip(messages, fast):
        if d is not None:
            dicts.append(d)
            objects.append(m)
            continue
        for piece, blocks in _pieces(m, convert_to_openai_messages):
            dicts.append(piece)
            objects.append(m if blocks is None else _Piece(m, blocks))
    return dicts, objects


class _Piece:
    """Some blocks of a LangChain message's content (see :func:`_as_dicts`)."""

    __slots__ = ("message", "blocks")

    def __init__(self, message, blocks):
        self.message, self.blocks = message, blocks


def _pieces(m, convert) -> list:
    """The OpenAI dicts of one LangChain message, each with the indices of
    the content blocks it holds (``None``: all of the message)."""
    content = m.content
    is_result = lambda b: isinstance(b, dict) and b.get("type") == "tool_result"  # noqa: E731
    if m.type != "human" or not isinstance(content, list) or not any(is_result(b) for b in content):
        return [(convert(m), None)]
    out, rest = [], []
    for k, b in enumerate(content):
        if not is_result(b):
            rest.append(k)
            continue
        text = b.get("content")
        if isinstance(text, list):
            text = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in text)
        elif not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        out.append(({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": text}, [k]))
    if rest:
        out.append((convert(m.model_copy(update={"content": [content[k] for k in rest]})), rest))
    return out


def _whole(given: list) -> list:
    """Pieces of one message given back next to each other become that
    message: itself when all its blocks are there, else a copy with the
    blocks kept (a tool result never without its call, a text never
    doubled)."""
    out = []
    for g in given:
        if not isinstance(g, _Piece):
            out.append(g)
            continue
        last = out[-1] if out else None
        if isinstance(last, _Piece) and last.message is g.message:
            last.blocks = last.blocks + g.blocks
        else:
            out.append(_Piece(g.message, list(g.blocks)))
    for k, g in enumerate(out):
        if isinstance(g, _Piece):
            content = g.message.content
            blocks = sorted(set(g.blocks))
            out[k] = g.message if len(blocks) == len(content) else g.message.model_copy(
                update={"content": [content[b] for b in blocks]})
    return out


@functools.lru_cache(maxsize=1)
def _langchain_types():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    return {HumanMessage: "user", AIMessage: "assistant", SystemMessage: "system", ToolMessage: "tool"}


def _openai_dict(m) -> Optional[dict]:
    """The dict LangChain's ``convert_to_openai_messages`` makes of a
    human, AI, system or tool message whose content is a str, made
    without its general machinery (which takes most of a trim's time);
    ``None`` for any other message, left to it. The tests hold the two
    equal on every fixture."""
    kind = _langchain_types().get(type(m))
    content = m.content
    if kind is None or not isinstance(content, str):
        return None
    extra = m.additional_kwargs
    role = extra.get("__openai_role__", "system") if kind == "system" else kind
    if not isinstance(role, str):
        return None
    d = {"role": role}
    if m.name:
        d["name"] = m.name
    if kind == "assistant" and m.tool_calls:
        d["tool_calls"] = [{"type": "function", "id": c["id"],
                            "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)}}
                           for c in m.tool_calls]
    if extra.get("refusal"):
        d["refusal"] = extra["refusal"]
    if kind == "tool":
        d["tool_call_id"] = m.tool_call_id
    d["content"] = content
    return d


def _kept(dicts: list, recipe: Recipe, model=None, tokenizer=None, quiet=False):
    """The messages a recipe keeps of ``dicts`` (``{"messages": dicts}``),
    each as the input message it is (its position), or, where ctxclean
    wrote a new or changed message, that message: ``(i, None)`` or
    ``(i or None, message)``. The library reads the dicts as they are (no
    JSON text is written), unless they hold what only ``json.dumps``
    writes (a tuple, a subclass, NaN, …); the body it writes is parsed only
    when a message was added or changed. ``quiet``: the warnings are
    handed back, not given."""
    steps = _steps(recipe)
    got = _call(_native.kept, dicts, None, steps, model, tokenizer)
    if got is None:
        data, _ = _encode({"messages": dicts})
        got = _call(_native.kept, None, data, steps, model, tokenizer)
    picked, out, said, lost = got
    lost = [] if lost == "[]" else json.loads(lost)
    if quiet:
        told = (said, lost)
    else:
        _tell(said, lost, depth=5)
    if out is not None:
        body = json.loads(out)
        written = body["messages"] if isinstance(body, dict) else body
        picked = [(i, None if pos is None else written[pos]) for i, pos in picked]
    return (picked, told) if quiet else picked


# A list longer than this is trimmed from a tail first (see `_tail_start`).
_TAIL_FROM = 64
_ROLES = ("system", "developer", "user", "assistant", "tool")


# LangChain's message types, as the roles above.
_TYPES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _role_content(m):
    """A message's role (of `_ROLES`, else None), content, and calls, from
    a dict or a LangChain message object."""
    if isinstance(m, dict):
        return m.get("role"), m.get("content"), m.get("tool_calls", "")
    return _TYPES.get(getattr(m, "type", None)), getattr(m, "content", None), getattr(m, "tool_calls", "")


def _tail_start(messages: list, max_tokens: int) -> Optional[int]:
    """Where a tail of the messages that surely holds more than the budget
    starts: a user message of plain text, from the end past twice the
    budget's characters (about four to a token). None when there is none
    (a short list, or a shape the shortcut does not know)."""
    need, chars = 8 * max_tokens, 0
    for i in range(len(messages) - 1, 0, -1):
        role, content, calls = _role_content(messages[i])
        if role not in _ROLES:
            return None
        chars += len(content) if isinstance(content, str) else len(str(content)) + len(str(calls or ""))
        if chars >= need and role == "user" and isinstance(content, str):
            return i
    return None


def _trim_tail(messages: list, step: dict, model, tokenizer):
    """`trim --strategy last` run on a tail of a long list (with its system
    message), when the tail alone settles the cut: what it keeps is then
    what the whole list would keep, without reading the rest (issue 43).
    None when it does not: the whole list is trimmed instead.

    The tail starts at a user message, so no tool call and result and no
    cycle in progress straddle it; it holds more than the budget, and the
    cut fell after its first message, so the walk from the end stopped
    inside it, as it would on the whole list."""
    if len(messages) <= _TAIL_FROM or step.get("strategy") != "last" or "start-on" in step:
        return None
    t = _tail_start(messages, step["max-tokens"])
    if t is None or t < 2:
        return None
    keep_system = "no-system" not in step and _role_content(messages[0])[0] in ("system", "developer")
    head = [messages[0]] if keep_system else []
    dicts, objects = _as_dicts(head + messages[t:])
    # The tail's first message is one dict (a user message of plain text),
    # after the system message's.
    first = len(_as_dicts(head)[0]) if head else 0
    picked, (said, lost) = _kept(dicts, [step], model, tokenizer, quiet=True)
    if any(i == first for i, _ in picked):
        return None
    _tell(said, lost, depth=5)
    return _give_back(picked, dicts, objects)


def _give_back(picked: list, dicts: list, objects: Optional[list]) -> list:
    """The messages kept, as the kind given: a kept dict or object is
    itself (its id and fields as they were); one ctxclean changed (a
    partial message) is the message written, as a copy of the object with
    the new content; an added one, a new message."""
    if objects is None:
        return [dicts[i] if new is None else new for i, new in picked]
    given = []
    for i, new in picked:
        if new is None:
            given.append(objects[i])
            continue
        from langchain_core.messages import convert_to_messages

        message = convert_to_messages([new])[0]
        if i is not None and type(objects[i]) is type(message):
            message = objects[i].model_copy(update={"content": message.content})
        given.append(message)
    return _whole(given)


def trim_messages(
    messages: Sequence[Any],
    *,
    max_tokens: int,
    strategy: str = "last",
    start_on: Union[str, Sequence[str], None] = None,
    end_on: Union[str, Sequence[str], None] = None,
    include_system: bool = True,
    allow_partial: bool = False,
    model: Optional[str] = None,
    tokenizer: Optional[str] = None,
    token_counter: Any = None,
) -> list:
    """LangChain's ``trim_messages``, with ctxclean's exact counts and
    without its orphans: a tool call and its results are kept or dropped
    together, and the conversation is never emptied. On dicts it returns
    exactly the messages ``ctxclean trim --max-tokens N`` writes for
    ``{"messages": messages}``; on LangChain messages, the messages kept
    (the same objects).

    Args:
        messages: OpenAI-shaped dicts, or LangChain message objects.
        max_tokens: the budget, in tokens of ``model``'s (or
            ``tokenizer``'s) encoding.
        strategy: ``"last"`` keeps the end of the conversation, ``"first"``
            its start.
        start_on: the role (or roles: ``"human"``/``"user"``, ``"ai"``/
            ``"assistant"``, ``"system"``, ``"tool"``) the kept messages
            start on, after the system message.
        end_on: the role (or roles) they end on.
        include_system: keep the first message when it is a system message
            (LangChain's default here is the same); with ``False`` it is
            trimmed as any other, and a list of only it is kept, warned of.
        allow_partial: cut the first message that does not fit to what
            fits, rather than dropping it.
        model: the model the messages go to (its tokenizer), e.g.
            ``"gpt-4o"``.
        tokenizer: ``"o200k_base"``, ``"cl100k_base"``, ``"p50k_base"``,
            ``"r50k_base"``, ``"approx"`` or ``"hf:PATH"``.
        token_counter: LangChain's argument, not taken: ctxclean counts
            exactly with its own tokenizers; give ``model=`` or
            ``tokenizer=`` instead.

    Returns:
        The messages kept, as given (dicts or the same objects); a message
        cut by ``allow_partial`` is a copy with the content kept.

    Warns:
        CtxcleanWarning: what the command line warns of (a conversation
        kept over its budget, the last message kept rather than none).
    """
    if token_counter is not None:
        raise TypeError(
            "trim_messages: token_counter is LangChain's; ctxclean counts exactly with its own "
            "tokenizers: give model='gpt-4o' (or any model) or tokenizer='o200k_base' instead"
        )
    if strategy not in ("last", "first"):
        raise ValueError(f"strategy {strategy!r}: 'last' or 'first'")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
        raise ValueError(f"max_tokens {max_tokens!r}: a whole number of tokens")
    step = {"op": "trim", "max-tokens": max_tokens, "strategy": strategy}
    if start_on is not None:
        step["start-on"] = _roles(start_on)
    if end_on is not None:
        step["end-on"] = _roles(end_on)
    if not include_system:
        step["no-system"] = True
    if allow_partial:
        step["allow-partial"] = True
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Iterable):
        _as_dicts(messages)  # raises, naming the argument
    messages = list(messages)
    tail = _trim_tail(messages, step, model, tokenizer)
    if tail is not None:
        return tail
    dicts, objects = _as_dicts(messages)
    if not dicts:
        return []
    return _give_back(_kept(dicts, [step], model, tokenizer), dicts, objects)


async def atrim_messages(messages: Sequence[Any], **kwargs) -> list:
    """:func:`trim_messages` on a worker thread."""
    return await asyncio.to_thread(trim_messages, messages, **kwargs)


def filter_messages(
    messages: Sequence[Any],
    *,
    include_names: Optional[Iterable[str]] = None,
    exclude_names: Optional[Iterable[str]] = None,
    include_types=None,
    exclude_types=None,
    include_ids: Optional[Iterable[str]] = None,
    exclude_ids: Optional[Iterable[str]] = None,
    exclude_tool_calls: Union[bool, Iterable[str], None] = None,
    previous_cycles: bool = False,
    agent: Optional[str] = None,
    strip_processed_images: bool = False,
    dedupe_tool_results: bool = False,
    drop_thinking: bool = False,
) -> list:
    """LangChain's ``filter_messages`` (by name, by type, dropping tool
    calls), and ctxclean's own rules (``previous_cycles``, ``agent``, …),
    as ``ctxclean filter`` applies them: a call and its results go
    together. Message ids are not a rule of ctxclean's: ``include_ids`` and
    ``exclude_ids`` are refused."""
    if include_ids is not None or exclude_ids is not None:
        raise ValueError("include_ids/exclude_ids: ctxclean filters by type, name, tool and cycle, not by id")
    if exclude_tool_calls not in (None, True, False):
        raise ValueError("exclude_tool_calls: True drops every tool call with its results; ids are not taken")
    step: dict = {"op": "filter"}
    for key, value in (("include-names", include_names), ("exclude-names", exclude_names)):
        if value is not None:
            step[key] = ",".join([value] if isinstance(value, str) else list(value))
    for key, value in (("include-roles", include_types), ("exclude-roles", exclude_types)):
        if value is not None:
            step[key] = _roles(value)
    for key, on in (("exclude-tool-calls", exclude_tool_calls), ("previous-cycles", previous_cycles),
                    ("strip-processed-images", strip_processed_images),
                    ("dedupe-tool-results", dedupe_tool_results), ("drop-thinking", drop_thinking)):
        if on:
            step[key] = True
    if agent is not None:
        step["agent"] = agent
    dicts, objects = _as_dicts(messages)
    if not dicts:
        return []
    return _give_back(_kept(dicts, [step]), dicts, objects)


def count_tokens(
    messages_or_body: Any,
    *,
    model: Optional[str] = None,
    tokenizer: Optional[str] = None,
    format: Optional[str] = None,
) -> int:
    """Exact tokens: of a text (a ``str``, as tiktoken counts it), or of a
    list of messages, a body (a dict) or a transcript (``bytes``) as
    ``ctxclean stats`` counts its conversations: the per-message tokens and
    the reply priming included. With ``tokenizer``, else ``model``'s, else
    o200k_base."""
    value = messages_or_body
    if isinstance(value, str):
        return _call(_native.count_tokens, None, value, format, model, tokenizer)
    if isinstance(value, (list, tuple)):
        dicts, _ = _as_dicts(value)
        value = {"messages": dicts}
    data, _ = _encode(value)
    return _call(_native.count_tokens, data, None, format, model, tokenizer)


def stats(body: Any, *, model: Optional[str] = None, tokenizer: Optional[str] = None,
          format: Optional[str] = None, source: str = "<python>") -> dict:
    """The object ``ctxclean stats --json`` prints for a body or a list of
    messages."""
    if isinstance(body, (list, tuple)):
        body = {"messages": _as_dicts(body)[0]}
    data, _ = _encode(body)
    return json.loads(_call(_native.stats, data, source, format, model, tokenizer))


def validate(body: Any, provider: Optional[str] = None, *, format: Optional[str] = None,
             source: str = "<python>") -> list:
    """What the provider (``openai``, ``anthropic``, ``gemini``,
    ``responses``; else the body's own) would reject the body for, as
    ``ctxclean validate --json`` lists it: an empty list when it is valid."""
    if isinstance(body, (list, tuple)):
        body = {"messages": _as_dicts(body)[0]}
    data, _ = _encode(body)
    return json.loads(_call(_native.validate, data, source, format, provider))
