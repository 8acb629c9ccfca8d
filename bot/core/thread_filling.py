"""The engine's thread half: filling the caches from Slack (or the store) when they cannot
know, and taking what comes back.

Pattern: decide under the lock, call Slack without it, adopt the answer under it again, so a
rate-limit wait in one answer never blocks intake of other events. A mixin of
``ContextEngine``, which owns the fields named below.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from cachetools import TTLCache
from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.channel_record import ChannelRecord
from chanctx.bot.core.slack_source import Learned, SlackSource
from chanctx.bot.core.wait_budget import spend_wait, wait_left
from chanctx.cache import ChannelHistory, RateLimited, ThreadReplyCache, ThreadStarterCache, ts_key
from chanctx.context import ChanctxError, Message

__all__ = ["ThreadFilling"]

_FAR_FUTURE = "9999999999.999999"  # "up to now" when no question bounds a thread fetch


class ThreadFilling:
    """Thread fetching and adoption for ``ContextEngine`` (its fields, declared here for the
    type checker)."""

    settings: ContextSettings
    history: ChannelHistory
    slack: SlackSource | None
    threads: ThreadReplyCache | None
    clock: Callable[[], float]
    starters: ThreadStarterCache | None
    learned: Learned | None
    record: ChannelRecord | None
    _lock: threading.RLock
    _deleted: TTLCache[tuple[str, str], bool]
    _partial: TTLCache[tuple[str, str], tuple[str | None, str | None]]
    _fetched: TTLCache[tuple[str, str], float]

    def _adopt(self, messages: Sequence[Message]) -> None:
        """Record fetched messages the event stream has not already given us fresher."""
        with self._lock:
            for message in messages:
                known = self.history.get(message.channel, message.ts) is not None
                if not known and (message.channel, message.ts) not in self._deleted:
                    self.history.record(message)
                    self._remember_root(message)

    def _remember_root(self, message: Message) -> None:
        """Keep a thread root (caller holds the lock); other messages are not roots."""
        if self.starters is not None and not message.is_reply and message.reply_count:
            self.starters.put(message)

    def _thread_replies(self, channel: str, root_ts: str) -> list[Message]:
        """A thread's replies, oldest first: history's, plus those only the thread cache still
        holds (history is bounded per channel; a long thread outlives its oldest replies there).
        Caller holds the lock."""
        known = self.history.replies(channel, root_ts)
        cached = self.threads.peek(channel, root_ts) if self.threads is not None else None
        if cached is None or len(cached.replies) <= len(known):
            return known
        merged = {m.ts: m for m in cached.replies} | {m.ts: m for m in known}
        return sorted(merged.values(), key=lambda m: ts_key(m.ts))

    def _root(self, channel: str, root_ts: str) -> Message | None:
        """A thread's root from history, else from the starter cache (caller holds the lock)."""
        found = self.history.get(channel, root_ts)
        if found is None and self.starters is not None:
            found = self.starters.peek(channel, root_ts)
        return found

    def _thread_is_complete(self, channel: str, root_ts: str) -> bool:
        with self._lock:
            root = self._root(channel, root_ts)
            if root is not None and root.reply_count <= len(self.history.replies(channel, root_ts)):
                return True
            # Fetched within the TTL: events have kept it current since.
            return self.threads is not None and self.threads.peek(channel, root_ts) is not None

    def _complete_thread(
        self, channel: str, root_ts: str, notes: list[str], *, until: str | None = None
    ) -> float:
        """Fetch a thread if the caches do not hold all of it, newest replies first (those up
        to ``until``, the question, matter most); the rate-limit seconds waited."""
        if self.slack is None or self.threads is None or self._thread_is_complete(channel, root_ts):
            return 0.0
        if self.record is not None and self._thread_from_store(channel, root_ts):
            return 0.0
        key = (channel, root_ts)
        with self._lock:
            root = self._root(channel, root_ts)
            known = self.history.replies(channel, root_ts)
            # What earlier turns read: the newer part and the oldest part of the thread.
            resume, read_up_to = self._partial.get(key, (None, None))
        # Replies seen live are the newest (history after a start holds top-level messages
        # and what events brought): the ones to fetch are older than the oldest of them.
        end = resume or (known[0].ts if known else None) or until or _FAR_FUTURE
        try:
            fetched = self.slack.fetch_thread_newest(
                channel,
                root_ts,
                until=end,
                after=read_up_to,
                expected_replies=max((root.reply_count if root else 0) - len(known), 0),
                wait_budget=self._wait_left(),
            )
        except RateLimited as limited:
            notes.append(self._stale_note(key, f"Slack rate limit on {limited.method}"))
            return 0.0
        except ChanctxError as error:
            notes.append(self._stale_note(key, f"could not fetch it from Slack ({error})"))
            return 0.0
        partial = (
            (fetched.read_back_to, fetched.read_up_to)
            if not fetched.complete and fetched.read_back_to is not None
            else None
        )
        root, replies = self._adopt_thread(
            channel, root_ts, root, fetched.messages, complete=fetched.complete, partial=partial
        )
        if self.record is not None:
            self.record.fetched(fetched.messages)
        if self.learned is not None:
            self.learned.thread(
                channel, root_ts, fetched.messages, complete=fetched.complete, partial=partial
            )
        if not fetched.complete and key in self._fetched:
            notes.append(self._stale_note(key, "Slack's rate limit on conversations.replies"))
        elif not fetched.complete:
            total = root.reply_count if root else len(replies)
            notes.append(
                f"This thread has {total} replies; {len(replies)} are included, newest first, "
                f"and {max(total - len(replies), 0)} older ones could not be fetched yet "
                f"(Slack's rate limit on conversations.replies; a turn waits at most "
                f"{self.settings.max_wait_seconds:g} s); later answers fetch the rest."
            )
        spend_wait(fetched.waited)  # what this turn may still wait, for its tools' fetches
        return fetched.waited

    def _thread_from_store(self, channel: str, root_ts: str) -> bool:
        """Load a thread the store holds into the caches; True if that made it whole (a
        restart then asks Slack nothing for it)."""
        assert self.record is not None
        root, replies = self.record.thread(channel, root_ts)
        if root is None and not replies:
            return False
        self._adopt(([root] if root is not None else []) + replies)
        return self._thread_is_complete(channel, root_ts)

    def _adopt_thread(
        self,
        channel: str,
        root_ts: str,
        root: Message | None,
        messages: Sequence[Message],
        *,
        complete: bool,
        partial: tuple[str | None, str | None] | None,
    ) -> tuple[Message | None, list[Message]]:
        """Take a thread fetch into the caches; the thread's root and replies after it."""
        self._adopt(messages)
        key = (channel, root_ts)
        with self._lock:
            replies = self.history.replies(channel, root_ts)
            root = self.history.get(channel, root_ts) or root
            if complete and self.threads is not None:
                self._partial.pop(key, None)
                # A whole thread, never a partial one, is cached as the thread.
                self.threads.store(channel, root_ts, ([root] if root else []) + replies)
                self._fetched[key] = self.clock()
            elif partial is not None:
                self._partial[key] = partial
        return root, replies

    def _wait_left(self) -> float:
        """Rate-limit seconds this fetch may wait: what is left of the turn's, if it runs
        inside a turn (``turn_wait_budget``), else the setting."""
        return wait_left(self.settings.max_wait_seconds)

    def _stale_note(self, key: tuple[str, str], why: str) -> str:
        fetched_at = self._fetched.get(key)
        if fetched_at is not None:
            minutes = max(0, round((self.clock() - fetched_at) / 60))
            return (
                f"{why}: this thread comes from a copy fetched {minutes} min ago, plus the "
                "replies seen live since."
            )
        return f"{why}: this thread may be missing replies older than those seen live."
