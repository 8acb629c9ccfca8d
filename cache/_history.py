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

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence
from itertools import islice

from chanctx.cache._channel import Channel, insort_unique
from chanctx.cache._message_updates import edited, merge_root, tombstone, with_new_reply
from chanctx.cache._ts_keys import raw_ts_key, ts_key
from chanctx.context import FileRef, Message, Reaction

__all__ = ["ChannelHistory", "check_positive_int"]


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


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
        self._channels: OrderedDict[str, Channel] = OrderedDict()
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
            is_new = insort_unique(siblings, key)
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

    def _channel(self, channel: str, *, create: bool = False) -> Channel | None:
        ch = self._channels.get(channel)
        if ch is not None:
            self._channels.move_to_end(channel)
            return ch
        if not create:
            return None
        ch = self._channels[channel] = Channel()
        while len(self._channels) > self._max_channels:
            self._bytes -= self._channels.popitem(last=False)[1].bytes
        return ch

    def _grew(self, ch: Channel, before: int, *, keep: int) -> None:
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

    def _recorded(self, channel: str, ch: Channel, keys: Sequence[int]) -> None:
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

    def _lookup(self, channel: str, ts: str) -> tuple[Channel | None, int, Message | None]:
        key = ts_key(ts)
        ch = self._channel(channel)
        if ch is None:
            return None, key, None
        return ch, key, ch.messages.get(key)
