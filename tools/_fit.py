"""Fitting a tool answer into its output budget, counted on the JSON that is actually sent.

Ranked lists go through ``context.budget.pack``: items are taken best first, the first one that
does not fit is cut at a sentence boundary if a cut fits, and the rest are left out, so a
lower-ranked item is never kept while a better one was dropped. The whole answer is then counted
once more (pieces summed are only an estimate of the whole) and trimmed from the end until it
fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from chanctx.context import TokenCounter, truncate_at_sentence
from chanctx.context.budget import Chunk, pack
from pydantic import BaseModel

__all__ = ["Fitted", "cut_text", "fit_ranked"]

M = TypeVar("M", bound=BaseModel)

ELLIPSIS = " ..."
_WORD_END = re.compile(r"\S(?=\s)")


def _largest(count: int, fits: Callable[[int], bool]) -> int | None:
    """The largest i in [0, count) with fits(i), assuming fits is monotone (True then False)."""
    best: int | None = None
    low, high = 0, count - 1
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


def cut_text(text: str, fits: Callable[[str], bool]) -> str | None:
    """The longest cut of ``text`` ending in " ..." that ``fits``: at a sentence, else a word.

    A sentence cut reads best; when not even the first sentence fits (a long paragraph with no
    punctuation), a word-boundary cut still gives the reader the start of it, and a hard cut
    handles one enormous word. None when not even the ellipsis alone fits.
    """
    sentence = truncate_at_sentence(text, fits)
    if sentence is not None:
        return sentence
    words = [m.end() for m in _WORD_END.finditer(text)]
    index = _largest(len(words), lambda i: fits(text[: words[i]] + ELLIPSIS))
    if index is not None:
        return text[: words[index]] + ELLIPSIS
    index = _largest(len(text), lambda i: fits(text[: i + 1] + ELLIPSIS))
    if index is not None:
        return text[: index + 1] + ELLIPSIS
    return ELLIPSIS.strip() if fits(ELLIPSIS.strip()) else None


@dataclass(frozen=True)
class Fitted(Generic[M]):
    items: list[M]
    omitted: int  # offered items left out entirely
    cut: int  # included items whose text was cut


# Renders the whole answer for the items kept; ``omitted``/``cut`` feed its note.
Render = Callable[[list[M], int, int], str]


def fit_ranked(
    chunks: Sequence[Chunk[M]],
    *,
    render: Render[M],
    budget: int,
    counter: TokenCounter,
    item_json: Callable[[M], str],
) -> Fitted[M]:
    """Keep the best-ranked ``chunks`` (each ``item`` has a ``text`` = ``chunk.text``) that fit."""

    def with_text(chunk: Chunk[M], text: str) -> M:
        return chunk.item if text == chunk.text else chunk.item.model_copy(update={"text": text})

    comma = counter.count(",")
    # The frame is priced with every item omitted and one cut: the longest note it can carry.
    frame = counter.count(render([], len(chunks), 1))
    packing = pack(
        chunks,
        budget=max(budget - frame, 0),
        cost=lambda chunk, text: counter.count(item_json(with_text(chunk, text))) + comma,
    )
    items = [with_text(p.chunk, p.text) for p in packing.included]
    cut = packing.truncated_count
    if not items and chunks:
        # Not even a sentence of the best item fit: show its start rather than nothing.
        first = chunks[0]
        text = cut_text(
            first.text,
            lambda t: counter.count(render([with_text(first, t)], len(chunks) - 1, 1)) <= budget,
        )
        if text is not None:
            items, cut = [with_text(first, text)], 1
    while items and counter.count(render(items, len(chunks) - len(items), cut)) > budget:
        items.pop()
        cut = sum(1 for item, chunk in zip(items, chunks, strict=False) if item is not chunk.item)
    return Fitted(items=items, omitted=len(chunks) - len(items), cut=cut)
