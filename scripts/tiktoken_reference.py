#!/usr/bin/env python3
"""Reference token counts from Python tiktoken, for the agreement tests.

Writes fixtures/tokens/plain_text.jsonl (a transcript of plain-text messages:
ASCII, code, CJK, emoji, combining marks, special-token text, ...) and
fixtures/tokens/expected.json: for each listed transcript, the per-message
count of every plain-text message (keys role/content/name, string values),
by OpenAI's published recipe:

    3 + len(encode(role)) + len(encode(content)) [+ len(encode(name)) + 1]

with `disallowed_special=()`, so special-token text counts as ordinary text.

Needs `pip install tiktoken`. tiktoken downloads its vocabularies at first
use; this machine has no internet, so the script seeds tiktoken's own cache
with the vocabulary files shipped in the tiktoken-rs crate, which tiktoken
then checks against its pinned SHA-256 hashes before using them. Run:

    cargo fetch && python3 scripts/tiktoken_reference.py
"""

import glob
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENCODINGS = ["o200k_base", "cl100k_base"]
TRANSCRIPTS = [
    "fixtures/tokens/plain_text.jsonl",
    "fixtures/functionary/test_case.json",
    "fixtures/functionary/test_case_v1.json",
    "fixtures/functionary/test_case_v2.json",
    "fixtures/functionary/test_case_vision.json",
]

HANDWRITTEN = [
    "Hello, world!",
    "",
    " ",
    "\n\n\n",
    "  leading and trailing spaces  ",
    "tabs\tand\r\nwindows line ends\r\n",
    "def f(x):\n    return x ** 2  # square\n\n\nprint(f(12345678901234567890))",
    "SELECT diagnosis, COUNT(*) FROM visits WHERE year >= 2019 GROUP BY 1 ORDER BY 2 DESC;",
    '{"results": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Grace"}]}',
    "https://example.com/path?query=1&x=%20y#frag",
    "/usr/local/lib/python3.11/site-packages/tiktoken/core.py:124",
    "The year 2024 had 366 days; π ≈ 3.14159265358979.",
    "日本語のテキストをトークン化します。東京は日本の首都です。",
    "中文分词测试：我爱北京天安门，天安门上太阳升。",
    "한국어 문장도 토큰으로 나뉩니다.",
    "Русский текст с ёлками и щами.",
    "العربية تكتب من اليمين إلى اليسار",
    "עברית גם כן",
    "हिन्दी में लिखा गया वाक्य",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️‍🔥",
    "Combining marks: e\u0301 a\u0308 n\u0303 Z\u0351\u0352\u0353\u0354a\u0300\u0301\u0302lgo",
    "Zalgo: T̸̢̛̝̗̞̘͇̊͒͋̀̂h̷̡̗̦̹̊͋̈́̏͝e̵̢͔̖̬̅̈́̆͠",
    "Zero width: a\u200bb\u200cc\u200dd\ufeffe",
    "<|endoftext|> is special text, and so are <|im_start|> and <|im_end|>.",
    "<|endofprompt|><|fim_prefix|><|fim_middle|><|fim_suffix|>",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "I'm can't won't they're we've you'll he'd IT'S THEY'RE",
    "0 00 000 0000 00000 1,000,000 1.5e-10 -42 +7",
    "Mixed: naïve café résumé Ångström façade coöperate",
    "Math: ∀x∈ℝ, ∃y: x² + y² = 1 ⇒ |x| ≤ 1",
    "Box drawing: ┌─┬─┐ │ │ │ └─┴─┘",
    "Surrogate-range neighbours: \ud7ff \ue000 \uffff",
    "\u0000 nul and \u0007 bell and \u001b[31mred\u001b[0m",
]


def seed_cache():
    """Seeds tiktoken's cache with the crate's vocabulary files."""
    crates = os.path.expanduser("~/.cargo/registry/src")
    assets = sorted(glob.glob(os.path.join(crates, "*", "tiktoken-rs-*", "assets")))
    if not assets:
        sys.exit("tiktoken-rs sources not found: run `cargo fetch` first")
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    for name in ENCODINGS:
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        key = hashlib.sha1(url.encode()).hexdigest()
        shutil.copy(os.path.join(assets[-1], f"{name}.tiktoken"), os.path.join(cache, key))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    return cache


def random_texts(n, seed=20261122):
    rng = random.Random(seed)
    ranges = [
        (0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
        (0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x3040, 0x30FF),
        (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1F64F), (0x1F900, 0x1F9FF),
    ]
    out = []
    for _ in range(n):
        pieces = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(ranges)
            pieces.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8))))
            pieces.append(rng.choice(["", " ", "  ", "\n", "\t", ". ", ", "]))
        out.append("".join(pieces))
    return out


def plain_messages(path):
    """(index, message) for every plain-text message of an OpenAI transcript."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".jsonl"):
        messages = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        doc = json.loads(text)
        messages = doc["messages"] if isinstance(doc, dict) else doc
    for i, m in enumerate(messages):
        if set(m) <= {"role", "content", "name"} and all(isinstance(v, str) for v in m.values()):
            yield i, m


def count(message, enc):
    n = 3
    for key, value in message.items():
        n += len(enc.encode(value, disallowed_special=()))
        if key == "name":
            n += 1
    return n


def main():
    os.chdir(ROOT)
    os.makedirs("fixtures/tokens", exist_ok=True)
    roles = ["system", "user", "assistant", "developer"]
    with open("fixtures/tokens/plain_text.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(HANDWRITTEN + random_texts(60)):
            m = {"role": roles[i % len(roles)], "content": text}
            if i % 7 == 3:
                m["name"] = ["alice", "Bob_2", "エージェント", "agent-7"][i % 4]
            f.write(json.dumps(m, ensure_ascii=False) + "\n")

    cache = seed_cache()
    import tiktoken

    expected = {"tiktoken_version": tiktoken.__version__, "transcripts": {}}
    for path in TRANSCRIPTS:
        entry = {}
        for name in ENCODINGS:
            enc = tiktoken.get_encoding(name)
            entry[name] = {str(i): count(m, enc) for i, m in plain_messages(path)}
        expected["transcripts"][path] = entry
    with open("fixtures/tokens/expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    shutil.rmtree(cache)
    total = sum(len(e["o200k_base"]) for e in expected["transcripts"].values())
    print(f"wrote fixtures/tokens/expected.json: {total} plain-text messages per encoding")


if __name__ == "__main__":
    main()
