"""Regenerate edge_cases.jsonl: short texts aimed at the tokenizer reconstruction's corner rules.

Each text mixes the things the marked-stream rules single out (case markers, contractions,
opening apostrophes, symbol-letters, combining marks, variation selectors, non-ASCII digits,
ideographs, odd spaces, leading and trailing whitespace) or is random code points. Counts come
from ctok 1.3.0, minus its message frame (7 for v3, 11 for v4.7, 6 for v4.8), exactly as for
calibration.jsonl; chanctx's own implementation must reproduce every one:

    /tmp/ctok/bin/python tests/data/tokens/edge_cases.py   (Python >= 3.12 with ctok==1.3.0)
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("edge_cases.jsonl")
PIECES = ["hello", "World", "NASA", "it", "'s", "'", "don't", "GaN", "ΣΟΦΙΑ", "İstanbul", "naïve",
          "x", "12", "٣٤", "²", "3.14", ",", ".", "(", ")", "—", "«", "日本", "。", "？", "😀", "⚖️",
          "\ufe0f", "\u0301", "ห", "ำ", "\u3000", "'ll", "'t", "O'Neil", "ÉCOLE", "ⓐ", "①",
          "\u2019", "\u201c", "\x00", "\x07", "\ue000", "\ufdd0", "ẞ", "ϴ", "\u0e4d\u0e32"]  # fmt: skip
SEPARATORS = ["", " ", "  ", "\t", "\n", " \n", "\n ", "\u3000", "\u00a0", "\u2003", " \t"]


def texts(rng: random.Random) -> list[str]:
    out = []
    for i in range(600):
        if i % 3 == 2:  # random code points (surrogates excluded: not valid in JSON text)
            chars = (chr(rng.randint(0x20, 0x2FFFF)) for _ in range(rng.randint(1, 12)))
            out.append("".join(c for c in chars if not 0xD800 <= ord(c) <= 0xDFFF) or "x")
            continue
        text = "".join(
            rng.choice(SEPARATORS) * (rng.random() < 0.2)
            + rng.choice(PIECES)
            + rng.choice(SEPARATORS)
            for _ in range(rng.randint(1, 6))
        )
        out.append(rng.choice(SEPARATORS) + text if rng.random() < 0.3 else text)
    return out


def main() -> None:
    import ctok  # type: ignore[import-not-found]

    with OUT.open("w", encoding="utf-8") as f:
        for text in texts(random.Random(20261125)):
            v3 = ctok.token_count(text, "3.0") - 7
            v47 = ctok.token_count(text, "4.7") - 11
            v48 = ctok.token_count(text, "4.8") - 6
            row = {"text": text, "claude_v3": v3, "claude_v4_7": v47, "claude_v4_8": v48}
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
