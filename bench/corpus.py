#!/usr/bin/env python3
"""Seeded generator of a benchmark corpus: OpenAI JSONL, one conversation per
line ({"messages": [...]}), with system prompts, user turns, assistant answers
(some with code), tool calls with large JSON results, CJK and emoji.

Run: python3 bench/corpus.py OUT.jsonl --mb 100 [--seed 7]
The same seed and size give the same bytes.
"""

import argparse
import json
import random

WORDS = (
    "the data query result table user model token cost budget agent tool call "
    "schema index latency region order invoice customer shipment report error "
    "function return value string number list dict config deploy build test"
).split()
CJK = "数据查询结果表用户模型令牌成本预算分析报告错误函数"
EMOJI = "😀🚀🔥✅📊🧠👍🏽👨‍👩‍👧"
CODE = [
    "```python\nimport pandas as pd\ndf = pd.read_csv('orders.csv')\nprint(df.groupby('region').sum())\n```",
    "```rust\nfn main() {\n    let v: Vec<u32> = (0..10).collect();\n    println!(\"{:?}\", v);\n}\n```",
    "```sql\nSELECT region, COUNT(*) FROM orders WHERE shipped_at >= '2024-03-01' GROUP BY region;\n```",
]
SYSTEMS = [
    "You are a data assistant for an analytics team. Answer from the database, show numbers exactly, "
    "and say when a query failed.",
    "You are a coding agent. Use the tools to read and edit files; keep changes minimal and run the tests.",
    "You are a support assistant. Be brief and friendly; escalate billing questions.",
]


def conversation(rng):
    def text(k):
        out = []
        for _ in range(k):
            r = rng.random()
            if r < 0.85:
                out.append(rng.choice(WORDS))
            elif r < 0.95:
                out.append(rng.choice(CJK) * rng.randint(1, 3))
            else:
                out.append(rng.choice(EMOJI))
        return " ".join(out)

    msgs = [{"role": "system", "content": rng.choice(SYSTEMS)}]
    call = 0
    for _ in range(rng.randint(2, 14)):
        msgs.append({"role": "user", "content": text(rng.randint(5, 60))})
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            call += 1
            cid = f"call_{call:04d}"
            name = rng.choice(["run_sql", "search", "read_file"])
            msgs.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"query": text(rng.randint(3, 12))})},
                }],
            })
            rows = [
                {"id": i, "name": text(2), "region": rng.choice(CJK), "value": rng.randint(0, 10**6),
                 "ratio": round(rng.random(), 4)}
                for i in range(rng.randint(1, 60))
            ]
            msgs.append({"role": "tool", "tool_call_id": cid, "content": json.dumps({"rows": rows})})
        answer = text(rng.randint(10, 120))
        if rng.random() < 0.15:
            answer += "\n" + rng.choice(CODE)
        msgs.append({"role": "assistant", "content": answer})
    return {"messages": msgs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    target = int(args.mb * 1e6)
    size = 0
    with open(args.out, "w", encoding="utf-8") as f:
        while size < target:
            line = json.dumps(conversation(rng), ensure_ascii=False) + "\n"
            f.write(line)
            size += len(line.encode("utf-8"))


if __name__ == "__main__":
    main()
