"""When two statements say the same thing: word overlap, or an embedding model's cosine when
the operator installed one; and in either case, only when they name the same things."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = [
    "EMBEDDING_SIMILARITY",
    "MERGE_SIMILARITY",
    "Similarity",
    "anchors",
    "same_fact",
    "similarity",
    "words",
]

MERGE_SIMILARITY: Final = 0.6  # word overlap (Jaccard) at which two bullets say the same thing
_WORD = re.compile(r"[a-z0-9][a-z0-9_.:/-]*[a-z0-9]|[a-z0-9]")
_CODE = re.compile(r"`([^`]+)`")
_STOP: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "but",
        "it",
        "its",
        "this",
        "that",
        "with",
        "as",
        "by",
        "we",
        "our",
        "you",
        "your",
        "they",
        "their",
        "from",
        "so",
        "not",
        "no",
        "do",
        "does",
        "did",
        "please",
        "now",
        "just",
        "also",
    ]
)


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.casefold()) if w not in _STOP)


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' content words (0-1)."""
    left, right = words(a), words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def anchors(text: str) -> frozenset[str]:
    """The names a statement is about: words with a digit, a dash, a dot, a slash or an
    underscore (``billing-api``, ``POOL_SIZE``, ``v2.3``, ``14:00``), and every word in
    backticks (a command). Two statements that name
    different things are different facts, however alike their wording ("Never deploy billing-api
    on Fridays" is not "Never deploy cart-api on weekends")."""
    quoted = {w for span in _CODE.findall(text) for w in words(span)}  # `payctl drain`
    return frozenset(w for w in words(text) if any(c in w for c in "0123456789-._/:")) | quoted


Similarity = Callable[[str, str], float]
EMBEDDING_SIMILARITY: Final = 0.85  # cosine at which an embedding model calls two texts alike


def same_fact(a: str, b: str, similar: Similarity | None = None) -> bool:
    """Near-duplicates: alike (by word overlap, or by ``similar``, an embedding model's cosine,
    when the operator installed one) and naming the same things."""
    if anchors(a) != anchors(b):
        return False
    if similar is not None:
        return similar(a, b) >= EMBEDDING_SIMILARITY
    return similarity(a, b) >= MERGE_SIMILARITY
