"""The search index's storage: per-message and per-thread numpy columns indexed by slot, and the
sorted ts keys of a stream.

Columns grow by a quarter (not doubled) and keep one sentinel cell, so a gather through slot -1
("none") reads a harmless value instead of needing a mask.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "NONE",
    "Bools",
    "Floats",
    "Ints",
    "Ints32",
    "KeyBlocks",
    "Rows",
    "Scratch",
    "SortedKeys",
    "Threads",
    "link_streams",
    "live_window",
]

NONE = -1  # no slot, no thread, no author: what a free cell and the sentinel hold
_NO_KEY = np.iinfo(np.int64).max  # what a free slot weighs when the oldest key is sought

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Ints32 = npt.NDArray[np.int32]
Bools = npt.NDArray[np.bool_]


class SortedKeys:
    """Ascending ints (ts keys) with a cheap removal of the oldest.

    Chat appends at the end and evicts from the front; deleting the front of a 100,000-item
    list would move every item, so the front only advances ``head`` and the dead prefix is cut
    off in bulk (as ``cache.ChannelHistory`` does).
    """

    __slots__ = ("_head", "_keys")

    def __init__(self) -> None:
        self._keys: list[int] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._keys) - self._head

    def __getitem__(self, position: int) -> int:
        return self._keys[self._head + position if position >= 0 else position]

    def bisect(self, value: float, key: Callable[[int], float] | None = None) -> int:
        """The position of the first item >= ``value`` (compared through ``key`` if given)."""
        return bisect_left(self._keys, value, self._head, key=key) - self._head

    def insert(self, item: int) -> int:
        """Insert ``item`` unless present; returns its position."""
        keys = self._keys
        if len(keys) == self._head or item > keys[-1]:
            keys.append(item)
            return len(keys) - 1 - self._head
        position = bisect_left(keys, item, self._head)
        if keys[position] != item:
            keys.insert(position, item)
        return position - self._head

    def remove(self, item: int) -> bool:
        """Remove ``item``; False if it was not there."""
        position = bisect_left(self._keys, item, self._head)
        if position == len(self._keys) or self._keys[position] != item:
            return False
        if position == self._head:
            self._head += 1
            self._compact()
        else:
            del self._keys[position]
        return True

    def pop_oldest(self, count: int) -> list[int]:
        """Remove and return the ``count`` smallest items."""
        gone = self._keys[self._head : self._head + count]
        self._head += len(gone)
        self._compact()
        return gone

    def _compact(self) -> None:
        if self._head == len(self._keys):
            self._keys.clear()
            self._head = 0
        elif self._head >= 1024 and 2 * self._head >= len(self._keys):
            del self._keys[: self._head]
            self._head = 0


class KeyBlocks:
    """Ascending unique ints (ts keys) in blocks of a few hundred, for the neighbours of a key.

    An index links a message older than the channel's newest among the channel's other
    top-level messages: its neighbours are the keys just below and above its own. In one list
    of 260,000 keys, inserting an old key moves every item after it (2 MB, 0.1-0.3 ms a
    message); here it moves at most a block's, and the blocks' first keys are bisected first.
    """

    __slots__ = ("_blocks", "_count", "_firsts")

    _SIZE = 512  # a block is split in two when it passes twice this

    def __init__(self) -> None:
        self._blocks: list[list[int]] = []
        self._firsts: list[int] = []  # each block's smallest item
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def _block(self, item: int) -> int:
        """The block that holds ``item``, or would."""
        return max(bisect_right(self._firsts, item) - 1, 0)

    def insert(self, item: int) -> None:
        """Insert ``item`` unless present."""
        if not self._blocks:
            self._blocks.append([item])
            self._firsts.append(item)
            self._count = 1
            return
        at = self._block(item)
        block = self._blocks[at]
        position = bisect_left(block, item)
        if position < len(block) and block[position] == item:
            return
        block.insert(position, item)
        self._firsts[at] = block[0]
        self._count += 1
        if len(block) > 2 * self._SIZE:
            upper = block[self._SIZE :]
            del block[self._SIZE :]
            self._blocks.insert(at + 1, upper)
            self._firsts.insert(at + 1, upper[0])

    def remove(self, item: int) -> bool:
        """Remove ``item``; False if it was not there."""
        if not self._blocks:
            return False
        at = self._block(item)
        block = self._blocks[at]
        position = bisect_left(block, item)
        if position == len(block) or block[position] != item:
            return False
        del block[position]
        self._count -= 1
        if block:
            self._firsts[at] = block[0]
        else:
            del self._blocks[at], self._firsts[at]
        return True

    def neighbours(self, item: int) -> tuple[int | None, int | None]:
        """The largest item below ``item`` and the smallest above it (None: there is none)."""
        if not self._blocks:
            return None, None
        blocks = self._blocks
        at = self._block(item)
        block = blocks[at]
        position = bisect_left(block, item)
        if position:
            below: int | None = block[position - 1]
        else:
            below = blocks[at - 1][-1] if at else None
        if position < len(block) and block[position] == item:
            position += 1
        if position < len(block):
            above: int | None = block[position]
        else:
            above = blocks[at + 1][0] if at + 1 < len(blocks) else None
        return below, above


def _grown(column: npt.NDArray[Any], used: int, size: int, fill: object) -> npt.NDArray[Any]:
    """``column``'s first ``used`` cells in a new column of ``size`` cells, the rest ``fill``."""
    out = np.full(size, fill, dtype=column.dtype)
    out[:used] = column[:used]
    return out


class Rows:
    """Per-slot columns (numpy, grown by doubling). Free slots hold the fill values.

    Each column has one extra cell at the end, the sentinel: what slot -1 ("none") reads in a
    gather, with no links (-1), no thread and ``ts`` = +inf (infinitely far from any message).
    """

    def __init__(self, capacity: int = 64) -> None:
        size = capacity + 1
        self.ts: Floats = np.zeros(size, dtype=np.float64)  # seconds since the epoch
        self.key: Ints = np.zeros(size, dtype=np.int64)  # cache.ts_key: exact order
        self.tid: Ints32 = np.full(size, NONE, dtype=np.int32)  # thread id, or -1
        self.root: Ints32 = np.full(size, NONE, dtype=np.int32)  # a reply's root's slot
        self.author: Ints32 = np.full(size, NONE, dtype=np.int32)  # author code
        self.cause: Bools = np.zeros(size, dtype=np.bool_)  # states a cause
        # the bot's own message, or a question to it (a mention): ranked after people's
        self.exchange: Bools = np.zeros(size, dtype=np.bool_)
        self.reply: Bools = np.zeros(size, dtype=np.bool_)  # a thread reply (else top-level)
        self.prev: Ints32 = np.full(size, NONE, dtype=np.int32)  # in its conversation
        self.next: Ints32 = np.full(size, NONE, dtype=np.int32)
        self.live: Bools = np.zeros(size, dtype=np.bool_)
        self.ts[-1] = np.inf

    @property
    def capacity(self) -> int:
        return len(self.ts) - 1

    def ensure(self, slot: int) -> None:
        if slot < self.capacity:
            return
        # Grown by a quarter, not doubled: a full channel would otherwise carry up to a spare
        # column of everything (a million messages: tens of MB).
        size = max(slot + 1, self.capacity + self.capacity // 4 + 16) + 1
        used = self.capacity
        self.ts, self.key = _grown(self.ts, used, size, 0), _grown(self.key, used, size, 0)
        self.tid = _grown(self.tid, used, size, NONE)
        self.root = _grown(self.root, used, size, NONE)
        self.author = _grown(self.author, used, size, NONE)
        self.cause = _grown(self.cause, used, size, False)
        self.exchange = _grown(self.exchange, used, size, False)
        self.reply = _grown(self.reply, used, size, False)
        self.prev = _grown(self.prev, used, size, NONE)
        self.next = _grown(self.next, used, size, NONE)
        self.live = _grown(self.live, used, size, False)
        self.ts[-1] = np.inf

    def clear(self, slot: int) -> None:
        self.ts[slot], self.key[slot], self.cause[slot] = 0, 0, False
        self.exchange[slot] = self.reply[slot] = False
        self.tid[slot] = self.author[slot] = self.prev[slot] = self.next[slot] = NONE
        self.root[slot] = NONE
        self.live[slot] = False


class Scratch:
    """Work arrays one index's searches reuse, handed out zeroed (the caller holds the index's
    lock). An array of a few MB made afresh each search is mapped anew by the allocator, and
    every page of it faults on its first write: at 260,000 slots that cost more than the
    search's arithmetic on it. One kept and cleared costs only the clearing."""

    def __init__(self) -> None:
        self._floats: list[Floats] = []
        self._bools = np.zeros(0, dtype=np.bool_)

    def floats(self, which: int, size: int) -> Floats:
        """Work array number ``which``, ``size`` zeros (valid until it is asked for again)."""
        while len(self._floats) <= which:
            self._floats.append(np.zeros(0, dtype=np.float64))
        found = self._floats[which]
        if len(found) != size:
            found = self._floats[which] = np.zeros(size, dtype=np.float64)
        else:
            found.fill(0.0)
        return found

    def bools(self, size: int) -> Bools:
        """The flag array, ``size`` False (valid until it is asked for again)."""
        if len(self._bools) != size:
            self._bools = np.zeros(size, dtype=np.bool_)
        else:
            self._bools.fill(False)
        return self._bools


def live_window(
    rows: Rows, live_count: int, since: float | None, hidden: Sequence[int]
) -> tuple[int, int, int]:
    """(count, oldest slot, newest slot) of the live slots with ts >= ``since``, ``hidden``
    slots left out; (0, -1, -1) when there are none. ``live_count``: how many slots are live."""
    capacity = rows.capacity
    if since is None and not hidden:
        # The whole channel: no mask built, no slots listed (ts keys are unique among live
        # slots, so each extreme is one slot).
        if not live_count:
            return 0, -1, -1
        keys, live = rows.key[:capacity], rows.live[:capacity]
        oldest = np.where(live, keys, _NO_KEY).argmin()
        return live_count, int(oldest), int(np.where(live, keys, -1).argmax())
    mask = rows.live[:capacity].copy()
    if since is not None:
        mask &= rows.ts[:capacity] >= since
    if hidden:
        mask[list(hidden)] = False
    chosen = np.flatnonzero(mask)
    if not len(chosen):
        return 0, -1, -1
    keys = rows.key[chosen]
    return len(chosen), int(chosen[np.argmin(keys)]), int(chosen[np.argmax(keys)])


class Threads:
    """Per-thread columns: the root's slot (or -1), reply count and last reply (0: none), the
    newest indexed reply's slot (-1: none) and how many replies are indexed."""

    def __init__(self, capacity: int = 64) -> None:
        self.root: Ints32 = np.full(capacity, NONE, dtype=np.int32)
        self.count: Floats = np.zeros(capacity, dtype=np.float64)
        self.last: Floats = np.zeros(capacity, dtype=np.float64)
        self.tail: Ints32 = np.full(capacity, NONE, dtype=np.int32)
        self.known: Ints32 = np.zeros(capacity, dtype=np.int32)

    def ensure(self, tid: int) -> None:
        if tid < len(self.root):
            return
        used = len(self.root)
        size = max(tid + 1, used + used // 4 + 16)
        self.root = _grown(self.root, used, size, NONE)
        self.count = _grown(self.count, used, size, 0.0)
        self.last = _grown(self.last, used, size, 0.0)
        self.tail = _grown(self.tail, used, size, NONE)
        self.known = _grown(self.known, used, size, 0)

    def clear(self, tid: int) -> None:
        self.root[tid], self.count[tid], self.last[tid] = NONE, 0.0, 0.0
        self.tail[tid], self.known[tid] = NONE, 0


def link_streams(rows: Rows, threads: Threads, capacity: int) -> int:
    """Link every live message to its neighbours in its stream (the channel's top-level
    messages; each thread's replies) in key order, set each thread's tail and point each
    reply at its root's slot; returns the channel stream's tail (NONE when it is empty).
    One sort, instead of a pass over the whole index for each message linked out of order."""
    live = np.flatnonzero(rows.live[:capacity])
    stream = np.where(rows.reply[live], rows.tid[live].astype(np.int64), -1)
    order = np.lexsort((rows.key[live], stream))
    slots, stream = live[order].astype(np.int32), stream[order]
    same = stream[1:] == stream[:-1]  # a slot and the next one share a stream
    prev = np.full(len(slots), NONE, dtype=np.int32)
    after = np.full(len(slots), NONE, dtype=np.int32)
    prev[1:][same] = slots[:-1][same]
    after[:-1][same] = slots[1:][same]
    rows.prev[slots], rows.next[slots] = prev, after
    last = np.ones(len(slots), dtype=np.bool_)
    last[:-1] = ~same
    tails, tail_streams = slots[last], stream[last]
    threads.tail[:] = NONE
    in_thread = tail_streams >= 0
    threads.tail[tail_streams[in_thread]] = tails[in_thread]
    replies = slots[stream >= 0]
    rows.root[replies] = threads.root[rows.tid[replies]]
    top = tails[~in_thread]
    return int(top[0]) if len(top) else NONE
