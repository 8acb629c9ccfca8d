"""Each channel's search index, built from the channel store: a search covers everything stored,
not only the recent window the history cache holds.

The first search of a channel after a start builds its :class:`ChannelIndex` from the store on
a thread of its own (never on the intake path): the newest messages first, page by page, until
the channel is read or the byte budget (``--history-mb``, :func:`message_bytes` a message) is
full; then they are indexed oldest first, the order the index links conversations in. A channel
larger than the budget keeps its newest part in memory, and each search pulls the older
messages that FTS5 finds for its keywords (``search_candidates``; a word the index already holds
thousands of messages with is not asked) into the index before ranking, so an old fact still
reaches the ranking (it is scored without the neighbours the index does not hold). Indexes of
the least recently searched channels are dropped first when the budget is over.

While a build runs, live writes are queued into the new index (the history feeds this object,
:class:`IndexSink`), and a search waits for the build at most its wait budget (``--max-wait``)
and never past ``BUILD_WAIT`` seconds from the build's start, nor at all once the build has
found more than a page (``PAGE``) to read, since indexing a page takes most of that wait; then
it ranks an interim index: the messages the history holds plus the stored messages FTS5 finds
for the intent's keywords (the same two tiers a channel larger than the budget is served in),
so the first answer after a start covers everything stored at any channel size.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from chanctx.bot.core.channel_record import ChannelRecord
from chanctx.cache import message_bytes, ts_key
from chanctx.context import Message, Names
from chanctx.tools import ChannelIndex, SearchScope, keywords

__all__ = [
    "BUILD_WAIT", "CANDIDATES", "HELD", "INTERIM_HELD", "LARGE", "OLDER", "PAGE", "StoreIndexes",
]  # fmt: skip

logger = logging.getLogger("chanctx.store_index")
_TELL_BUILDS_FROM = 1.0  # seconds: a build this long is logged at INFO, a shorter one at DEBUG

PAGE = 5_000  # messages read from the store at a time, newest first
CANDIDATES = 500  # FTS5 matches asked for when a channel's older part is not indexed
# An index of at least LARGE messages that does not reach the channel's oldest asks for at most
# OLDER older matches: each one pulled costs the answer a fetch and tokenising, and the
# ranking's best ten took their older messages almost only from the store's best ten
# (docs/design.md, "The older tier"). A smaller index is soon the whole channel (pulled
# messages stay), so it asks for as many as it can use.
OLDER, LARGE = 30, 20_000
# A word the index already holds this many messages with is not asked of the store: the store
# offers a common word's newest matches, which the index holds, and ranks its older matches
# below any rare word's, so asking for it cost most of an answer's reads and changed almost
# nothing (docs/design.md, "The older tier").
HELD = 2_000
# Seconds from the start of a channel's build until its searches stop waiting for it and rank
# the interim index: a small channel's build ends within it (then the search ranks the whole
# index), a large one's takes tens of seconds (and is not waited for at all once it has more
# than a page to read), and the interim already covers everything stored, so waiting longer
# buys little.
BUILD_WAIT = 1.0
# The newest held messages an interim index takes (beside FTS5's matches over the whole
# channel, which cover the rest of the history too): indexing all 5,000 a channel's history
# may hold was most of a first answer's time.
INTERIM_HELD = 1_000
_NS = 10**9  # ts keys count nanoseconds


def _ts_of(key: int) -> str:
    return f"{key // _NS}.{key % _NS:09d}"


@dataclass
class _Entry:
    """One channel's index: being built (``done`` unset) or ready."""

    index: ChannelIndex
    done: threading.Event = field(default_factory=threading.Event)
    # Set once waiting cannot help: the build is done, or it found more than a page to read
    # (indexing a page takes most of the build wait on its own).
    settled: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    read: int = 0  # messages read from the store so far
    per_message: int = 0  # bytes a message costs, measured on the build
    oldest: int | None = None  # the oldest key indexed when the channel did not fit
    reload: set[int] = field(default_factory=set)  # changed in the store, not held by history
    pulled: set[int] = field(default_factory=set)  # older messages FTS5 brought in
    failed: str | None = None

    def bytes(self) -> int:
        return len(self.index) * self.per_message


@dataclass
class _Interim:
    """What a channel's searches rank while its build runs: the held history plus, per search,
    the stored messages FTS5 matches for the intent (kept by key, so a repeated match is the
    same object and the index's diff leaves it in place)."""

    index: ChannelIndex
    stored: dict[int, Message] = field(default_factory=dict)
    chosen: list[Message] = field(default_factory=list)


class StoreIndexes:
    """The indexes of one workspace's channels, built from its channel store.

    ``held(channel)``: the messages the history holds (what a search covers while the
    channel's build runs); ``names()``: the display names now; ``cached()``: the bytes the
    history holds, which count against the same budget. Thread-safe.
    """

    def __init__(
        self,
        record: ChannelRecord,
        *,
        max_bytes: int,
        held: Callable[[str], Sequence[Message]],
        names: Callable[[], Names],
        cached: Callable[[], int] = lambda: 0,
        candidates: int = CANDIDATES,
        build_wait: float = BUILD_WAIT,
        page: int = PAGE,
        older: int = OLDER,
        large: int = LARGE,
        held_enough: int = HELD,
    ) -> None:
        self._record = record
        self.max_bytes = max_bytes
        self._held = held
        self._names = names
        self._cached = cached
        self._candidates = candidates
        self._older, self._large = older, large
        self._held_enough = held_enough
        self._build_wait = build_wait
        self._page = page
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently searched first
        self._interim: dict[str, _Interim] = {}
        self._lock = threading.Lock()
        # One build at a time, on one daemon thread (started with the first build): a build
        # never delays a shutdown, and the store gives that thread one reader connection.
        self._jobs: queue.SimpleQueue[tuple[str, _Entry]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._builder = threading.Lock()  # held by the build running

    # -- what the history tells us (IndexSink) -------------------------------------------------

    def queue(self, channel: str, key: int, message: Message | None) -> None:
        """A write the history made (or, for None, a thread root it does not hold changed)."""
        with self._lock:
            entry = self._entries.get(channel)
            if entry is None:
                return  # no index yet: its build will read the store
            if message is None:
                entry.reload.add(key)
                return
        entry.index.queue(key, message)

    def reload(self, channel: str, ts: str) -> None:
        """The store changed a message the history does not hold (an edit or deletion of an
        old message): the index takes the store's copy before its next search."""
        with self._lock:
            entry = self._entries.get(channel)
            if entry is not None:
                entry.reload.add(ts_key(ts))
            interim = self._interim.get(channel)
            if interim is not None:  # its next match reads the store's copy
                interim.stored.pop(ts_key(ts), None)

    def drop(self, channel: str) -> None:
        """The channel was erased (deleted, forgotten): its index goes."""
        with self._lock:
            self._entries.pop(channel, None)
            self._interim.pop(channel, None)

    # -- searching -------------------------------------------------------------------------------

    def scope(
        self,
        channel: str,
        *,
        hidden: Collection[str] = (),
        held: Collection[str] = (),
        wait: float,
    ) -> SearchScope:
        """What a search of ``channel`` ranks: its index built from the store, once that is
        ready within ``wait`` seconds (at most the build wait); else the interim index (the held
        history plus what the store's full-text index matches for the intent)."""
        entry = self._entry(channel)
        # The build wait counts from the build's start, not from each answer: a large channel's
        # build runs for minutes, and every answer meanwhile would otherwise pay the full wait.
        waited = time.monotonic() - entry.started
        wait = max(min(wait, self._build_wait - waited), 0.0)
        entry.settled.wait(wait)
        ready = entry.done.is_set()
        if ready and entry.failed is None:
            with self._lock:
                self._interim.pop(channel, None)
            return SearchScope(
                entry.index,
                hidden=frozenset(hidden),
                held=frozenset(held),
                extend=lambda intent: self._extend(channel, entry, intent),
            )
        held_now = self._held(channel)[-INTERIM_HELD:]
        with self._lock:
            interim = self._interim.get(channel)
            if interim is None:
                interim = self._interim[channel] = _Interim(ChannelIndex(channel))
        if entry.failed is not None:
            why = f"no index from the channel store ({entry.failed})"
        else:
            why = (
                f"its index is still being built from the channel store ({entry.read} messages "
                f"read in {time.monotonic() - entry.started:.1f} s, waited {wait:.1f} s)"
            )
        return SearchScope(
            interim.index,
            hidden=frozenset(hidden),
            held=frozenset(held),
            messages=lambda: [*held_now, *interim.chosen],
            extend=lambda intent: self._match(channel, interim, intent, held_now, why),
        )

    def indexed(self, channel: str) -> int:
        """Messages in the channel's built index (0 while none is ready)."""
        with self._lock:
            entry = self._entries.get(channel)
        return len(entry.index) if entry is not None and entry.done.is_set() else 0

    def start(self, channel: str) -> None:
        """Begin building the channel's index if it has none (returns at once)."""
        self._entry(channel)

    def wait_built(self, channel: str, seconds: float) -> tuple[bool, int]:
        """Wait at most ``seconds`` for the channel's index (its build started if none is
        running): (whether it is ready, messages its build has read so far). A failed build
        counts as ready: its answers search the interim index, as a running bot's do."""
        entry = self._entry(channel)
        entry.done.wait(seconds)
        return entry.done.is_set(), entry.read

    # -- internals -------------------------------------------------------------------------------

    def _entry(self, channel: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(channel)
            if entry is not None and entry.failed is None:
                self._entries.move_to_end(channel)
                return entry
            # Registered before the build reads anything: every write from now on reaches it.
            entry = self._entries[channel] = _Entry(ChannelIndex(channel))
        self._jobs.put((channel, entry))
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._work, name="chanctx-index-build", daemon=True
                )
                self._worker.start()
        return entry

    def _work(self) -> None:
        while True:
            channel, entry = self._jobs.get()
            with self._lock:
                wanted = self._entries.get(channel) is entry
            if wanted:
                self._build(channel, entry)
            else:  # dropped (the channel was erased) before its turn came
                entry.failed = "dropped"
                entry.done.set()
                entry.settled.set()

    def _build(self, channel: str, entry: _Entry) -> None:
        try:
            with self._builder, entry.index.lock:
                messages = self._newest_that_fit(channel, entry)
                names = self._names()
                for message in messages:
                    entry.index.upsert(message, names)
                entry.per_message = (
                    sum(map(message_bytes, messages)) // len(messages) if messages else 0
                )
            took = time.monotonic() - entry.started
            # An operator wants to hear of the builds an answer may wait for, not of every
            # small channel's (a replay builds one per channel it searches).
            logger.log(
                logging.INFO if took >= _TELL_BUILDS_FROM else logging.DEBUG,
                "channel %s: index built from the channel store: %d messages in %.1f s%s",
                channel, len(messages), took,
                " (the newest that fit --history-mb; older ones are found through the "
                "store's full-text index)" if entry.oldest is not None else "",
            )  # fmt: skip
        except Exception as error:  # a store read failed: searches fall back, a later one retries
            entry.failed = f"{type(error).__name__}: {error}"
            logger.warning("channel %s: index build failed: %s", channel, entry.failed)
        finally:
            entry.done.set()
            entry.settled.set()
            with self._lock:  # searches rank the built index from now on
                self._interim.pop(channel, None)
        self._fit(keep=channel)

    def _newest_that_fit(self, channel: str, entry: _Entry) -> list[Message]:
        """The channel's stored messages, newest first until the budget is full; returned
        oldest first."""
        store, team = self._record.store, self._record.team
        taken: list[Message] = []
        budget = self._room(channel)
        size = 0
        latest: str | None = None
        while True:
            page = store.messages(team, channel, limit=self._page, latest=latest)
            if len(page) == self._page:  # more than a page: no answer waits for this build
                entry.settled.set()
            fresh = page if latest is None else [m for m in page if m.ts != latest]
            for message in reversed(fresh):
                cost = message_bytes(message)
                while (
                    size + cost > budget
                    and size + cost <= self.max_bytes - self._cached()  # dropping can help
                    and self._drop_one(keep=channel)
                ):
                    budget = self._room(channel)  # a less recently searched index made room
                if size + cost > budget and taken:
                    entry.oldest = ts_key(taken[-1].ts)
                    taken.reverse()
                    return taken
                size += cost
                taken.append(message)
            entry.read = len(taken)
            if len(page) < self._page or not fresh:
                taken.reverse()
                return taken
            latest = page[0].ts

    def _extend(self, channel: str, entry: _Entry, intent: str) -> None:
        """Before a search (its index's lock held): take the store's copy of what changed
        there unseen by the history, and pull in the older matches of ``intent``."""
        store, team = self._record.store, self._record.team
        with self._lock:
            reload, entry.reload = entry.reload, set()
        wanted = set(reload)
        oldest = entry.oldest
        words = self._older_words(entry, intent) if oldest is not None else []
        if oldest is not None and words:
            asked = self._candidates
            if len(entry.index) >= self._large:
                asked = min(asked, self._older)
            found = store.search_candidates(
                team, channel, words, asked, before=_ts_of(oldest)
            )  # the index holds the newer part
            for candidate in found:
                key = ts_key(candidate.ts)
                if key < oldest and key not in entry.pulled:
                    entry.pulled.add(key)
                    wanted.add(key)
        if not wanted:
            return
        stored = {
            ts_key(m.ts): m for m in store.get_many(team, channel, sorted(map(_ts_of, wanted)))
        }
        for key in sorted(wanted):
            entry.index.queue(key, stored.get(key))  # None or a tombstone leaves the index
        self._fit(keep=channel)

    def _older_words(self, entry: _Entry, intent: str) -> list[str]:
        """The intent's words worth asking the store's older part for: those the index holds
        fewer than ``held_enough`` messages with."""
        bm25 = entry.index.bm25
        return [
            k.word
            for k in keywords(intent, entry.index.stemmer)
            if bm25.df(k.term) < self._held_enough
        ]

    def _match(
        self, channel: str, interim: _Interim, intent: str, held: Sequence[Message], why: str
    ) -> None:
        """Before a search of the interim index (its lock held): choose the stored messages
        FTS5 matches for ``intent`` that the history does not hold."""
        store, team = self._record.store, self._record.team
        held_keys = {ts_key(m.ts) for m in held}
        try:
            words = [k.word for k in keywords(intent, interim.index.stemmer)]
            found = store.search_candidates(team, channel, words, self._candidates)
            keys = [k for k in (ts_key(c.ts) for c in found) if k not in held_keys]
            missing = [k for k in keys if k not in interim.stored]
            stored = interim.stored  # reload() may pop from it meanwhile: .get, never [k]
            if len(stored) + len(missing) > 4 * self._candidates:
                stored = {k: m for k in keys if (m := stored.get(k)) is not None}
            for message in store.get_many(team, channel, [_ts_of(k) for k in missing]):
                stored[ts_key(message.ts)] = message
            interim.stored = stored
        except Exception as error:  # the store failed too: the held history is all there is
            logger.warning(
                "channel %s: %s, and the channel store's full-text index failed (%s: %s); this "
                "search covers the %d messages held in memory",
                channel, why, type(error).__name__, error, len(held),
            )  # fmt: skip
            interim.chosen = []
            return
        chosen = [m for k in keys if (m := stored.get(k)) is not None]
        interim.chosen = [m for m in chosen if not m.deleted]
        logger.info(
            "channel %s: %s; this search ranks the %d messages held in memory and the %d "
            "stored ones the channel store's full-text index matches",
            channel, why, len(held), len(interim.chosen),
        )  # fmt: skip

    def _room(self, channel: str) -> int:
        """Bytes ``channel``'s build may take: the budget less the history's bytes and the
        other indexes' (at least a quarter of it, so a full history leaves a build something)."""
        with self._lock:
            others = sum(e.bytes() for c, e in self._entries.items() if c != channel)
        return max(self.max_bytes - self._cached() - others, self.max_bytes // 4)

    def _drop_one(self, *, keep: str) -> bool:
        """Drop the least recently searched ready index other than ``keep``'s; False if none."""
        with self._lock:
            for channel, entry in self._entries.items():
                if channel != keep and entry.done.is_set() and entry.bytes():
                    del self._entries[channel]
                    logger.info("channel %s: index dropped to stay within --history-mb", channel)
                    return True
        return False

    def _fit(self, *, keep: str) -> None:
        """Drop the least recently searched indexes (never ``keep``'s, nor one being built)
        while all of them hold more than the budget."""
        with self._lock:
            total = self._cached() + sum(e.bytes() for e in self._entries.values())
            for channel in list(self._entries):
                if total <= self.max_bytes:
                    break
                entry = self._entries[channel]
                if channel == keep or not entry.done.is_set():
                    continue
                total -= entry.bytes()
                del self._entries[channel]
                logger.info("channel %s: index dropped to stay within --history-mb", channel)
