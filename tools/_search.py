"""channel_context's ranking: BM25 over the channel's messages, plus thread, recency, author.

Deterministic and local (seed 003: no LLM call, no Slack call). The score of a message is

    keyword  (0..1)  0.7 * BM25 / best BM25 + 0.3 * share of the intent's keywords it contains
  + 0.3 * its thread root's keyword score, for a reply ("thread:" signal): replies are terse
          and lean on the root for their topic ("Found it: pool size was 5" answers "why did
          checkout fail" only through the root that says "checkout is failing")
  + 0.3 if the intent asks why and the message states a cause ("because", "found it", ...)
  + 0.6 if an author asked for wrote it
  + 0.25 * recency   (halves every 3 days since the last activity in its thread)
  + 0.15 * activity  (log of its thread's reply count, relative to the busiest candidate)

A message is a candidate only if it or its root matched a keyword, or an asked author wrote it;
an intent with no keywords at all ("what's going on?") makes every message a candidate, ranked
by recency and activity. Keywords dominate: the rest only reorders messages of similar
relevance. The share term matters in small channels, where BM25's idf can go negative for a
word most messages use. The index is rebuilt per call (fine at the 5,000 messages a channel
history holds).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from cache import ts_key
from context import Message, Names
from context._render import author_of, text_of

from ._keywords import Keyword, keywords, terms

__all__ = ["Hit", "Search", "ThreadStats", "search", "thread_stats"]

_ASKS_WHY = re.compile(r"\b(why|cause[ds]?|reason|root cause|went wrong|what happened)\b")
_STATES_CAUSE = re.compile(
    r"\b(because|caused|root cause|due to|found it|turns out|the (issue|problem|culprit) "
    r"(is|was)|broke|broken by|regression)\b"
)

KEYWORD_BM25, KEYWORD_SHARE = 0.7, 0.3
THREAD_SHARE = 0.3
CAUSE_BOOST = 0.3
AUTHOR_BOOST = 0.6
RECENCY_WEIGHT, RECENCY_HALF_LIFE = 0.25, 3 * 86_400.0
ACTIVITY_WEIGHT = 0.15
LIVE_THREAD = 86_400.0  # a reply within a day of "now" makes a thread "recent_activity"


@dataclass(frozen=True)
class ThreadStats:
    """What the channel knows about one thread: replies seen and the root's own counters."""

    reply_count: int
    last_reply_ts: str | None
    participant_names: tuple[str, ...]


@dataclass(frozen=True)
class Hit:
    message: Message
    text: str
    score: float
    signal: str


@dataclass(frozen=True)
class Search:
    hits: list[Hit]  # best first, every candidate (the caller applies max_results)
    scanned: list[Message]  # what was searched, oldest to newest
    keywords: list[Keyword]


def thread_stats(messages: Iterable[Message], names: Names) -> dict[int, ThreadStats]:
    """Per thread root (by ts_key): reply count, last reply and participants."""
    replies: dict[int, list[Message]] = {}
    roots: dict[int, Message] = {}
    for message in messages:
        if message.is_reply:
            assert message.thread_ts is not None
            replies.setdefault(ts_key(message.thread_ts), []).append(message)
        else:
            roots[ts_key(message.ts)] = message
    stats: dict[int, ThreadStats] = {}
    for key, root in roots.items():
        known = replies.get(key, [])
        # The root's counters are the platform's; replies seen since may be newer.
        count = max(root.reply_count, len(known))
        if count == 0:
            continue
        latest = root.latest_reply
        for reply in known:
            if latest is None or ts_key(reply.ts) > ts_key(latest):
                latest = reply.ts
        # By first reply, so the order never depends on the order events were recorded in.
        seen: dict[str, str] = {}
        for reply in sorted(known, key=lambda r: ts_key(r.ts)):
            if reply.user_id:
                seen.setdefault(reply.user_id, author_of(reply, names).display_name)
        participants: dict[str, str] = {}
        for user in (*seen, *root.reply_users):
            participants.setdefault(user, names.users.get(user) or seen.get(user) or user)
        stats[key] = ThreadStats(count, latest, tuple(participants.values()))
    return stats


def _author_keys(message: Message, names: Names) -> set[str]:
    author = author_of(message, names)
    keys = {author.user_id.casefold(), author.display_name.casefold()}
    keys.update(author.display_name.casefold().split())
    return keys - {""}


def _document(message: Message, text: str, names: Names) -> list[str]:
    # The author's name and the file titles are searchable too: "what did Dev post",
    # "the grafana screenshot".
    extra = [author_of(message, names).display_name]
    for ref in message.files:
        extra.extend(filter(None, (ref.title, ref.filename)))
    return terms(" ".join([text, *extra]))


def _recency(age: float) -> float:
    return float(0.5 ** (max(age, 0.0) / RECENCY_HALF_LIFE))


def _keyword_scores(
    wanted: list[Keyword], documents: list[list[str]]
) -> list[tuple[float, list[str]]]:
    """Per document: its keyword score (0..1) and the keywords (as written) it contains."""
    # BM25 ranks on the keywords' own terms; word parts only decide whether a keyword matched.
    query = [k.term for k in wanted]
    if not query or not any(documents):
        return [(0.0, [])] * len(documents)
    raw = [max(float(s), 0.0) for s in BM25Okapi(documents).get_scores(query)]
    best = max(raw) or 1.0
    out: list[tuple[float, list[str]]] = []
    for document, score in zip(documents, raw, strict=True):
        present = set(document)
        matched = [k.word for k in wanted if k.found_in(present)]
        share = len(matched) / len(wanted)
        out.append(
            (KEYWORD_BM25 * score / best + KEYWORD_SHARE * share if matched else 0.0, matched)
        )
    return out


def search(
    messages: Sequence[Message],
    *,
    intent: str,
    authors: Sequence[str],
    since: float | None,
    names: Names,
    now: float | None,
    stats: dict[int, ThreadStats],
) -> Search:
    """Rank ``messages`` (this channel's, not deleted, oldest to newest) for ``intent``."""
    scanned = [m for m in messages if since is None or float(m.ts) >= since]
    wanted = keywords(intent)
    if not scanned:
        return Search([], scanned, wanted)
    reference = now if now is not None else max(float(m.ts) for m in messages)
    texts = [text_of(m, names) for m in scanned]
    own = _keyword_scores(
        wanted, [_document(m, t, names) for m, t in zip(scanned, texts, strict=True)]
    )
    root_at = {ts_key(m.ts): i for i, m in enumerate(scanned) if not m.is_reply}
    asks_why = bool(_ASKS_WHY.search(intent.casefold()))
    asked = {a.strip().lstrip("@").casefold() for a in authors} - {""}
    threads = [stats.get(ts_key(m.root_ts)) for m in scanned]
    busiest = max((t.reply_count for t in threads if t is not None), default=0)

    hits: list[Hit] = []
    for index, (message, text, thread) in enumerate(zip(scanned, texts, threads, strict=True)):
        keyword, matched = own[index]
        root = root_at.get(ts_key(message.root_ts)) if message.is_reply else None
        inherited, via_thread = own[root] if root is not None else (0.0, [])
        by_author = bool(asked) and not asked.isdisjoint(_author_keys(message, names))
        if wanted and not matched and not via_thread and not by_author:
            continue
        explains = asks_why and bool(_STATES_CAUSE.search(text.casefold()))
        last = max(float(message.ts), float(thread.last_reply_ts or 0) if thread else 0.0)
        replies = thread.reply_count if thread else 0
        activity = math.log1p(replies) / math.log1p(busiest) if busiest else 0.0
        score = (
            keyword
            + THREAD_SHARE * inherited
            + (CAUSE_BOOST if explains else 0.0)
            + (AUTHOR_BOOST if by_author else 0.0)
            + RECENCY_WEIGHT * _recency(reference - last)
            + ACTIVITY_WEIGHT * activity
        )
        signals = []
        if matched:
            signals.append("keyword:" + ",".join(matched))
        if via_thread:
            signals.append("thread:" + ",".join(via_thread))
        if explains:
            signals.append("states_cause")
        if by_author:
            signals.append("author:" + author_of(message, names).display_name)
        last_reply = thread.last_reply_ts if thread else None
        if last_reply is not None and reference - float(last_reply) <= LIVE_THREAD:
            signals.append("recent_activity")
        hits.append(Hit(message, text, round(score, 9), "; ".join(signals) or "recency"))

    # Rounded scores make the order independent of float summation order; ties go to the newer.
    hits.sort(key=lambda h: (-h.score, -ts_key(h.message.ts)))
    return Search(hits, scanned, wanted)
