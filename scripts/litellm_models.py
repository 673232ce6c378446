#!/usr/bin/env python3
"""Reduces LiteLLM's model table to core/data/models.json (what ctxclean uses).

    pip download litellm --no-deps -d /tmp/litellm
    cd /tmp/litellm && unzip -o litellm-*.whl 'litellm/model_prices_and_context_window_backup.json'
    python3 scripts/litellm_models.py /tmp/litellm/litellm/model_prices_and_context_window_backup.json \
        --version 1.110.2 --date 2026-11-28

Keeps chat models with a price or a context window, and the fields ctxclean
reads (see core/data/SOURCES.md).
"""

import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FIELDS = [
    ("litellm_provider", "provider"),
    ("max_input_tokens", "max_input_tokens"),
    ("input_cost_per_token", "input"),
    ("output_cost_per_token", "output"),
    ("cache_creation_input_token_cost", "cache_write"),
    ("cache_read_input_token_cost", "cache_read"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--version", required=True)
    ap.add_argument("--date", required=True)
    args = ap.parse_args()
    with open(args.source, encoding="utf-8") as f:
        table = json.load(f)
    models = {}
    for name, entry in table.items():
        # Chat models, and those LiteLLM lists under the Responses API only
        # (gpt-5-codex and its kin, which Codex logs name).
        if name == "sample_spec" or not isinstance(entry, dict) or entry.get("mode") not in ("chat", "responses"):
            continue
        if not entry.get("input_cost_per_token") and not entry.get("max_input_tokens"):
            continue
        out = {dst: entry[src] for src, dst in FIELDS if entry.get(src) is not None}
        if entry.get("supports_vision"):
            out["vision"] = True
        models[name] = out
    meta = {
        "source": f"LiteLLM model_prices_and_context_window_backup.json, litellm {args.version} (PyPI wheel)",
        "license": "MIT (BerriAI/litellm)",
        "date": args.date,
        "fields": "provider=litellm_provider, max_input_tokens, input/output=*_cost_per_token (USD per token), "
                  "cache_write=cache_creation_input_token_cost, cache_read=cache_read_input_token_cost, "
                  "vision=supports_vision; chat and responses models only",
    }
    with open(os.path.join(ROOT, "core", "data", "models.json"), "w", encoding="utf-8") as f:
        json.dump({"_meta": meta, "models": models}, f, separators=(",", ":"), sort_keys=True)
    print(f"{len(models)} models")


if __name__ == "__main__":
    main()
