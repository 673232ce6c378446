"""
title: ctxclean
description: Cleans each chat before it goes to the model (drops the previous cycles' tool traffic, fits a token budget without orphaning a tool result), so Ollama never truncates past num_ctx silently, and holds the cut while the chat grows, so Ollama's prompt cache keeps serving it.
author: ctxclean
version: 0.1.0
license: MIT OR Apache-2.0
requirements: ctxclean
"""

# An Open WebUI filter function: Admin Panel → Functions → + → paste this
# file, enable it, and attach it to a model (or make it global). `inlet`
# runs before every call to the model; the recipe is a valve, in the TOML
# of `ctxclean apply`. With `hold` (the default), each chat is cleaned as
# `ctxclean serve` cleans it: what went to the model last time goes again
# with the new messages appended, so the model's prompt cache (Ollama keeps
# the last prompt's) serves all of it, until the recipe's trim budget is
# passed; a trim then cuts half its budget.

import warnings
from typing import Optional

from pydantic import BaseModel, Field

import ctxclean

DEFAULT_RECIPE = """\
[[step]]
op = "filter"
previous-cycles = true

[[step]]
op = "trim"
max-tokens = 8000
"""


class Filter:
    class Valves(BaseModel):
        priority: int = Field(default=0, description="Order among filters (lower runs first).")
        recipe: str = Field(default=DEFAULT_RECIPE, description="The ctxclean recipe (TOML, [[step]] tables).")
        model: str = Field(default="", description="Count as this model does (its tokenizer); empty: o200k_base.")
        hold: bool = Field(default=True, description="Hold the cut while a chat grows (prompt caches keep serving it).")

    def __init__(self):
        self.valves = self.Valves()
        self._flight = None  # (recipe, model, ctxclean.InFlight), made again when the valves change

    def _counted(self, make):
        """``make(model)`` with the model valve; a model the price table does
        not know (an Ollama tag such as ``qwen2.5:7b-instruct``) is said and
        counted as o200k_base: a chat never fails because a price is unknown."""
        model = self.valves.model or None
        try:
            return make(model)
        except ValueError as e:
            if model is None:
                raise
            warnings.warn(f"ctxclean: {e}; counting with o200k_base", ctxclean.CtxcleanWarning, stacklevel=3)
            return make(None)

    def inlet(self, body: dict, __user__: Optional[dict] = None) -> dict:
        """The request as Open WebUI is about to send it: its messages
        cleaned by the recipe, everything else as it came."""
        messages = body.get("messages")
        if not messages:
            return body
        recipe, model = self.valves.recipe, self.valves.model or None
        if self.valves.hold:
            if self._flight is None or self._flight[:2] != (recipe, model):
                flight = self._counted(lambda m: ctxclean.InFlight(recipe, model=m))
                self._flight = (recipe, model, flight)
            sent = self._flight[2].clean({"messages": messages})
            body["messages"] = sent["messages"]
            return body
        result = self._counted(lambda m: ctxclean.apply({"messages": messages}, recipe, model=m))
        body["messages"] = result.body["messages"]
        return body

    def outlet(self, body: dict, __user__: Optional[dict] = None) -> dict:
        """The answer, untouched."""
        return body
