#!/usr/bin/env python3
"""Makes the small Hugging Face tokenizer the tests count with, and what the
Python `tokenizers` package counts with it.

    pip install tokenizers
    python3 scripts/hf_tokenizer.py

Trains a byte-level BPE (vocabulary 600) on the text of the fixtures, with
ChatML's special tokens (`<|im_start|>`, `<|im_end|>`), and writes
fixtures/tokens/hf-chatml.json. Then counts fixtures/tokens/plain_text.jsonl
(one conversation of messages) by ctxclean's recipe for a ChatML template,
each text encoded without special tokens:

    per message: 3 + role + content (+ 1 + name)
    conversation: the messages + 3 (`<|im_start|>assistant\\n`)

and writes fixtures/tokens/hf-expected.json: per message and in total.
"""

import glob
import json
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "tokens", "hf-chatml.json")
EXPECTED = os.path.join(ROOT, "fixtures", "tokens", "hf-expected.json")
PLAIN = os.path.join(ROOT, "fixtures", "tokens", "plain_text.jsonl")


def texts():
    for path in sorted(glob.glob(os.path.join(ROOT, "fixtures", "written", "*.json*"))):
        with open(path, encoding="utf-8") as f:
            yield f.read()


def main():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts(), trainer=trainer)
    tok.save(OUT)

    tok = Tokenizer.from_file(OUT)
    count = lambda s: len(tok.encode(s, add_special_tokens=False).ids)
    per = []
    with open(PLAIN, encoding="utf-8") as f:
        for line in f:
            m = json.loads(line)
            n = 3 + count(m["role"]) + count(m.get("content") or "")
            if m.get("name"):
                n += 1 + count(m["name"])
            per.append(n)
    with open(EXPECTED, "w", encoding="utf-8") as f:
        json.dump({"tokenizers": __import__("tokenizers").__version__,
                   "per_message": per, "total": sum(per) + 3}, f, indent=1)
        f.write("\n")
    print(f"{len(per)} messages, {sum(per) + 3} tokens")


if __name__ == "__main__":
    main()
