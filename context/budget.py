"""Token budgeting: which chunks of text fit a budget, shared by every context chanctx builds.

Rules, in order of precedence:
1. Pinned chunks come before unpinned ones.
2. Within each group, higher relevance comes first; ties keep their input order.
3. The total never exceeds the budget.
4. Chunks are taken in that order until one does not fit. That one is cut at a sentence
   boundary if a cut fits (its text then ends with "..."), and packing stops there, so a
   lower-relevance chunk is never kept while a higher-relevance one was dropped or cut.

``pack`` consumes its input lazily and stops at the first chunk that does not fit, so the cost
of a packing depends on what is included, not on how many candidates there are. That is what
lets a 100,000-reply thread build as fast as a 100-reply one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from chanctx.context._truncate import truncate_at_sentence
from chanctx.context.errors import BudgetError

__all__ = ["Chunk", "Packed", "Packing", "optimize", "pack"]

T = TypeVar("T")


@dataclass(frozen=True)
class Chunk(Generic[T]):
    """A candidate for the budget. ``item`` carries whatever the caller needs back."""

    key: str
    text: str
    item: T
    relevance: float = 0.0
    pinned: bool = False


@dataclass(frozen=True)
class Packed(Generic[T]):
    chunk: Chunk[T]
    text: str  # the chunk's text, or its sentence-boundary cut
    tokens: int
    truncated: bool


@dataclass
class Packing(Generic[T]):
    budget: int
    included: list[Packed[T]] = field(default_factory=list)
    used: int = 0
    # True when some candidate was left out or cut: the caller should say so to the reader.
    exhausted: bool = False

    @property
    def truncated_count(self) -> int:
        return sum(1 for packed in self.included if packed.truncated)


# The cost of a chunk when it carries ``text`` (which may be a cut of chunk.text). Callers
# that budget serialized JSON render the chunk's JSON fragment here, separator included.
Cost = Callable[[Chunk[T], str], int]


def pack(
    chunks: Iterable[Chunk[T]],
    *,
    budget: int,
    cost: Cost[T],
    truncate: bool = True,
) -> Packing[T]:
    """Take ``chunks`` in the order given until the budget is used (rule 4 above)."""
    if budget < 0:
        raise BudgetError(f"Token budget must be >= 0, got {budget}.")
    packing: Packing[T] = Packing(budget=budget)
    for chunk in chunks:
        tokens = cost(chunk, chunk.text)
        if packing.used + tokens <= budget:
            packing.included.append(Packed(chunk, chunk.text, tokens, truncated=False))
            packing.used += tokens
            continue
        packing.exhausted = True
        if truncate:
            cut = truncate_at_sentence(chunk.text, _fits_in(chunk, budget - packing.used, cost))
            if cut is not None:
                cut_tokens = cost(chunk, cut)
                packing.included.append(Packed(chunk, cut, cut_tokens, truncated=True))
                packing.used += cut_tokens
        break
    return packing


def _fits_in(chunk: Chunk[T], room: int, cost: Cost[T]) -> Callable[[str], bool]:
    return lambda text: cost(chunk, text) <= room


def optimize(
    chunks: Iterable[Chunk[T]],
    *,
    budget: int,
    cost: Cost[T],
    truncate: bool = True,
) -> Packing[T]:
    """Order by pinned first, then relevance (descending, stable), and pack into ``budget``."""
    ordered = sorted(chunks, key=lambda chunk: (not chunk.pinned, -chunk.relevance))
    return pack(ordered, budget=budget, cost=cost, truncate=truncate)
