"""ctxclean in a LangChain v1 agent.

    from langchain.agents import create_agent
    from ctxclean.langchain import CtxcleanMiddleware

    agent = create_agent(model, tools, middleware=[
        CtxcleanMiddleware([{"op": "filter", "previous_cycles": True},
                            {"op": "trim", "max_tokens": 8000}]),
    ])

`CtxcleanMiddleware` cleans the messages of each model call (the system
message included, as the model sees them), not the agent's stored state:
the history stays whole, each call gets what the recipe keeps. Like
`ctxclean serve`, it holds what it sent: the next call of the conversation
sends the same messages with the new ones appended (a prompt cache serves
all it sent before), until the recipe's budget is passed or cleaning again
costs less at the model's cache prices. `CtxcleanEdit` is the same recipe
as a strategy of LangChain's `ContextEditingMiddleware(edits=[...])`,
without holding.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

from langchain.agents.middleware import AgentMiddleware

from . import InFlight, Recipe, _as_dicts, _give_back, _kept, _whole

__all__ = ["CtxcleanMiddleware", "CtxcleanEdit"]


def _clean(messages: list, recipe: Recipe, model: Optional[str], tokenizer: Optional[str]) -> list:
    """The messages the recipe keeps, as the same message objects."""
    if not messages:
        return messages
    dicts, objects = _as_dicts(messages)
    return _give_back(_kept(dicts, recipe, model, tokenizer), dicts, objects)


def _held(flight: InFlight, messages: list, model: Optional[str]) -> list:
    """The messages to send, as ``ctxclean serve`` would forward them (see
    :class:`CtxcleanMiddleware`): each the message given where it went on
    as it came, else a new one (a summary, a compacted result)."""
    if not messages:
        return messages
    dicts, objects = _as_dicts(messages)
    body = {"model": model, "messages": dicts} if model else {"messages": dicts}
    sent = flight.clean(body)
    if sent is body:
        return messages
    return _match(sent["messages"], dicts, objects)


def _match(written: list, dicts: list, objects: Optional[list]) -> list:
    """``written`` as the messages given where one is equal to a given one
    (in order, matched from the end: a trim keeps the last messages), else
    as a new message."""
    def key(d):
        content = d.get("content")
        calls = tuple(str(c.get("id")) for c in d.get("tool_calls") or () if isinstance(c, dict))
        return d.get("role"), content if isinstance(content, str) else None, d.get("tool_call_id"), calls

    # Each key's positions not yet passed: matching goes backward only, so
    # a conversation of many alike messages is not scanned again per message.
    at_key: dict = {}
    for i, d in enumerate(dicts):
        at_key.setdefault(key(d), []).append(i)
    out, bound = [], len(dicts)
    for w in reversed(written):
        left = at_key.get(key(w), [])
        while left and left[-1] >= bound:
            left.pop()
        found = next((i for i in reversed(left) if dicts[i] == w), None)
        if found is None:
            out.append(_give_back([(None, w)], dicts, objects)[0])
        else:
            bound = found
            out.append(dicts[found] if objects is None else objects[found])
    out.reverse()
    return out if objects is None else _whole(out)


class CtxcleanMiddleware(AgentMiddleware):
    """Applies a ctxclean recipe (TOML text, a path, or a list of steps) to
    the messages of every model call of an agent, holding what it sent
    while that costs less (``hold=False``: each call cleaned on its own).
    ``model`` names the model for its tokenizer and cache prices;
    ``cache_horizon`` is ``ctxclean serve --cache-horizon``."""

    def __init__(self, recipe: Recipe, *, model: Optional[str] = None, tokenizer: Optional[str] = None,
                 hold: bool = True, cache_horizon: Optional[int] = None):
        super().__init__()
        self.recipe = recipe
        self.model = model
        self.tokenizer = tokenizer
        self._flight = InFlight(recipe, model=model, tokenizer=tokenizer, cache_horizon=cache_horizon) if hold else None

    def _request(self, request: Any) -> Any:
        system = [request.system_message] if request.system_message is not None else []
        messages = system + list(request.messages)
        if self._flight is None:
            kept = _clean(messages, self.recipe, self.model, self.tokenizer)
        else:
            kept = _held(self._flight, messages, self.model or _model_name(request))
        if system and kept and kept[0] is system[0]:
            return request.override(messages=kept[1:])
        # The recipe dropped or changed the system message: what it kept goes.
        return request.override(messages=kept, system_message=None)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(self._request(request))

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return await handler(await asyncio.to_thread(self._request, request))


def _model_name(request: Any) -> Optional[str]:
    """The chat model's name, for its cache prices, where it says it."""
    for attr in ("model_name", "model", "model_id"):
        name = getattr(getattr(request, "model", None), attr, None)
        if isinstance(name, str):
            return name
    return None


class CtxcleanEdit:
    """A ctxclean recipe as a `ContextEditingMiddleware` edit: replaces the
    message list in place with what the recipe keeps (LangChain's token
    counter is not used: ctxclean counts exactly with its own)."""

    def __init__(self, recipe: Recipe, *, model: Optional[str] = None, tokenizer: Optional[str] = None):
        self.recipe = recipe
        self.model = model
        self.tokenizer = tokenizer

    def apply(self, messages: list, *, count_tokens: Any = None) -> None:
        messages[:] = _clean(list(messages), self.recipe, self.model, self.tokenizer)
