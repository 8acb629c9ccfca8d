"""ChannelHistory: every message seen in a channel, kept current from the event stream.

Write-through is what makes a mention in an active channel cost zero Slack API calls: the
snapshot builder reads the recent timeline and the thread from here instead of calling
``conversations.history`` / ``conversations.replies``.

Ordering: messages are ordered by :func:`ts_key`, an exact integer form of the Slack ts
(``"999.1"`` sorts before ``"1000.0"``; no float rounding). Two ts strings that denote the same
instant (``"1.5"`` and ``"1.500000"``) are the same message.

Thread bookkeeping (``reply_count``, ``latest_reply``, ``reply_users`` on a root) follows one rule:
a root's metadata is the platform's snapshot, advanced by the replies seen since. A reply newer
than the root's ``latest_reply`` is new since that snapshot and adds one; an older one was
already counted, so it only raises the count to the number of replies known. That keeps the
count right both for live events and for a backfill of replies the snapshot already counted.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from chanctx.context import FileRef, Message, Reaction
from chanctx.context.timestamps import validate_ts

__all__ = ["ChannelHistory", "ts_key"]

_SCALE = 10**9  # a Slack ts has at most 9 fractional digits (validate_ts)
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


def ts_key(ts: str) -> int:
    """The exact sort key of a Slack ts: nanoseconds as an int. InvalidTimestamp if malformed."""
    return raw_ts_key(validate_ts(ts))


def raw_ts_key(ts: str) -> int:
    # For ts already validated (every Message field is): skip the regex.
    whole, _, frac = ts.partition(".")
    return int(whole) * _SCALE + int(frac.ljust(9, "0"))


def _latest(replies: Iterable[Message]) -> str | None:
    best: str | None = None
    best_key = -1
    for reply in replies:
        key = raw_ts_key(reply.ts)
        if key > best_key:
            best, best_key = reply.ts, key
    return best


def _ordered_users(replies: Iterable[Message]) -> list[str]:
    users: list[str] = []
    for reply in replies:
        if reply.user_id and reply.user_id not in users:
            users.append(reply.user_id)
    return users


def _meta_rank(msg: Message) -> tuple[int, int]:
    latest = -1 if msg.latest_reply is None else raw_ts_key(msg.latest_reply)
    return latest, msg.reply_count


def with_new_reply(root: Message, reply: Message, known: int) -> Message:
    """``root`` after a new ``reply`` arrived; ``known`` counts the known replies, it included."""
    latest = root.latest_reply
    if latest is None or raw_ts_key(reply.ts) > raw_ts_key(latest):
        count = max(root.reply_count + 1, known)
        latest = reply.ts
    else:  # older than the snapshot's latest reply: the platform already counted it
        count = max(root.reply_count, known)
    users = root.reply_users
    if reply.user_id and reply.user_id not in users:
        users = (*users, reply.user_id)
    return root.model_copy(
        update={
            "reply_count": count,
            "latest_reply": latest,
            "reply_users": users,
            "thread_ts": root.ts,
        }
    )


def merge_root(new: Message, old: Message | None, known: Sequence[Message]) -> Message:
    """A root (re)recorded: the fresher thread metadata of ``new``/``old``, plus ``known`` replies.

    An event copy of a root usually carries no thread metadata, so it must not wipe the count we
    kept current; a platform snapshot with a newer ``latest_reply`` wins over ours.
    """
    if old is None and not known:
        return new
    base = new
    if old is not None and not old.is_reply and _meta_rank(old) > _meta_rank(new):
        base = old
    count = max(base.reply_count, len(known))
    latest = base.latest_reply
    users = list(base.reply_users)
    for reply in known:
        if latest is None or raw_ts_key(reply.ts) > raw_ts_key(latest):
            latest = reply.ts
        if reply.user_id and reply.user_id not in users:
            users.append(reply.user_id)
    meta = (count, latest, tuple(users))
    if meta == (new.reply_count, new.latest_reply, new.reply_users):
        return new
    update: dict[str, Any] = {"reply_count": count, "latest_reply": latest, "reply_users": meta[2]}
    if count and new.thread_ts is None:
        update["thread_ts"] = new.ts
    return new.model_copy(update=update)


def without_reply(root: Message, gone: Message, remaining: Sequence[Message]) -> Message:
    """``root`` after its reply ``gone`` was deleted; ``remaining`` are the replies still known."""
    count = max(root.reply_count - 1, len(remaining))
    latest = root.latest_reply
    users = root.reply_users
    if count == len(remaining):  # every reply is known: recompute exactly
        latest = _latest(remaining)
        present = _ordered_users(remaining)
        users = tuple(u for u in root.reply_users if u in present) + tuple(
            u for u in present if u not in root.reply_users
        )
    elif latest is not None and raw_ts_key(latest) == raw_ts_key(gone.ts) and remaining:
        latest = _latest(remaining)  # best known; some replies were never seen
    return root.model_copy(
        update={"reply_count": count, "latest_reply": latest, "reply_users": users}
    )


def tombstone(root: Message) -> Message:
    """What Slack shows for a deleted root whose thread lives on."""
    return root.model_copy(update={"deleted": True, "text": "", "files": (), "reactions": ()})


def edited(
    msg: Message, text: str, edited_ts: str | None, files: Sequence[FileRef] | None
) -> Message:
    update: dict[str, Any] = {"text": text}
    if edited_ts is not None:
        update["edited_ts"] = validate_ts(edited_ts)
    if files is not None:
        update["files"] = tuple(files)
    return msg.model_copy(update=update)


def _insort_unique(keys: list[int], key: int) -> bool:
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


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


@dataclass(slots=True)
class _Channel:
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


class ChannelHistory:
    """Write-through per-channel store of every message seen: top-level messages and replies.

    Bounded three ways: at most ``max_messages_per_channel`` per channel (the oldest by ts is
    evicted; eviction is not deletion, so it leaves the root's ``reply_count`` alone), at most
    ``max_channels`` channels (the least recently used goes; every call naming a channel uses
    it), and at most ``max_bytes`` in all (:func:`message_bytes`; the oldest messages of the
    least recently used channel go first, so a few huge messages cannot hold the memory of a
    whole workspace). The message just written is never evicted by the byte bound.
    Not thread-safe: feed it from one event loop or behind a lock.
    """

    def __init__(
        self,
        *,
        max_messages_per_channel: int = 5000,
        max_channels: int = 200,
        max_bytes: int = 1024 * 2**20,
    ) -> None:
        self._max_messages = check_positive_int(
            "max_messages_per_channel", max_messages_per_channel
        )
        self._max_channels = check_positive_int("max_channels", max_channels)
        self._max_bytes = check_positive_int("max_bytes", max_bytes)
        self._channels: OrderedDict[str, _Channel] = OrderedDict()
        self._bytes = 0

    @property
    def max_messages_per_channel(self) -> int:
        return self._max_messages

    @property
    def max_channels(self) -> int:
        return self._max_channels

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def bytes(self) -> int:
        """What every stored message holds, by :func:`message_bytes`."""
        return self._bytes

    # -- writes -----------------------------------------------------------------------------

    def record(self, msg: Message) -> None:
        """Insert ``msg``, or replace the stored message with the same (channel, ts). Idempotent."""
        ch = self._channel(msg.channel, create=True)
        assert ch is not None
        before = ch.bytes
        key = raw_ts_key(msg.ts)
        old = ch.messages.get(key)
        touched = [key]
        if old is None:
            ch.insert_key(key)
        elif old.is_reply and (
            not msg.is_reply or raw_ts_key(old.root_ts) != raw_ts_key(msg.root_ts)
        ):
            ch.detach_reply(old, key)  # it moved (a correction): leave its old thread
            touched.append(raw_ts_key(old.root_ts))
        if msg.is_reply:
            assert msg.thread_ts is not None
            root_key = raw_ts_key(msg.thread_ts)
            touched.append(root_key)
            siblings = ch.threads.setdefault(root_key, [])
            is_new = _insort_unique(siblings, key)
            root = ch.messages.get(root_key)
            if root is not None and msg.thread_ts is not root.ts and msg.thread_ts == root.ts:
                # One string for a thread's ts, held by its root and all its replies, instead
                # of the copy each reply's event brought: equal values, so the frozen message
                # is still the same value.
                object.__setattr__(msg, "thread_ts", root.ts)
            ch.put(key, msg)
            if is_new and root is not None and not root.is_reply:
                ch.put(root_key, with_new_reply(root, msg, len(siblings)))
        else:
            ch.put(key, merge_root(msg, old, ch.known_replies(key)))
        while len(ch.messages) > self._max_messages:
            self._dropped(msg.channel, ch.keys[ch.head])
            ch.pop_oldest()
        self._grew(ch, before, keep=key)
        self._recorded(msg.channel, ch, touched)

    def apply_edit(
        self,
        channel: str,
        ts: str,
        *,
        text: str,
        edited_ts: str | None = None,
        files: tuple[FileRef, ...] | None = None,
    ) -> Message | None:
        """Apply an edit; return the updated message, or None if the message is unknown.

        ``files=None`` keeps the files. An edit of a tombstone is ignored (returns the tombstone):
        a late ``message_changed`` must not bring deleted text back.
        """
        ch, key, msg = self._lookup(channel, ts)
        if ch is None or msg is None:
            return None
        if msg.deleted:
            return msg
        updated = edited(msg, text, edited_ts, files)
        before = ch.bytes
        ch.put(key, updated)
        self._grew(ch, before, keep=key)
        return updated

    def delete(self, channel: str, ts: str) -> Message | None:
        """Delete a message; return it as it was before deletion, or None if unknown/already gone.

        A reply is removed and its root's thread metadata updated. A root that still has replies
        becomes a tombstone (``deleted=True``, no text, files or reactions) so its thread stays
        reachable; it disappears once its last reply is deleted. Other messages are removed.
        """
        ch, key, msg = self._lookup(channel, ts)
        if ch is None or msg is None or msg.deleted:
            return None
        before = ch.bytes
        if msg.is_reply:
            ch.take(key)
            ch.remove_key(key)
            ch.detach_reply(msg, key)
        elif msg.reply_count > 0 or key in ch.threads:
            ch.put(key, tombstone(msg))
        else:
            ch.take(key)
            ch.remove_key(key)
        self._bytes += ch.bytes - before
        return msg

    def add_reaction(self, channel: str, ts: str, name: str, user: str) -> Message | None:
        """Count ``user``'s ``name`` reaction once; return the message (None if unknown)."""
        ch, key, msg = self._lookup(channel, ts)
        if ch is None or msg is None:
            return None
        if msg.deleted:
            return msg
        reactions = list(msg.reactions)
        for index, reaction in enumerate(reactions):
            if reaction.name == name:
                if user in reaction.users:
                    return msg
                reactions[index] = reaction.model_copy(
                    update={"count": reaction.count + 1, "users": (*reaction.users, user)}
                )
                break
        else:
            reactions.append(Reaction(name=name, count=1, users=(user,)))
        updated = msg.model_copy(update={"reactions": tuple(reactions)})
        before = ch.bytes
        ch.put(key, updated)
        self._grew(ch, before, keep=key)
        return updated

    def remove_reaction(self, channel: str, ts: str, name: str, user: str) -> Message | None:
        """Undo ``user``'s ``name`` reaction; a count of 0 drops it. Returns the message or None.

        The platform may list fewer users than ``count``; a user not listed then still takes
        one off, since they may be among the unlisted ones.
        """
        ch, key, msg = self._lookup(channel, ts)
        if ch is None or msg is None:
            return None
        reactions = list(msg.reactions)
        for index, reaction in enumerate(reactions):
            if reaction.name != name:
                continue
            if user in reaction.users:
                users = tuple(u for u in reaction.users if u != user)
            elif reaction.count > len(reaction.users):
                users = reaction.users
            else:
                return msg
            if reaction.count <= 1:
                del reactions[index]
            else:
                reactions[index] = reaction.model_copy(
                    update={"count": reaction.count - 1, "users": users}
                )
            updated = msg.model_copy(update={"reactions": tuple(reactions)})
            before = ch.bytes
            ch.put(key, updated)
            self._bytes += ch.bytes - before
            return updated
        return msg

    # -- reads ------------------------------------------------------------------------------

    def get(self, channel: str, ts: str) -> Message | None:
        """The stored message (tombstones included), or None."""
        return self._lookup(channel, ts)[2]

    def timeline(self, channel: str, *, limit: int | None = None) -> list[Message]:
        """Messages visible in the channel, oldest to newest; no tombstones.

        Visible means top-level or a broadcast reply. ``limit`` keeps only the newest ``limit``.
        """
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
        ch = self._channel(channel)
        if ch is None:
            return []
        messages = ch.messages
        if limit is None:
            return [
                m
                for m in (messages[k] for k in islice(ch.keys, ch.head, None))
                if m.in_channel and not m.deleted
            ]
        out: list[Message] = []
        index = len(ch.keys) - 1
        while index >= ch.head and len(out) < limit:
            m = messages[ch.keys[index]]
            if m.in_channel and not m.deleted:
                out.append(m)
            index -= 1
        out.reverse()
        return out

    def messages(self, channel: str) -> list[Message]:
        """Every message of the channel, top-level and replies, oldest to newest; no tombstones.

        What a search over the channel scans.
        """
        ch = self._channel(channel)
        if ch is None:
            return []
        found = (ch.messages[k] for k in islice(ch.keys, ch.head, None))
        return [m for m in found if not m.deleted]

    def replies(self, channel: str, thread_ts: str) -> list[Message]:
        """The known replies of a thread (not the root), oldest to newest."""
        ch = self._channel(channel)
        if ch is None:
            return []
        return ch.known_replies(ts_key(thread_ts))

    def channels(self) -> list[str]:
        """Channels held, least recently used first."""
        return list(self._channels)

    def count(self, channel: str) -> int:
        """Messages stored for ``channel``, replies and tombstones included."""
        ch = self._channel(channel)
        return 0 if ch is None else len(ch.messages)

    def __contains__(self, item: object) -> bool:
        if not (isinstance(item, tuple) and len(item) == 2):
            return False
        channel, ts = item
        if not isinstance(channel, str) or not isinstance(ts, str):
            return False
        try:
            return self.get(channel, ts) is not None
        except ValueError:
            return False

    # -- internals --------------------------------------------------------------------------

    def _channel(self, channel: str, *, create: bool = False) -> _Channel | None:
        ch = self._channels.get(channel)
        if ch is not None:
            self._channels.move_to_end(channel)
            return ch
        if not create:
            return None
        ch = self._channels[channel] = _Channel()
        while len(self._channels) > self._max_channels:
            self._bytes -= self._channels.popitem(last=False)[1].bytes
        return ch

    def _grew(self, ch: _Channel, before: int, *, keep: int) -> None:
        """Count a write to ``ch`` (the most recently used channel); then, over the byte
        bound, evict the oldest messages of the least recently used channels (``ch`` last,
        and never its message ``keep``)."""
        self._bytes += ch.bytes - before
        touched: list[str] = []
        while self._bytes > self._max_bytes:
            name, oldest = next(iter(self._channels.items()))
            if oldest is ch and len(ch.messages) <= 1:
                break  # only what was just written is left: it stays, over the bound or not
            if oldest.messages:
                size = oldest.bytes
                self._dropped(name, oldest.keys[oldest.head])
                oldest.pop_oldest()
                self._bytes -= size - oldest.bytes
            if name not in touched:
                touched.append(name)
            if not oldest.messages:  # emptied (or already empty after deletes): let it go
                del self._channels[name]
        for name in touched:
            if self._channels.get(name) is not ch:
                self._evicted(name)

    def _evicted(self, channel: str) -> None:
        """Messages of ``channel`` (not the one being written) were evicted by the byte bound,
        or the whole channel was. A hook for subclasses that mirror the history."""

    def _recorded(self, channel: str, ch: _Channel, keys: Sequence[int]) -> None:
        """``record`` wrote the messages at ``keys`` of ``channel`` (the message, and the roots
        whose thread it joined or left; ``keys[0]`` is the history's own key object for a new
        message). A hook for subclasses that mirror the history."""

    def _dropped(self, channel: str, key: int) -> None:
        """A bound is about to evict the message at ``key`` of ``channel`` (the oldest). A hook
        for subclasses that mirror the history."""

    def _stored_key(self, channel: str, ts: str) -> int | None:
        """The int key the history holds for ``ts`` (that very object, so that a structure
        mirroring the history can share it instead of holding an equal int of its own)."""
        ch = self._channels.get(channel)
        if ch is None:
            return None
        key = ts_key(ts)
        index = bisect_left(ch.keys, key, ch.head)
        return ch.keys[index] if index < len(ch.keys) and ch.keys[index] == key else None

    def _lookup(self, channel: str, ts: str) -> tuple[_Channel | None, int, Message | None]:
        key = ts_key(ts)
        ch = self._channel(channel)
        if ch is None:
            return None, key, None
        return ch, key, ch.messages.get(key)
