"""channel_context's ranking over a channel's :class:`~tools._index.ChannelIndex`.

Deterministic and local (no LLM call, no Slack call, no model: the same question over the same
history always gets the same answer, at no cost). The score of a message is

    keyword  (0..1)  0.7 * BM25 / best BM25 + 0.3 * share of the intent's keywords it
          contains, each keyword weighted by its idf (a rare word says more than a common one)
  + 0.3 * its thread root's keyword score, for a reply ("thread:" signal): replies are terse
          and lean on the root for their topic ("Found it: pool size was 5" answers "why did
          checkout fail" only through the root that says "checkout is failing")
  + conversational context ("context:" signal): 0.5 * the keyword score of each of the two
          messages before it and of the two after it in its conversation (the channel's
          top-level messages, or its thread), if within 15 minutes per message of it. The
          answer to a question is usually the message after it, and a topic runs over a few
          messages, most of which do not repeat its words
  + 0.5 if the intent names a month or a year and the message was posted then ("date:" signal,
          UTC): "the outage in March", "what we decided in 2024"
  + 0.3 if the intent asks why and the message states a cause ("because", "found it", ...)
  + 0.6 if an author asked for wrote it
  + 0.3 if a person the intent names wrote it ("person:" signal): "what are Joanna's hobbies"
          asks for messages *by* Joanna. A capitalised keyword that is a word of an author's
          name marks that author; it then stops being a keyword, since her name is in every
          message of hers (it is part of each message's document) and in the replies that
          address her ("Thanks, Joanna!"), so as a word it would favour the wrong person
  + 0.1 * recency    (halves every 3 days since the last activity in its thread)
  + 0.15 * activity  (log of its thread's reply count, relative to the busiest thread)

and the bot's own messages and the questions asked of it (mentions) come after every other
candidate, in score order among themselves.

BM25 is Okapi BM25 (k1 = 1.2, b = 0.4: chat messages are short and their length says little
about their topic, so length is normalised only mildly) over Porter-stemmed terms of the text,
the author's name and file titles; its scores equal rank_bm25.BM25Okapi's on the same corpus.

A message is a candidate if it or its root matched a keyword, if it is one of the context
neighbours of a match (the reply to "anyone know a good dentist?" is often "Dr Lee on 5th"
with no word of the question; it ranks by its context alone, so below the matches around it),
or if an asked or named author wrote it. Chatter beyond the context window never is, and a
lookup of identifiers only ("v2.30.4", "#9931": no plain word) gets its matches alone. An
intent with no keywords at all ("what's going on?") makes every message a candidate, ranked
by recency and activity (and date). Keywords dominate: the rest only reorders messages of
similar relevance. The share term matters in small channels, where BM25's idf can go
negative for a word most messages use (BM25Okapi then floors it at 0.25 * the mean idf).
BM25's statistics are the whole channel's; ``since`` only filters.

:class:`Ranking` (``tools._ranking``) holds every weight; its defaults are the tool's.
Everything is computed with numpy over the index's columns: the cost follows the number of
matching messages plus a few vectorised passes, never a Python loop over the channel; the
Python work per call is for the results shown. Of many candidates (a common word), only those
whose score can still reach the best ``limit`` are scored in full (``tools._scored``: a cheap
exact bound, and a floor from the best-bounded few); the answer is the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
from chanctx.context import Message, Names
from chanctx.context.render import author_of
from chanctx.tools._columns import Bools, Floats, Ints
from chanctx.tools._dates import label, periods
from chanctx.tools._index import ChannelIndex
from chanctx.tools._keywords import Keyword, keywords, terms
from chanctx.tools._ranking import Hit, Ranking, Search
from chanctx.tools._scored import PRUNE_FROM, Asked, choose, score, worth_scoring, written_by
from chanctx.tools._sets import intersect, union

__all__ = ["periods", "search"]

_ASKS_WHY = re.compile(r"\b(why|cause[ds]?|reason|root cause|went wrong|what happened)\b")
LIVE_THREAD = 86_400.0  # a reply within a day of "now" makes a thread "recent_activity"
_CAPITALISED = re.compile(r"(?<![\w.\-/:#])[A-Z]\w*")
_NEAR_OF = 500  # the matches whose context neighbours become candidates, at most
# A step back through the marked threads' replies costs about what a pass over this many
# slots does.
_SLOTS_A_STEP = 8_000


# -- the ranking ------------------------------------------------------------------------------


def _author_keys(message: Message, names: Names) -> set[str]:
    author = author_of(message, names)
    keys = {author.user_id.casefold(), author.display_name.casefold()}
    keys.update(author.display_name.casefold().split())
    return keys - {""}


def _named_people(
    index: ChannelIndex, intent: str, wanted: list[Keyword], names: Names, ranking: Ranking
) -> tuple[list[int], list[Keyword]]:
    """(author codes of the people the intent names, the keywords left to match words).

    "What is Joanna inspired by?" asks about messages *by* Joanna: her name is in every one of
    them (it is part of each message's document) and in the replies that address her, so as a
    word it says little and favours the other person's "Thanks, Joanna!". A keyword names a
    person if it is written capitalised in the intent and is a word of an author's display
    name ("dev" in "the dev deploy" stays a word, even beside a person called Dev); it then
    leaves the keywords, unless nothing else is left, and that person's messages become
    candidates, raised by ``named_person``.
    """
    if not ranking.named_person or not wanted:
        return [], wanted
    capitalised = {token.casefold() for token in _CAPITALISED.findall(intent)}
    asked = [k for k in wanted if k.word in capitalised]
    if not asked:
        return [], wanted
    codes: list[int] = []
    name_terms: set[str] = set()
    for code, message in enumerate(index.author_messages()):
        if message.is_self or message.is_bot:
            continue
        own = set(terms(author_of(message, names).display_name, index.stemmer))
        hit = {k.term for k in asked} & own
        if hit:
            codes.append(code)
            name_terms |= hit
    return codes, [k for k in wanted if k.term not in name_terms] or wanted


def _keyword_slots(index: ChannelIndex, keyword: Keyword) -> Ints:
    """The messages that contain ``keyword``: its term, or every one of its parts."""
    slots = index.bm25.slots_with(keyword.term)
    if keyword.parts:
        together = index.bm25.slots_with(keyword.parts[0])
        for part in keyword.parts[1:]:
            together = intersect(together, index.bm25.slots_with(part))
        slots = union([slots, together])
    return slots


def _keyword_weight(index: ChannelIndex, keyword: Keyword, ranking: Ranking) -> float:
    if not ranking.share_by_idf:
        return 1.0
    idf = index.bm25.idf(keyword.term, epsilon=ranking.epsilon)
    if not idf and keyword.parts:
        idf = min(index.bm25.idf(part, epsilon=ranking.epsilon) for part in keyword.parts)
    return 0.1 + max(idf, 0.0)


def _near(index: ChannelIndex, slots: Ints, ranking: Ranking) -> Ints:
    """The conversation neighbours of ``slots`` that :func:`_context` would count (repeats
    possible: the caller only marks them)."""
    rows = index.rows
    here = rows.ts[slots]
    found: list[Ints] = []
    for links, weights in ((rows.prev, ranking.context_before), (rows.next, ranking.context_after)):
        current: npt.NDArray[np.integer[Any]] = slots
        for distance, weight in enumerate(weights, start=1):
            current = links[current]
            near = (current >= 0) & (
                np.abs(rows.ts[current] - here) <= distance * ranking.context_gap
            )
            if weight:
                found.append(current[near].astype(np.int64))
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _neighbours(index: ChannelIndex, slot: int, ranking: Ranking) -> list[int]:
    """The neighbours whose keyword score a message's context counts, as in :func:`_context`."""
    out: list[int] = []
    ts = index.rows.ts
    for links, weights in (
        (index.rows.prev, ranking.context_before),
        (index.rows.next, ranking.context_after),
    ):
        current = slot
        for distance, weight in enumerate(weights, start=1):
            current = int(links[current])
            if current < 0:
                break
            if weight and abs(float(ts[current]) - float(ts[slot])) <= (
                distance * ranking.context_gap
            ):
                out.append(current)
    return out


def search(
    index: ChannelIndex,
    *,
    intent: str,
    authors: Sequence[str],
    since: float | None,
    names: Names,
    now: float | None,
    limit: int,
    per_thread: int,
    hidden: frozenset[str] = frozenset(),
    ranking: Ranking | None = None,
    explain: bool = True,
    prune_from: int = PRUNE_FROM,
) -> Search:
    """The best ``limit`` messages of ``index`` for ``intent`` (the caller holds index.lock).

    ``explain``: say why each hit ranks (its ``signal``); the query API does not show it.
    ``prune_from``: from how many candidates on only those that can reach the best ``limit``
    are scored in full (``tools._scored``; the answer is the same either way).

    Sparse throughout: the work follows the messages that match (postings), plus a few
    vectorised passes over the per-slot columns; there is no loop over the channel.
    """
    ranking = ranking or Ranking()
    if ranking.stemmer != index.stemmer:
        ranking = replace(ranking, stemmer=index.stemmer)
    wanted = keywords(intent, index.stemmer)
    scanned, oldest, newest = index.window(since, hidden)
    if not scanned:
        return Search([], 0, 0, None, wanted)
    named_codes, scoring = _named_people(index, intent, wanted, names, ranking)
    time_range = (index.message(oldest).ts, index.message(newest).ts)
    rows = index.rows
    capacity = index.capacity
    hidden_slots = np.array(
        [slot for slot in map(index.slot, hidden) if slot is not None], dtype=np.int64
    )

    def in_window(slots: Ints) -> Ints:
        keep = slots[rows.ts[slots] >= since] if since is not None else slots
        return np.setdiff1d(keep, hidden_slots) if len(hidden_slots) else keep

    # Dense keyword scores (0 where no keyword matched), one extra cell for "no slot" (-1).
    keyword = index.scratch.floats(0, capacity + 1)
    chosen_mask = index.scratch.bools(capacity + 1)
    # The candidates marked in ``chosen_mask``, also as lists of slots while each way of
    # marking them gives one (``listed``): their union is cheaper than a pass over the mask.
    marked: list[Ints] = []
    listed = bool(scoring)
    if scoring:
        # A message matches a keyword if it holds its term, or (a compound keyword written
        # apart, "checkout api") all of its parts.
        keyword_slots = [_keyword_slots(index, k) for k in scoring]
        matched = in_window(union(keyword_slots))
        weights = [_keyword_weight(index, k, ranking) for k in scoring]
        share = index.scratch.floats(1, capacity + 1)
        for found, weight in zip(keyword_slots, weights, strict=True):
            share[found] += weight
        bm25 = index.bm25.dense_scores(
            [k.term for k in scoring], k1=ranking.k1, b=ranking.b, epsilon=ranking.epsilon,
            out=index.scratch.floats(2, capacity + 1),
        )[matched]  # fmt: skip
        bm25 = np.maximum(bm25, 0.0)
        # The scale is set by people's messages: an earlier question asked of the bot (or its
        # answer) repeats the intent's words and would otherwise shrink every other match.
        people = bm25[~rows.exchange[matched]]
        best = float(people.max()) if len(people) else float(bm25.max()) if len(bm25) else 0.0
        keyword[matched] = ranking.keyword_bm25 * bm25 / (best or 1.0) + (
            ranking.keyword_share * share[matched] / sum(weights)
        )
        chosen_mask[matched] = True
        marked.append(matched)
        if ranking.context_candidates and any(k.word.isalpha() for k in scoring):
            # Not for a lookup of identifiers only ("v2.30.4", "#9931"): it wants its matches.
            # Around the best matches only: a neighbour ranks by its context, so the
            # neighbours of weak matches would never be shown, and a common word can match
            # a third of a large channel.
            best_matches = matched
            if len(matched) > _NEAR_OF:
                cut = np.argpartition(-keyword[matched], _NEAR_OF)[:_NEAR_OF]
                best_matches = matched[cut]
            near = _near(index, best_matches, ranking)
            chosen_mask[near] = True  # windowed below
            marked.append(near)
        if ranking.thread_share:  # a reply whose root matched is a candidate too
            replies = _mark_replies(index, chosen_mask)
            marked = marked if replies is None else [*marked, replies]
            listed = replies is not None
    asked = {a.strip().lstrip("@").casefold() for a in authors} - {""}
    codes = [
        code
        for code, message in enumerate(index.author_messages())
        if asked and not asked.isdisjoint(_author_keys(message, names))
    ]
    if codes:
        chosen_mask[:capacity] |= written_by(rows.author[:capacity], codes, capacity)
    if named_codes:
        chosen_mask[:capacity] |= written_by(rows.author[:capacity], named_codes, capacity)
    if not wanted:
        chosen_mask[:capacity] = rows.live[:capacity]
    if listed and not codes and not named_codes and wanted:
        candidates = in_window(union(marked))
    else:
        candidates = in_window(np.flatnonzero(chosen_mask[:capacity]))
    if not len(candidates):
        return Search([], 0, scanned, time_range, wanted)

    own = keyword[candidates]
    thread = keyword[rows.root[candidates]] if wanted else np.zeros(len(candidates))
    asked_of = Asked(
        wanted=bool(wanted),
        keyword=keyword,
        busiest=_busiest(index, since),
        reference=now if now is not None else float(rows.ts[_newest(index, hidden)]),
        asks_why=bool(_ASKS_WHY.search(intent.casefold())) and bool(ranking.cause_boost),
        named=periods(intent) if ranking.date_boost else [],
        codes=codes,
        named_codes=named_codes,
    )
    worth = worth_scoring(
        index, candidates, own, thread, asked_of, ranking, limit, per_thread, prune_from
    )
    if worth is None:
        scored = score(index, candidates, own, thread, asked_of, ranking)
    else:
        scored = score(index, candidates[worth], own[worth], thread[worth], asked_of, ranking)
    slots = scored.slots
    chosen = choose(index, slots, scored.order_by, rows.key[slots], limit, per_thread)
    named = asked_of.named
    reference = asked_of.reference

    hits: list[Hit] = []
    for position in chosen:
        slot = int(slots[position])
        message = index.message(slot)
        signals = (
            _signals(
                index,
                slot,
                scoring,
                ranking,
                keyword,
                thread=bool(ranking.thread_share and scored.thread[position] > 0),
                context=bool(scored.context[position] > 0),
                period=named[int(scored.period_of[position])]
                if scored.period_of[position] >= 0
                else None,
                explains=bool(scored.explains[position]),
                author=author_of(message, names).display_name
                if scored.authored[position]
                else None,
                person=author_of(message, names).display_name
                if scored.by_named[position]
                else None,
                live_thread=bool(
                    scored.last_reply[position]
                    and reference - scored.last_reply[position] <= LIVE_THREAD
                ),
            )
            if explain
            else ""
        )
        hits.append(Hit(message, names, float(scored.rounded[position]), signals))
    return Search(hits, len(candidates), scanned, time_range, wanted)


def _mark_replies(index: ChannelIndex, chosen_mask: Bools) -> Ints | None:
    """Mark every reply whose thread's root is marked: ``chosen_mask[rows.root]`` over every
    slot, or, when the marked threads are short beside the index (a step a reply, each a few
    vectorised operations, against a pass over every slot), reached from the marked roots
    back through their threads' replies. The replies so reached (None: the pass was made)."""
    rows, threads = index.rows, index.threads
    capacity = index.capacity
    roots = threads.root
    marked = (roots >= 0) & chosen_mask[roots]  # root -1 reads the extra cell: False
    longest = int(threads.known[marked].max()) if marked.any() else 0
    if longest * _SLOTS_A_STEP >= capacity:
        chosen_mask[:capacity] |= chosen_mask[rows.root[:capacity]]
        return None
    reached: list[Ints] = []
    current = threads.tail[marked]
    while len(current := current[current >= 0]):
        chosen_mask[current] = True
        reached.append(current.astype(np.int64))
        current = rows.prev[current]
    return np.concatenate(reached) if reached else np.zeros(0, dtype=np.int64)


def _busiest(index: ChannelIndex, since: float | None) -> float:
    """The most replies of a thread with a message in the window (its newest >= since)."""
    threads = index.threads
    if since is None:
        return float(threads.count.max()) if len(threads.count) else 0.0
    roots = threads.root
    root_ts = np.where(roots >= 0, index.rows.ts[np.maximum(roots, 0)], 0.0)
    active = np.maximum(root_ts, threads.last) >= since
    return float(threads.count[active].max()) if active.any() else 0.0


def _newest(index: ChannelIndex, hidden: frozenset[str]) -> int:
    """The slot of the newest message that is not hidden (the window is not empty)."""
    return index.window(None, hidden)[2]


def _signals(
    index: ChannelIndex,
    slot: int,
    wanted: list[Keyword],
    ranking: Ranking,
    keyword: Floats,
    *,
    thread: bool,
    context: bool,
    period: tuple[int | None, int | None] | None,
    explains: bool,
    author: str | None,
    person: str | None,
    live_thread: bool,
) -> str:
    """Why a message ranks: every signal that added to its score, in a fixed order."""

    def words(slots: list[int]) -> list[str]:
        found = [frozenset(index.bm25.terms_of(one)) for one in slots]
        return [k.word for k in wanted if any(k.found_in(present) for present in found)]

    signals: list[str] = []
    own = words([slot])
    if own:
        signals.append("keyword:" + ",".join(own))
    if thread:
        signals.append("thread:" + ",".join(words([int(index.rows.root[slot])])))
    if context:
        near = [n for n in _neighbours(index, slot, ranking) if keyword[n] > 0]
        signals.append("context:" + ",".join(words(near)))
    if period is not None:
        signals.append("date:" + label(period))
    if explains:
        signals.append("states_cause")
    if author is not None:
        signals.append("author:" + author)
    if person is not None:
        signals.append("person:" + person)
    if live_thread:
        signals.append("recent_activity")
    return "; ".join(signals) or "recency"
