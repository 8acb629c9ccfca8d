"""One channel's messages in ts order, each thread's known replies, and what they weigh in memory.

``ChannelHistory`` holds one of these per channel; every write goes through ``put`` / ``take``
so the byte count that the history's memory bound reads is always exact.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from dataclasses import dataclass, field

from chanctx.cache._message_updates import without_reply
from chanctx.cache._ts_keys import raw_ts_key
from chanctx.context import Message

__all__ = ["Channel", "insort_unique", "message_bytes"]

# What one stored message costs beyond its text, all-in: the message, its ts, the history's
# and the search index's share (bench/RESULTS.md "Memory per message and intake": about 1,000
# bytes of RSS per message at the default bounds, a ~120-byte text included). A file reference
# or a reaction adds a model of its own.
_MESSAGE_OVERHEAD = 900
_PART_OVERHEAD = 300


def message_bytes(msg: Message) -> int:
    """About how many bytes ``msg`` holds in memory: what the byte bound counts."""
    size = _MESSAGE_OVERHEAD + sys.getsizeof(msg.text)
    for ref in msg.files:
        size += _PART_OVERHEAD + sum(
            len(part or "") for part in (ref.filename, ref.title, ref.download_url)
        )
    for reaction in msg.reactions:
        size += _PART_OVERHEAD + 16 * len(reaction.users)
    return size + 16 * len(msg.reply_users)


def insort_unique(keys: list[int], key: int) -> bool:
    """Insert ``key`` into the sorted ``keys``; False if it was already there."""
    if not keys or key > keys[-1]:
        keys.append(key)
        return True
    index = bisect_left(keys, key)
    if keys[index] == key:
        return False
    keys.insert(index, key)
    return True


def _remove_sorted(keys: list[int], key: int) -> bool:
    index = bisect_left(keys, key)
    if index < len(keys) and keys[index] == key:
        del keys[index]
        return True
    return False


@dataclass(slots=True)
class Channel:
    """One channel's messages. ``keys[head:]`` is the sorted key list of ``messages``.

    Evicting the oldest only advances ``head`` (the dead prefix is cut off in bulk), so an
    in-order ``record`` at the bound is an append plus an O(1) eviction, not a list shift.
    """

    messages: dict[int, Message] = field(default_factory=dict)
    keys: list[int] = field(default_factory=list)
    head: int = 0
    # root key -> sorted keys of the known replies of that thread (the root may be unknown)
    threads: dict[int, list[int]] = field(default_factory=dict)
    bytes: int = 0  # message_bytes of everything in ``messages``: every write goes via put/take

    def put(self, key: int, msg: Message) -> None:
        old = self.messages.get(key)
        if old is not None:
            self.bytes -= message_bytes(old)
        self.messages[key] = msg
        self.bytes += message_bytes(msg)

    def take(self, key: int) -> Message:
        gone = self.messages.pop(key)
        self.bytes -= message_bytes(gone)
        return gone

    def insert_key(self, key: int) -> None:
        keys = self.keys
        if len(keys) == self.head or key > keys[-1]:
            keys.append(key)
        else:
            keys.insert(bisect_left(keys, key, self.head), key)

    def remove_key(self, key: int) -> None:
        index = bisect_left(self.keys, key, self.head)
        if index == self.head:
            self.head += 1
            self._compact()
        else:
            del self.keys[index]

    def pop_oldest(self) -> Message:
        key = self.keys[self.head]
        self.head += 1
        self._compact()
        gone = self.take(key)
        if gone.is_reply:
            self._unlink_reply(gone, key)
        return gone

    def known_replies(self, root_key: int) -> list[Message]:
        return [self.messages[k] for k in self.threads.get(root_key, ())]

    def _unlink_reply(self, reply: Message, key: int) -> list[int] | None:
        """Drop ``reply`` from its thread index; return its remaining siblings (None: not there)."""
        assert reply.thread_ts is not None
        root_key = raw_ts_key(reply.thread_ts)
        siblings = self.threads.get(root_key)
        if siblings is None or not _remove_sorted(siblings, key):
            return None
        if not siblings:
            del self.threads[root_key]
        return siblings

    def detach_reply(self, reply: Message, key: int) -> None:
        """``reply`` was deleted (or moved): update its root's thread metadata."""
        siblings = self._unlink_reply(reply, key)
        if siblings is None:
            return
        assert reply.thread_ts is not None
        root_key = raw_ts_key(reply.thread_ts)
        root = self.messages.get(root_key)
        if root is None or root.is_reply:
            return
        remaining = [self.messages[k] for k in siblings]
        updated = without_reply(root, reply, remaining)
        if updated.deleted and updated.reply_count == 0 and not remaining:
            self.take(root_key)  # a tombstone with no thread left: Slack drops it too
            self.remove_key(root_key)
        else:
            self.put(root_key, updated)

    def _compact(self) -> None:
        if self.head == len(self.keys):
            self.keys.clear()
            self.head = 0
        elif self.head >= 1024 and self.head * 2 >= len(self.keys):
            del self.keys[: self.head]
            self.head = 0
