"""The ranking's weights (:class:`Ranking`) and what a search returns (:class:`Search`, its
:class:`Hit` s).

Every knob of channel_context's score is a field of :class:`Ranking`, so a benchmark can change
one and measure it. ``ORIGINAL`` is the ranking before the LoCoMo work (light stemmer, k1 = 1.5,
b = 0.75, plain share, no context, no date, no named person, recency 0.25), kept so
``bench/locomo.py`` can measure each change (bench/RESULTS.md has the ablation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from chanctx.context import Message, Names
from chanctx.context.render import text_of
from chanctx.tools._keywords import Keyword, Stemmer

__all__ = ["ORIGINAL", "Hit", "Ranking", "Search"]


@dataclass(frozen=True)
class Ranking:
    """Every knob of the ranking. The defaults are channel_context's."""

    stemmer: Stemmer = "porter"
    k1: float = 1.2
    b: float = 0.4
    epsilon: float = 0.25
    keyword_bm25: float = 0.7
    keyword_share: float = 0.3
    share_by_idf: bool = True
    thread_share: float = 0.3
    # Weights of the 1st, 2nd, ... message before / after a message in its conversation.
    context_before: tuple[float, ...] = (0.5, 0.5)
    context_after: tuple[float, ...] = (0.5, 0.5)
    context_gap: float = 900.0  # seconds between two messages of one conversation, at most
    context_candidates: bool = True  # a match's neighbours are candidates too
    date_boost: float = 0.5
    cause_boost: float = 0.3
    author_boost: float = 0.6
    named_person: float = 0.3  # a person the intent names wrote it (their name is no keyword)
    recency_weight: float = 0.1
    recency_half_life: float = 3 * 86_400.0
    activity_weight: float = 0.15


ORIGINAL = Ranking(
    stemmer="light",
    k1=1.5,
    b=0.75,
    share_by_idf=False,
    context_before=(),
    context_after=(),
    context_candidates=False,
    date_boost=0.0,
    named_person=0.0,
    recency_weight=0.25,
)


@dataclass(frozen=True)
class Hit:
    """One ranked message. ``signal``: why it ranks ("" when the search was asked not to
    explain: the query API shows no signals). ``text`` is rendered on first use, since most
    callers show a few of the hits they asked for."""

    message: Message
    names: Names = field(repr=False, compare=False)
    score: float
    signal: str

    @cached_property
    def text(self) -> str:
        return text_of(self.message, self.names)


@dataclass(frozen=True)
class Search:
    hits: list[Hit]  # best first, at most ``limit``, at most ``per_thread`` from one thread
    matches: int  # every candidate (hits are the best of them)
    scanned: int  # messages searched (after ``since``, without hidden ones)
    time_range: tuple[str, str] | None  # the oldest and newest ts searched
    keywords: list[Keyword]
