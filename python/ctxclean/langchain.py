"""ctxclean in a LangChain v1 agent.

    from langchain.agents import create_agent
    from ctxclean.langchain import CtxcleanMiddleware

    agent = create_agent(model, tools, middleware=[
        CtxcleanMiddleware([{"op": "filter", "previous_cycles": True},
                            {"op": "trim", "max_tokens": 8000}]),
    ])

`CtxcleanMiddleware` cleans the messages of each model call (the system
message included, as the model sees them), not the agent's stored state:
the history stays whole, each call gets what the recipe keeps.
`CtxcleanEdit` is the same recipe as a strategy of LangChain's
`ContextEditingMiddleware(edits=[...])`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

from langchain.agents.middleware import AgentMiddleware

from . import Recipe, _as_dicts, _give_back, _kept

__all__ = ["CtxcleanMiddleware", "CtxcleanEdit"]


def _clean(messages: list, recipe: Recipe, model: Optional[str], tokenizer: Optional[str]) -> list:
    """The messages the recipe keeps, as the same message objects."""
    if not messages:
        return messages
    dicts, objects = _as_dicts(messages)
    return _give_back(_kept(dicts, recipe, model, tokenizer), dicts, objects)


class CtxcleanMiddleware(AgentMiddleware):
    """Applies a ctxclean recipe (TOML text, a path, or a list of steps) to
    the messages of every model call of an agent."""

    def __init__(self, recipe: Recipe, *, model: Optional[str] = None, tokenizer: Optional[str] = None):
        super().__init__()
        self.recipe = recipe
        self.model = model
        self.tokenizer = tokenizer

    def _request(self, request: Any) -> Any:
        system = [request.system_message] if request.system_message is not None else []
        kept = _clean(system + list(request.messages), self.recipe, self.model, self.tokenizer)
        if system and kept and kept[0] is system[0]:
            return request.override(messages=kept[1:])
        # The recipe dropped or changed the system message: what it kept goes.
        return request.override(messages=kept, system_message=None)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(self._request(request))

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return await handler(await asyncio.to_thread(self._request, request))


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
