"""The candidates' full scores, and the bound that spares a search computing most of them.

A common word (a service's name) makes 20,000-40,000 candidates in a channel of a million, and
each signal beyond the keyword score is a few vectorised passes over all of them (the thread's
counters, recency's power, activity's logarithm, the neighbours' nearness in time): most of
a search's time, for candidates that could never be among the best ``limit``. So a search
first bounds every candidate's score from above, cheaply and exactly:

    its own keyword score + the thread share of its root's (both exact) + the context its
    conversation neighbours' keyword scores would add if every one of them were near in time
    (the same sum without the nearness test) + the most each other signal can add (a boost
    only when the search can give it; recency at most 1; activity at most the busiest
    thread's share),

then scores in full the candidates with the highest bounds, chooses among them as the search
would (:func:`choose`), and takes the last of those chosen as a floor: the best ``limit`` of all
candidates score at least that (choosing the best with at most ``per_thread`` a thread is a
greedy choice in a matroid, and its i-th choice is at least the i-th of any allowed set), so a
candidate whose bound is below the floor cannot be shown. Only the others are scored in full,
and the search chooses among them: the same hits, scores and signals as scoring everyone
(``tests/support/dense_search.py`` is the ranking that scores every candidate; a Hypothesis
test holds the two equal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from chanctx.cache import ts_key
from chanctx.tools._columns import Bools, Floats, Ints, Ints32
from chanctx.tools._dates import in_periods
from chanctx.tools._index import ChannelIndex
from chanctx.tools._ranking import Ranking

__all__ = ["PRUNE_FROM", "Asked", "Scores", "choose", "context", "score", "worth_scoring"]

_EXCHANGE = 1e6  # below any score a person's message can have
# Candidates bounded first only from this many (below it the bound costs more than it saves).
PRUNE_FROM = 2_000
# Rounding to 9 decimals moves a score by 5e-10 at most; float sums in another order by far less.
_MARGIN = 1e-8


@dataclass(frozen=True)
class Asked:
    """What the search asks of every candidate beyond its keyword score."""

    wanted: bool  # the intent has keywords (else no keyword, thread or context score)
    keyword: Floats  # dense keyword scores, one cell a slot and one for "none"
    busiest: float  # the most replies of a thread in the window
    reference: float  # "now" for recency
    asks_why: bool
    named: list[tuple[int | None, int | None]]  # the months or years the intent names
    codes: Sequence[int]  # authors asked for
    named_codes: Sequence[int]  # people the intent names


@dataclass(frozen=True)
class Scores:
    """The full scores of ``slots`` (one cell each in every array)."""

    slots: Ints
    rounded: Floats
    order_by: Floats  # rounded, the bot's exchanges moved below every person's message
    thread: Floats
    context: Floats
    period_of: Ints
    explains: Bools
    authored: Bools
    by_named: Bools
    last_reply: Floats


def context(index: ChannelIndex, keyword: Floats, slots: Ints, ranking: Ranking) -> Floats:
    """For each of ``slots``, its conversation neighbours' keyword scores, weighted.

    ``keyword`` is dense (one cell per slot, then a 0 for "none"). A neighbour counts if it is
    within ``distance * context_gap`` seconds of the message. Slot -1 reads the index's
    sentinel row: no further links, infinitely far away.
    """
    rows = index.rows
    here = rows.ts[slots]
    total = np.zeros(len(slots), dtype=np.float64)
    for links, weights in ((rows.prev, ranking.context_before), (rows.next, ranking.context_after)):
        current: npt.NDArray[np.integer[Any]] = slots
        for distance, weight in enumerate(weights, start=1):
            current = links[current]
            near = np.abs(rows.ts[current] - here) <= distance * ranking.context_gap
            total += weight * keyword[current] * near
    return total


def _context_bound(index: ChannelIndex, keyword: Floats, slots: Ints, ranking: Ranking) -> Floats:
    """:func:`context` as if every neighbour were near: at least it, with the weights >= 0."""
    rows = index.rows
    total = np.zeros(len(slots), dtype=np.float64)
    for links, weights in ((rows.prev, ranking.context_before), (rows.next, ranking.context_after)):
        current: npt.NDArray[np.integer[Any]] = slots
        for weight in weights:
            current = links[current]
            total += weight * keyword[current]
    return total


def written_by(authors: Ints32, codes: Sequence[int], count: int) -> Bools:
    """Which of ``count`` ``authors`` are one of ``codes`` (all False without codes, whatever
    ``authors`` holds): ``np.isin``'s answer, by one comparison a code (a person or two are
    asked for; ``isin`` over every slot of 260,000 took 3.7 ms)."""
    found = np.zeros(count, dtype=np.bool_)
    for code in codes:
        found |= authors == code
    return found


def score(
    index: ChannelIndex, slots: Ints, own: Floats, thread: Floats, asked: Asked, ranking: Ranking
) -> Scores:
    """Every signal of ``slots`` (``own`` and ``thread``: their keyword scores and their roots'),
    summed in one fixed order, so a candidate scores the same whoever it is scored with."""
    rows = index.rows
    tid = rows.tid[slots]
    has_thread = tid >= 0
    safe_tid = np.where(has_thread, tid, 0)
    last_reply = np.where(has_thread, index.threads.last[safe_tid], 0.0)
    reply_count = np.where(has_thread, index.threads.count[safe_tid], 0.0)
    busiest = asked.busiest
    activity = np.log1p(reply_count) / math.log1p(busiest) if busiest else np.zeros(len(tid))
    last = np.maximum(rows.ts[slots], last_reply)
    recency = 0.5 ** (np.maximum(asked.reference - last, 0.0) / ranking.recency_half_life)
    explains = rows.cause[slots] & asked.asks_why
    named = asked.named
    period_of = in_periods(rows.ts[slots], named) if named else np.full(len(slots), -1)
    codes, named_codes = asked.codes, asked.named_codes
    written = rows.author[slots] if codes or named_codes else rows.author[:0]
    authored = written_by(written, codes, len(slots))
    by_named = written_by(written, named_codes, len(slots))
    near = (
        context(index, asked.keyword, slots, ranking)
        if asked.wanted and (ranking.context_before or ranking.context_after)
        else np.zeros(len(slots))
    )
    total = (
        own
        + ranking.thread_share * thread
        + near
        + ranking.date_boost * (period_of >= 0)
        + ranking.cause_boost * explains
        + ranking.author_boost * authored
        + ranking.named_person * by_named
        + ranking.recency_weight * recency
        + ranking.activity_weight * activity
    )
    # Rounded scores make the order independent of float summation order; ties go to the newer.
    rounded = np.round(total, 9)
    # The bot's own earlier answers and the questions asked of it come after every message
    # of people: they repeat the words of the question without answering it.
    order_by = np.where(rows.exchange[slots], rounded - _EXCHANGE, rounded)
    return Scores(
        slots, rounded, order_by, thread, near, period_of, explains, authored, by_named, last_reply
    )


def _rest_bound(index: ChannelIndex, asked: Asked, ranking: Ranking) -> float:
    """The most the signals beyond keyword, thread and context can add to any candidate."""
    counts = index.threads.count
    most = float(counts.max()) if len(counts) else 0.0
    activity = math.log1p(most) / math.log1p(asked.busiest) if asked.busiest else 0.0
    return (
        ranking.date_boost * bool(asked.named)
        + ranking.cause_boost * asked.asks_why
        + ranking.author_boost * bool(asked.codes)
        + ranking.named_person * bool(asked.named_codes)
        + ranking.recency_weight
        + ranking.activity_weight * max(activity, 1.0)
    )


def _boundable(ranking: Ranking) -> bool:
    weights = (
        ranking.thread_share, ranking.date_boost, ranking.cause_boost, ranking.author_boost,
        ranking.named_person, ranking.recency_weight, ranking.activity_weight,
        *ranking.context_before, *ranking.context_after,
    )  # fmt: skip
    return all(weight >= 0 for weight in weights)


def worth_scoring(
    index: ChannelIndex,
    candidates: Ints,
    own: Floats,
    thread: Floats,
    asked: Asked,
    ranking: Ranking,
    limit: int,
    per_thread: int,
    prune_from: int = PRUNE_FROM,
) -> Ints | None:
    """Positions (into ``candidates``) of those whose score can reach the best ``limit``, as
    the module docstring says; None: score them all (few candidates, no keywords, or no
    floor found)."""
    count = len(candidates)
    if count < max(prune_from, 2) or limit < 1 or not asked.wanted or not _boundable(ranking):
        return None
    sampled = min(max(8 * limit, 64), count - 1)
    bound = own + ranking.thread_share * thread
    if ranking.context_before or ranking.context_after:
        bound += _context_bound(index, asked.keyword, candidates, ranking)
    bound += _rest_bound(index, asked, ranking)
    sample = np.argpartition(-bound, sampled)[:sampled]
    scored = score(index, candidates[sample], own[sample], thread[sample], asked, ranking)
    chosen = choose(index, scored.slots, scored.order_by, index.rows.key[scored.slots], limit,
                    per_thread)  # fmt: skip
    if len(chosen) < limit:
        return None
    floor = float(scored.order_by[chosen].min())
    return np.flatnonzero(bound + _MARGIN >= floor)


def choose(
    index: ChannelIndex,
    candidates: Ints,
    rounded: Floats,
    keys: Ints,
    limit: int,
    per_thread: int,
) -> list[int]:
    """Positions (into ``candidates``) of the best ``limit``, at most ``per_thread`` a thread."""
    count = len(candidates)
    take = min(count, max(4 * limit, 32))
    while True:
        if take < count:
            threshold = np.partition(rounded, count - take)[count - take]
            subset = np.flatnonzero(rounded >= threshold)  # ties at the edge all come along
        else:
            subset = np.arange(count)
        order = subset[np.lexsort((-keys[subset], -rounded[subset]))]
        chosen: list[int] = []
        per: dict[int, int] = {}
        for position in order:
            if len(chosen) == limit:
                break
            thread = ts_key(index.message(int(candidates[position])).root_ts)
            if per.get(thread, 0) < per_thread:
                per[thread] = per.get(thread, 0) + 1
                chosen.append(int(position))
        if len(chosen) == limit or take >= count:
            return chosen
        take = min(count, take * 4)
