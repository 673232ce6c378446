#!/usr/bin/env bash
# Seeds the fuzz corpora from the fixtures (run from fuzz/).
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../fixtures
mkdir -p corpus/{read_auto,read_format,read_chunks,read_trusting,open_webui_details,tool_result_json,operations,pre_tokenizer,inflight,answer_tap,bill_chart,read_value}
n=0
while IFS= read -r -d '' f; do
  size=$(wc -c < "$f")
  [ "$size" -gt 65536 ] && continue
  n=$((n + 1))
  cp "$f" "corpus/read_auto/$n"
  cp "$f" "corpus/read_trusting/$n"
  for k in $(seq 0 36); do
    { printf "\\$(printf '%03o' "$k")"; cat "$f"; } > "corpus/read_format/$n-$k"
  done
  { printf 'P'; cat "$f"; } > "corpus/read_chunks/$n"
  { printf '\x05'; cat "$f"; } > "corpus/operations/$n"
  cp "$f" "corpus/pre_tokenizer/$n"
  # Each request format, a budget that cuts (the first byte's upper bits).
  for k in 4 5 6 7; do
    { printf "\\$(printf '%03o' "$k")"; cat "$f"; } > "corpus/inflight/$n-$k"
  done
  for k in 0 1 2 3; do
    { printf "\\$(printf '%03o' "$k")"; cat "$f"; } > "corpus/read_value/$n-$k"
  done
done < <(find "$fixtures" -type f \( -name '*.json' -o -name '*.jsonl' -o -name '*.traj' -o -name '*.af' \) -print0)
python3 - <<'PY'
import json
with open("../fixtures/written/open_webui_tool_calls.json") as f:
    chat = json.load(f)
for i, m in enumerate(chat[0]["chat"]["messages"]):
    if isinstance(m.get("content"), str) and "<details" in m["content"]:
        open(f"corpus/open_webui_details/{i}", "w").write(m["content"])
seeds = ['[{"a": 1}, {"a": 2}]', '{"rows": [{"x": "y"}]}', '"[{\\"a\\": 1}]"',
         '[{&quot;a&quot;: 1}]', '```json\n{"k": [1, 2]}\n```', 'Error: failed\nTraceback', 'plain text']
for i, s in enumerate(seeds):
    open(f"corpus/tool_result_json/{i}", "w").write(s)
# A request of each format with a tool call and its result (the first
# byte: the format, then the budget).
long = " ".join(f"w{i}" for i in range(60))
bodies = [
    {"model": "gpt-4.1", "messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": long},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "read", "arguments": "{\"path\": \"a.py\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": long}, {"role": "user", "content": "go on"}]},
    {"model": "claude-sonnet-4-5", "max_tokens": 9, "system": [{"type": "text", "text": "s",
     "cache_control": {"type": "ephemeral"}}], "messages": [
        {"role": "user", "content": long},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": long},
         {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}]}]},
    {"model": "gpt-5", "instructions": "i", "input": [
        {"role": "user", "content": long},
        {"type": "function_call", "call_id": "f1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "f1", "output": long},
        {"role": "user", "content": "go on"}]},
    {"contents": [{"role": "user", "parts": [{"text": long}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"path": "a.py"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"text": long}}}]},
        {"role": "user", "parts": [{"text": "go on"}]}]},
]
for i, b in enumerate(bodies):
    for budget in range(4):
        open(f"corpus/inflight/request-{i}-{budget}", "wb").write(bytes([i + 4 * budget]) + json.dumps(b).encode())
    open(f"corpus/read_value/request-{i}", "wb").write(bytes([i]) + json.dumps(b).encode())
# Answers as upstreams send them, streamed and whole (the first byte:
# the route and the framing; the second: the chunks).
sse = lambda events: "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in events) + "data: [DONE]\n\n"
answers = [
    (0 | 0 << 3, sse([{"choices": [{"delta": {"content": "hi"}}]},
                     {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3,
                      "prompt_tokens_details": {"cached_tokens": 8}}}])),
    (1 | 0 << 3, "event: message_start\n" + sse([{"type": "message_start", "message": {"usage":
        {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7, "output_tokens": 1}}},
        {"type": "message_delta", "usage": {"output_tokens": 9}}])),
    (2 | 0 << 3, sse([{"type": "response.completed", "response": {"usage": {"input_tokens": 30,
        "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 4}}}])),
    (3 | 0 << 3, sse([{"candidates": [{"content": {"parts": [{"text": "hi"}]}}],
        "usageMetadata": {"promptTokenCount": 11, "cachedContentTokenCount": 6, "candidatesTokenCount": 2}}])),
    (4 | 1 << 3, "\n".join(json.dumps(l) for l in [{"message": {"content": "hi"}, "done": False},
        {"done": True, "prompt_eval_count": 13, "eval_count": 5}]) + "\n"),
    (0 | 2 << 3, json.dumps({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 12,
        "completion_tokens": 3}})),
    (1 | 2 << 3, json.dumps({"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 4,
        "cache_read_input_tokens": 90, "output_tokens": 2}})),
    (0 | 0 << 3, sse([{"choices": [{"delta": {"content": "no usage, text to count"}}]}])),
]
for i, (pick, text) in enumerate(answers):
    for extra, size in [(0, 0), (0, 7), (0x40, 3), (0x80, 1)]:
        open(f"corpus/answer_tap/{i}-{extra}-{size}", "wb").write(bytes([pick | extra, size]) + text.encode())
PY
# The proxy's log as it writes it, whole and line by line.
cp ../fixtures/serve/proxy.log corpus/bill_chart/log
k=0
while IFS= read -r line; do
  k=$((k + 1))
  printf '%s\n' "$line" > "corpus/bill_chart/line-$k"
done < ../fixtures/serve/proxy.log
echo "seeded from $n fixture files"
