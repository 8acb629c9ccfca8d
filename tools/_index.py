"""A channel's search index, kept current message by message: what channel_context ranks from.

It holds the channel's live messages (deleted ones leave it) and, per message, what the ranking
reads: the BM25 document (text, author's name, file titles, through :func:`terms`), the time,
the author, the thread and the messages next to it in its conversation. Messages get a *slot*
(a small int); the per-message facts are numpy arrays indexed by slot, so the ranking computes
over thousands of matches without a Python loop per message.

Three ways to keep it current, all incremental (no full rebuild per message):

* :meth:`ChannelIndex.upsert` / :meth:`ChannelIndex.remove`: one message at a time;
* :meth:`ChannelIndex.queue` then :meth:`ChannelIndex.refresh`: a writer (the cache, on every
  record, edit and delete) queues changes in O(1) and the next search applies them, so the
  writer never tokenises and never resolves display names (which may call Slack);
* :meth:`ChannelIndex.sync`: for a view that can only list its messages; it diffs the list
  against the index by object identity and applies only what changed.

Conversations: a top-level message's neighbours are the top-level messages before and after it
in the channel; a reply's are the replies before and after it in its thread. Threads: replies
are grouped by their root, whose reply count and last reply feed recency and activity (the
rule is :meth:`ChannelIndex.thread_stats`'s).

Not thread-safe by itself: hold :attr:`ChannelIndex.lock` around refresh, sync and reads
(``queue`` may be called from any thread at any time).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from chanctx.cache import ts_key
from chanctx.context import Message, Names
from chanctx.context.render import author_of, text_of
from chanctx.tools._bm25 import BM25Index
from chanctx.tools._columns import (
    NONE,
    KeyBlocks,
    Rows,
    Scratch,
    Threads,
    link_streams,
    live_window,
)
from chanctx.tools._documents import (
    STATES_CAUSE,
    ThreadStats,
    author_key,
    document_terms,
    has_thread,
    same_document,
)
from chanctx.tools._keywords import Stemmer

__all__ = ["ChannelIndex", "ThreadStats", "document_terms"]

# Older messages added at once from which they are linked in one sorted pass over the index
# (21 ms at 260,000 indexed), not each by a bisection of the channel's top-level keys or a walk
# back through its thread: at least _BULK_LINK, and one in _BULK_SHARE of the index.
_BULK_LINK, _BULK_SHARE = 4, 200
_Asked = tuple[int, float | None, tuple[int, ...]]  # a window's question: version, since, hidden


class ChannelIndex:
    """The live messages of one channel, indexed for :func:`tools._search.search`."""

    def __init__(self, channel: str, *, stemmer: Stemmer = "porter") -> None:
        self.channel = channel
        self.stemmer: Stemmer = stemmer
        self.lock = threading.RLock()
        self.bm25 = BM25Index()
        self.scratch = Scratch()  # the ranking's work arrays (tools._columns)
        self._pending: dict[int, Message | None] = {}
        self._pending_lock = threading.Lock()
        self._synced: list[Message] = []
        # id(message object) -> its key, for sync's diff (None until sync is first used).
        self._ids: dict[int, int] | None = None
        self._slot_of: dict[int, int] = {}  # ts key -> slot
        self._messages: list[Message | None] = []
        self._free: list[int] = []
        self.rows = Rows()
        self._top = NONE  # the newest top-level message's slot (the channel stream's tail)
        self._top_keys = KeyBlocks()  # every indexed top-level message's key, ascending
        self._deferred = False  # within a refresh or sync whose links are rebuilt at its end
        self._touched: set[int] = set()  # threads a deferred message joined
        self._authors: dict[tuple[str, str | None], int] = {}
        self._author_messages: list[Message] = []  # one message per author code
        self._tid_of: dict[int, int] = {}  # root key -> thread id
        self._thread_keys: list[int] = []  # thread id -> root key
        self._free_tids: list[int] = []
        self.threads = Threads()
        # Bumped whenever a slot is filled or freed: what :meth:`window` remembers is valid
        # while it holds.
        self._version = 0
        self._window: tuple[_Asked, tuple[int, int, int]] | None = None
        # The whole channel's window, kept up to date as messages are added (a search that
        # pulls older matches in adds some each time; a pass over the columns for it cost
        # more than the rest of a small search), forgotten when one is removed.
        self._whole: tuple[int, int, int] | None = None

    # -- columns the ranking reads (valid until the next write) -----------------------------

    @property
    def capacity(self) -> int:
        return self.rows.capacity

    def message(self, slot: int) -> Message:
        found = self._messages[slot]
        assert found is not None, f"slot {slot} is free"
        return found

    def slot(self, ts: str) -> int | None:
        return self._slot_of.get(ts_key(ts))

    def __len__(self) -> int:
        return len(self._slot_of)

    def window(self, since: float | None, hidden: Iterable[str] = ()) -> tuple[int, int, int]:
        """(count, oldest slot, newest slot) of the messages with float(ts) >= ``since``.

        ``hidden`` ts are left out; (0, -1, -1) when there are none. A vectorised pass over the
        columns, remembered until a message is added or removed: a search asks twice, and the
        next search of an unchanged channel the same again.
        """
        hidden_slots = tuple(sorted({s for s in map(self.slot, hidden) if s is not None}))
        if since is None and not hidden_slots:
            if self._whole is None:
                self._whole = live_window(self.rows, len(self._slot_of), None, ())
            return self._whole
        asked = (self._version, since, hidden_slots)
        if self._window is not None and self._window[0] == asked:
            return self._window[1]
        found = live_window(self.rows, len(self._slot_of), since, hidden_slots)
        self._window = (asked, found)
        return found

    def author_messages(self) -> list[Message]:
        """One message per author code (index = code), to resolve authors' names."""
        return self._author_messages

    def thread_stats(self, root_key: int, names: Names) -> ThreadStats | None:
        """Replies (the root's count, or the replies known if more), last reply, participants.

        None when the root is not indexed or the thread has no reply. The root's counters are
        the platform's; replies seen since may be newer. Participants in order of first reply,
        then the root's ``reply_users``.
        """
        tid = self._tid_of.get(root_key)
        if tid is None:
            return None
        root_slot = int(self.threads.root[tid])
        if root_slot == NONE:
            return None
        root = self.message(root_slot)
        known = [self.message(slot) for slot in self._replies(tid)]
        count = max(root.reply_count, len(known))
        if count == 0:
            return None
        latest = root.latest_reply
        if known and (latest is None or ts_key(known[-1].ts) > ts_key(latest)):
            latest = known[-1].ts
        seen: dict[str, str] = {}
        for reply in known:
            if reply.user_id:
                seen.setdefault(reply.user_id, author_of(reply, names).display_name)
        participants: dict[str, str] = {}
        for user in (*seen, *root.reply_users):
            participants.setdefault(user, names.users.get(user) or seen.get(user) or user)
        return ThreadStats(count, latest, tuple(participants.values()))

    # -- feeding ------------------------------------------------------------------------------

    def queue(self, key: int, message: Message | None) -> None:
        """Note that the message at ``key`` is now ``message`` (None: gone); thread-safe, O(1).

        Applied by the next :meth:`refresh`. A deleted message or another channel's counts as
        gone.
        """
        with self._pending_lock:
            self._pending[key] = message

    def refresh(self, names: Names) -> int:
        """Apply the queued changes (oldest key first); returns how many there were.

        Many messages older than the newest indexed one (a search pulling in older matches,
        a backfill) are linked into their conversations in one sorted pass afterwards, not
        each by a pass over the whole index.
        """
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        with self._linking(pending):
            for key in sorted(pending):
                message = pending[key]
                if message is None or message.deleted or message.channel != self.channel:
                    self._remove_key(key)
                else:
                    self.upsert(message, names, key=key)
        return len(pending)

    def sync(self, messages: Sequence[Message], names: Names) -> None:
        """Make the index hold exactly the live messages of this channel among ``messages``.

        A view's ``messages()`` returns the same objects for messages that did not change
        (frozen models are replaced on every change), so an unchanged list costs one list
        comparison (identical items compare without a call) and a changed one a diff by object
        identity plus the changed messages' work (many older ones linked as by refresh).
        """
        listed = list(messages)
        if listed == self._synced:
            return
        if self._ids is None:
            self._ids = {id(m): ts_key(m.ts) for m in self._messages if m is not None}
        ids = self._ids
        current = dict(zip(map(id, listed), listed, strict=True))
        gone = [ids[i] for i in ids.keys() - current.keys()]
        added = [current[i] for i in current.keys() - ids.keys()]
        added.sort(key=lambda m: ts_key(m.ts))
        with self._linking([ts_key(m.ts) for m in added]):
            for message in added:
                if message.deleted or message.channel != self.channel:
                    continue
                self.upsert(message, names)
            kept = {ts_key(m.ts) for m in added if not m.deleted and m.channel == self.channel}
            for key in gone:
                if key not in kept:
                    self._remove_key(key)
        self._synced = listed

    def upsert(self, message: Message, names: Names, *, key: int | None = None) -> None:
        """Index ``message`` (a live message of this channel), replacing its older version.

        ``key``: its ts key, when the caller has it (the same int object is then kept by every
        structure that names the message: one int per message, not one per structure).
        """
        if message.channel != self.channel or message.deleted:
            raise ValueError("only this channel's live messages can be indexed")
        key = ts_key(message.ts) if key is None else key
        slot = self._slot_of.get(key)
        if slot is not None:
            old = self.message(slot)
            if old is message:
                return
            if same_document(old, message):
                self._replace(slot, old, message)
                return
            self._remove_slot(slot)
        self._add(message, key, names)

    def remove(self, ts: str) -> None:
        """Forget the message at ``ts`` (deleted or evicted); unknown ts are ignored."""
        self._remove_key(ts_key(ts))

    # -- internals ----------------------------------------------------------------------------

    def _add(self, message: Message, key: int, names: Names) -> None:
        self._version += 1
        slot = self._free.pop() if self._free else len(self._messages)
        if slot == len(self._messages):
            self._messages.append(None)
        self.rows.ensure(slot)
        self._messages[slot] = message
        if self._ids is not None:
            self._ids[id(message)] = key
        self._slot_of[key] = slot
        text = text_of(message, names)
        self.bm25.add(slot, document_terms(message, text, names, self.stemmer))
        rows = self.rows
        rows.ts[slot] = float(message.ts)
        rows.key[slot] = key
        rows.author[slot] = self._author_code(message)
        rows.cause[slot] = bool(STATES_CAUSE.search(text.casefold()))
        rows.exchange[slot] = message.is_self or message.mentions_self
        rows.reply[slot] = message.is_reply
        rows.live[slot] = True
        self._widen(slot, key)
        if not message.is_reply:
            self._top_keys.insert(key)
        tid = self._join_thread(slot, key, message)
        if self._deferred:  # linked, and its thread counted again, by _relink
            if tid != NONE:
                self._touched.add(tid)
            return
        self._link(slot, key)
        if tid != NONE:
            self._restat(tid)

    def _widen(self, slot: int, key: int) -> None:
        """Count a message just added at ``slot`` into the remembered whole-channel window."""
        if self._whole is None:
            return
        count, oldest, newest = self._whole
        if not count:
            self._whole = (1, slot, slot)
            return
        keys = self.rows.key
        self._whole = (
            count + 1,
            slot if key < int(keys[oldest]) else oldest,
            slot if key > int(keys[newest]) else newest,
        )

    def _replace(self, slot: int, old: Message, new: Message) -> None:
        # Same document, same thread: only the thread counters (or reactions) changed.
        self._messages[slot] = new
        if self._ids is not None:
            self._ids.pop(id(old), None)
            self._ids[id(new)] = ts_key(new.ts)
        if not new.is_reply:
            key = ts_key(new.ts)
            tid = self._tid_of.get(key)
            if tid is None and has_thread(new):
                tid = self._thread(key, create=True)
            if tid is not None:
                self.rows.tid[slot] = tid
                self._set_root(tid, slot)
                self._restat(tid)

    def _remove_key(self, key: int) -> None:
        slot = self._slot_of.get(key)
        if slot is not None:
            self._remove_slot(slot)

    def _remove_slot(self, slot: int) -> None:
        self._version += 1
        self._whole = None
        message = self.message(slot)
        key = ts_key(message.ts)
        self.bm25.remove(slot)
        if not message.is_reply:
            self._top_keys.remove(key)
        self._unlink(slot)
        self._leave_thread(slot, message)
        del self._slot_of[key]
        if self._ids is not None:
            self._ids.pop(id(message), None)
        self._messages[slot] = None
        self.rows.clear(slot)
        self._free.append(slot)

    def _author_code(self, message: Message) -> int:
        author = author_key(message)
        code = self._authors.get(author)
        if code is None:
            code = self._authors[author] = len(self._author_messages)
            self._author_messages.append(message)
        return code

    # conversations: a doubly linked list per stream, in ts order, whose newest message is its
    # tail: chat appends after it; an older one (a backfill, a search's older matches) finds
    # its place among the channel's sorted top-level keys, or walking back through its thread.

    def _tail(self, slot: int) -> int:
        return int(self.threads.tail[self.rows.tid[slot]]) if self.rows.reply[slot] else self._top

    def _set_tail(self, slot: int, tail: int) -> None:
        if self.rows.reply[slot]:
            self.threads.tail[self.rows.tid[slot]] = tail
        else:
            self._top = tail

    def _link(self, slot: int, key: int) -> None:
        rows = self.rows
        tail = self._tail(slot)
        if tail == NONE or rows.key[tail] < key:
            prev_slot, next_slot = tail, NONE
            self._set_tail(slot, slot)
        elif rows.reply[slot]:
            prev_slot, next_slot = tail, NONE
            while prev_slot != NONE and rows.key[prev_slot] > key:
                prev_slot, next_slot = int(rows.prev[prev_slot]), prev_slot
        else:
            below, above = self._top_keys.neighbours(key)
            prev_slot = self._slot_of[below] if below is not None else NONE
            next_slot = self._slot_of[above] if above is not None else NONE
        rows.prev[slot], rows.next[slot] = prev_slot, next_slot
        if prev_slot != NONE:
            rows.next[prev_slot] = slot
        if next_slot != NONE:
            rows.prev[next_slot] = slot

    def _unlink(self, slot: int) -> None:
        rows = self.rows
        prev_slot, next_slot = int(rows.prev[slot]), int(rows.next[slot])
        if prev_slot != NONE:
            rows.next[prev_slot] = next_slot
        if next_slot != NONE:
            rows.prev[next_slot] = prev_slot
        elif self._tail(slot) == slot:
            self._set_tail(slot, prev_slot)

    @contextmanager
    def _linking(self, keys: Iterable[int]) -> Iterator[None]:
        """Around adding the messages at ``keys``: many older ones linked in one pass."""
        newest = int(self.rows.key[self._top]) if self._top != NONE else -1
        older = sum(1 for key in keys if key < newest)
        self._deferred = older >= max(_BULK_LINK, len(self._slot_of) // _BULK_SHARE)
        try:
            yield
        finally:
            if self._deferred:
                self._deferred = False
                self._relink()

    def _relink(self) -> None:
        """What one :meth:`_link` a message would give, for every message at once."""
        self._top = link_streams(self.rows, self.threads, self.capacity)
        touched, self._touched = self._touched, set()
        for tid in touched:
            if self._tid_of.get(self._thread_keys[tid]) == tid:  # not freed meanwhile
                self._restat(tid)

    def _replies(self, tid: int) -> list[int]:
        """The slots of thread ``tid``'s indexed replies, oldest first."""
        out: list[int] = []
        slot = int(self.threads.tail[tid])
        while slot != NONE:
            out.append(slot)
            slot = int(self.rows.prev[slot])
        out.reverse()
        return out

    # threads

    def _thread(self, root_key: int, *, create: bool) -> int | None:
        tid = self._tid_of.get(root_key)
        if tid is not None or not create:
            return tid
        if self._free_tids:
            tid = self._free_tids.pop()
            self._thread_keys[tid] = root_key
        else:
            tid = len(self._thread_keys)
            self._thread_keys.append(root_key)
        self.threads.ensure(tid)
        self._tid_of[root_key] = tid
        root_slot = self._slot_of.get(root_key)
        if root_slot is not None and not self.message(root_slot).is_reply:
            self.rows.tid[root_slot] = tid
            self._set_root(tid, root_slot)
        return tid

    def _set_root(self, tid: int, root_slot: int) -> None:
        """Thread ``tid``'s root is now at ``root_slot`` (-1: not indexed); tell its replies."""
        self.threads.root[tid] = root_slot
        for reply in self._replies(tid):
            self.rows.root[reply] = root_slot

    def _join_thread(self, slot: int, key: int, message: Message) -> int:
        """Make ``slot`` a member of its thread (before it is linked); its thread id or -1."""
        if message.is_reply:
            tid = self._thread(ts_key(message.root_ts), create=True)
            assert tid is not None
            self.threads.known[tid] += 1
            self.rows.tid[slot] = tid
            self.rows.root[slot] = self.threads.root[tid]
            return tid
        found = self._thread(key, create=has_thread(message))
        if found is None:
            return NONE
        self.rows.tid[slot] = found
        self._set_root(found, slot)
        return found

    def _leave_thread(self, slot: int, message: Message) -> None:
        """``slot`` leaves its thread (after it was unlinked)."""
        tid = int(self.rows.tid[slot])
        if tid == NONE:
            return
        if message.is_reply:
            self.threads.known[tid] -= 1
        else:
            self._set_root(tid, NONE)
        if self.threads.root[tid] == NONE and not self.threads.known[tid]:
            del self._tid_of[self._thread_keys[tid]]
            self.threads.clear(tid)
            self._free_tids.append(tid)
        else:
            self._restat(tid)

    def _restat(self, tid: int) -> None:
        """Recompute a thread's reply count and last reply time (:meth:`thread_stats`'s rules)."""
        threads = self.threads
        root_slot = int(threads.root[tid])
        if root_slot == NONE:
            threads.count[tid], threads.last[tid] = 0.0, 0.0
            return
        root = self.message(root_slot)
        count = max(root.reply_count, int(threads.known[tid]))
        last = float(root.latest_reply) if root.latest_reply else 0.0
        if threads.tail[tid] != NONE:
            last = max(last, float(self.rows.ts[threads.tail[tid]]))
        threads.count[tid] = float(count)
        threads.last[tid] = last if count else 0.0
