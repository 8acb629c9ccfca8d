"""Byte-pair pieces from Anthropic's earlier public tokenizer, sorted into classes.

The estimator in ``tokens.py`` does not know Claude 3's or Claude 4.8's vocabulary; it knows how
Anthropic's earlier public tokenizer (vendored in ``data/``, run by ``tiktoken`` with the ranks
passed in, so nothing is downloaded) splits a text, and a fitted cost per *class* of piece: a
common lowercase word, a rare one, a capitalised one, two digits, a Cyrillic fragment, ... Each
class is priced from texts with known counts in the newer families (see ``bench/tokens.py``).

The class of a piece depends on its bytes and its rank (earlier merges are more frequent text),
so the 64,739 pieces fall into a few hundred classes, computed once when the vocabulary loads.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from importlib.resources import files
from typing import Final

import tiktoken

__all__ = ["class_of_piece", "classes", "encoding", "piece_classes"]

# Rank boundaries: pieces merged early are frequent (mostly English) text, late ones rarer words.
_RANK_BUCKETS: Final = (3000, 12000, 30000)


def _script(lead: int) -> str:
    """A script class from a UTF-8 lead byte (see ``tokens._CLASS_OF_LEAD`` for the ranges)."""
    if lead <= 0xC3:
        return "latin1"
    if lead <= 0xCF:
        return "latinext_greek"
    if lead <= 0xD4:
        return "cyrillic"
    if lead <= 0xDF:
        return "hebrew_arabic"
    if lead <= 0xE1:
        return "indic"
    if lead == 0xE2:
        return "symbol"
    if lead <= 0xED:
        return "cjk"
    if lead <= 0xEF:
        return "fullwidth"
    return "astral"


def class_of_piece(piece: bytes, rank: int) -> str:
    """The class name of one vocabulary piece (its rank matters for words only)."""
    body = piece.lstrip(b" ")
    spaced = "_s" if len(body) < len(piece) else ""
    if not body:
        return "space" if piece == b" " else "spaces"
    if body.isascii():
        text = body.decode("ascii")
        if text.isalpha():
            bucket = sum(rank >= edge for edge in _RANK_BUCKETS)
            if text.islower():
                shape = f"lower{min(len(text), 7)}"
            elif text.istitle():
                shape = "title"
            elif text.isupper():
                shape = "upper"
            else:
                shape = "mixed"
            return f"{shape}_r{bucket}{spaced}"
        if text.isdigit():
            return f"digits{min(len(text), 3)}{spaced}"
        if text.isspace():
            return "newlines"
        if not any(c.isalnum() or c.isspace() for c in text):
            return f"punct{min(len(text), 3)}{spaced}"
        return "ascii_mixed"
    try:
        chars = len(body.decode("utf-8"))
    except UnicodeDecodeError:
        return "partial_bytes"  # a piece of a multi-byte character
    length = "1" if chars == 1 else ("2" if chars <= 3 else "4")
    return f"{_script(body[0])}{length}{spaced}"


@cache
def _vocabulary() -> tuple[str, dict[bytes, int]]:
    doc = json.loads(files("chanctx.context").joinpath("data", "claude_tokenizer.json").read_text())
    marker, start, *pieces = doc["bpe_ranks"].split(" ")
    if marker != "!":  # the tiktoken "lite" format: "! <first rank> <base64 pieces...>"
        raise ValueError("claude_tokenizer.json: unexpected bpe_ranks format")
    first = int(start)
    return doc["pat_str"], {base64.b64decode(p): first + i for i, p in enumerate(pieces)}


@cache
def encoding() -> tiktoken.Encoding:
    """The earlier public tokenizer, built from the vendored ranks (no download, no special
    tokens: ``<EOT>`` and friends in a message are plain text)."""
    pattern, ranks = _vocabulary()
    return tiktoken.Encoding(
        name="anthropic_public_2023", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
    )


@cache
def _classes() -> tuple[tuple[str, ...], tuple[int, ...]]:
    _, ranks = _vocabulary()
    size = max(ranks.values()) + 1
    by_piece = {rank: class_of_piece(piece, rank) for piece, rank in ranks.items()}
    names = tuple(sorted(set(by_piece.values()) | {"unknown"}))
    index = {name: i for i, name in enumerate(names)}
    return names, tuple(index[by_piece.get(rank, "unknown")] for rank in range(size))


def piece_classes() -> tuple[int, ...]:
    """For every token id, the index of its class in ``classes()``."""
    return _classes()[1]


def classes() -> tuple[str, ...]:
    """Every class name, sorted (the order of the class counts in ``tokens.features``)."""
    return _classes()[0]
