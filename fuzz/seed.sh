#!/usr/bin/env bash
# Seeds the fuzz corpora from the fixtures (run from fuzz/).
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../fixtures
mkdir -p corpus/{read_auto,read_format,read_chunks,read_trusting,open_webui_details,tool_result_json,operations,pre_tokenizer}
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
PY
echo "seeded from $n fixture files"
