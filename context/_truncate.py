"""Deterministic text cuts: snippets at a word boundary, long texts at a sentence boundary."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["ELLIPSIS", "sentence_boundaries", "snippet", "truncate_at_sentence"]

ELLIPSIS = "..."
_SPACE_RUN = re.compile(r"\s+")
# A sentence ends at . ! or ? (closing quotes/brackets may follow) before whitespace or the
# end, or at a line break: chat messages are often lists and lines without punctuation.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)|(?<=\S)(?=\n)")


def snippet(text: str, limit: int = 150) -> str:
    """The first ~``limit`` characters, whitespace collapsed, cut at a word boundary + "...".

    A single word longer than the limit (a URL, say) is cut hard: a snippet must stay short.
    """
    flat = _SPACE_RUN.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    head = flat[: limit + 1]
    cut = head.rfind(" ")
    kept = head[:cut] if cut > 0 else flat[:limit]
    return kept.rstrip(" ,;:-") + ELLIPSIS


def sentence_boundaries(text: str) -> list[int]:
    """End offsets (exclusive) of every sentence in ``text``, ascending, excluding len(text)."""
    ends = sorted({m.end() for m in _SENTENCE_END.finditer(text)})
    return [end for end in ends if 0 < end < len(text.rstrip())]


def truncate_at_sentence(text: str, fits: Callable[[str], bool]) -> str | None:
    """The longest sentence-boundary prefix of ``text`` plus " ..." for which ``fits`` holds.

    None when not even the first sentence fits (the caller then leaves the item out). The
    search is binary over boundaries, so cost grows with log(sentences), not with length.
    """
    candidates = sentence_boundaries(text)
    best: str | None = None
    low, high = 0, len(candidates) - 1
    while low <= high:
        middle = (low + high) // 2
        attempt = text[: candidates[middle]].rstrip() + " " + ELLIPSIS
        if fits(attempt):
            best = attempt
            low = middle + 1
        else:
            high = middle - 1
    return best
