"""Text that is hard to pre-tokenize: every script, combining marks, emoji
ZWJ sequences, long digit and whitespace runs, contractions in every case.

Used by python/tests/test_langchain.py (counts against tiktoken, a few MB
in CI) and bench/tiktoken_diff.py (100 MB)."""

import random

# (first, last) code points of the blocks drawn from: every script tiktoken's
# patterns treat differently (letters \p{L} of each case, marks \p{M},
# numbers \p{N}, symbols, punctuation, separators).
BLOCKS = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x250, 0x2FF), (0x370, 0x3FF), (0x400, 0x52F), (0x530, 0x58F),
    (0x590, 0x5FF), (0x600, 0x6FF), (0x700, 0x74F), (0x780, 0x7BF), (0x900, 0x97F), (0x980, 0x9FF),
    (0xA00, 0xA7F), (0xB80, 0xBFF), (0xC00, 0xC7F), (0xD00, 0xD7F), (0xE00, 0xE7F), (0xE80, 0xEFF),
    (0xF00, 0xFFF), (0x1000, 0x109F), (0x10A0, 0x10FF), (0x1100, 0x11FF), (0x1200, 0x137F),
    (0x13A0, 0x13FF), (0x1780, 0x17FF), (0x1800, 0x18AF), (0x1E00, 0x1EFF), (0x1F00, 0x1FFF),
    (0x2000, 0x206F), (0x2070, 0x209F), (0x20A0, 0x20CF), (0x2100, 0x214F), (0x2150, 0x218F),
    (0x2190, 0x23FF), (0x2460, 0x24FF), (0x2500, 0x27BF), (0x2C00, 0x2C5F), (0x2E80, 0x2FDF),
    (0x3000, 0x303F), (0x3040, 0x30FF), (0x3130, 0x318F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xA000, 0xA4CF), (0xA640, 0xA69F), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFB00, 0xFDFF),
    (0xFE00, 0xFE0F), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x10000, 0x1007F), (0x10300, 0x1034F),
    (0x1D400, 0x1D7FF), (0x1F000, 0x1F02F), (0x1F100, 0x1F1FF), (0x1F300, 0x1F64F),
    (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F),
]
MARKS = [(0x300, 0x36F), (0x483, 0x489), (0x591, 0x5BD), (0x64B, 0x65F), (0x93A, 0x94F),
         (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0xFE20, 0xFE2F)]
SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\r\n", "\u00a0", "\u1680", "\u2000", "\u2009",
          "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\x85"]
EMOJI = ["😀", "👍", "🏽", "👨", "👩", "👧", "👦", "\u200d", "❤", "\ufe0f", "🔥", "🏳", "🌈", "🇫", "🇷",
         "🇯", "🇵", "🧑‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️‍🔥", "🫶🏾", "#️⃣", "1️⃣"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "’s", "’T", "'S", "'T", "'RE", "'Re", "'rE",
                "'VE", "'vE", "'M", "'LL", "'lL", "'D", "''", "'"]
WORDS = ["the", "The", "THE", "don", "DON", "It", "IT", "we", "WE", "x", "I", "naïve", "Straße", "ǅemal",
         "ΣΊΣΥΦΟΣ", "İstanbul", "ﬁne", "ＡＢＣ", "東京", "서울", "مرحبا", "שלום", "नमस्ते", "ไทย"]


def _char(rnd, blocks):
    lo, hi = rnd.choice(blocks)
    return chr(rnd.randint(lo, hi))


def piece(rnd):
    """One adversarial run."""
    kind = rnd.randrange(9)
    if kind == 0:
        return "".join(_char(rnd, BLOCKS) for _ in range(rnd.randint(1, 60)))
    if kind == 1:
        base = _char(rnd, BLOCKS[:6] + [(0x41, 0x5A), (0x61, 0x7A)])
        return base + "".join(_char(rnd, MARKS) for _ in range(rnd.randint(1, 12)))
    if kind == 2:
        return "".join(rnd.choice(EMOJI) for _ in range(rnd.randint(1, 12)))
    if kind == 3:
        digits = "".join(rnd.choice("0123456789٠١٢٣४५६७０１２") if rnd.random() < 0.1 else rnd.choice("0123456789")
                         for _ in range(rnd.randint(1, 80)))
        return digits
    if kind == 4:
        return "".join(rnd.choice(SPACES) for _ in range(rnd.randint(1, 40)))
    if kind == 5:
        return rnd.choice(WORDS) + rnd.choice(CONTRACTIONS) + rnd.choice(["", " ", "s", "t", "ll"])
    if kind == 6:
        return "".join(rnd.choice(".,;:!?-_/\\|()[]{}<>\"'`~@#$%^&*+=") for _ in range(rnd.randint(1, 30)))
    if kind == 7:
        return rnd.choice(["<|endoftext|>", "<|im_start|>", "<|fim_prefix|>", "<|endofprompt|>"])
    return chr(rnd.choice([rnd.randint(0x80, 0xD7FF), rnd.randint(0xE000, 0x10FFFF)]))


def texts(total_chars, seed=20261127):
    """Texts of a few hundred to a few thousand characters, `total_chars`
    in all, the same for the same seed."""
    rnd = random.Random(seed)
    out, n = [], 0
    while n < total_chars:
        t = "".join(piece(rnd) + (rnd.choice(SPACES) if rnd.random() < 0.4 else "")
                    for _ in range(rnd.randint(5, 200)))
        out.append(t)
        n += len(t)
    return out
