"""The Slack Web API calls chanctx makes, each one behind the rate limiter.

``SlackFetcher`` implements ``cache``'s ``ThreadFetcher`` and ``MessageFetcher`` protocols and the
few lookups ``bot/`` needs (cold-start history, user and channel names). Every call that leaves
the process goes through ``RateLimiter`` first and is counted in ``api_calls``.

Overflow policies (what a read does when the rate limit is spent):

* ``"queue"``: wait for the limiter (with the injected ``sleep``) and retry 429s after their
  Retry-After, up to ``max_retries`` times;
* ``"degrade"``: never wait: raise ``RateLimited`` at once so the caller serves stale cache and
  says so. Run degrade in event handlers: a sleeping handler blocks every other event.

Names are cosmetic, so ``user_name`` and ``channel_name`` never raise: they fall back to the id.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal

from cachetools import TTLCache
from chanctx.bot.slack import web_calls
from chanctx.bot.slack._slack_models import SlackMessage, channel_label, user_label
from chanctx.bot.slack.intake import SelfIdentity, to_message
from chanctx.bot.slack.web_calls import (
    TRANSIENT_ERRORS,
    SlackUnavailable,
    backoff,
    count_read,
    describe,
)
from chanctx.cache import Limiter, RateLimited, ts_key
from chanctx.context import Message
from chanctx.context.errors import InvalidTimestamp
from pydantic import ValidationError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["Overflow", "SlackFetcher", "ThreadFetch"]

logger = logging.getLogger("chanctx.slack_api")


Overflow = Literal["queue", "degrade"]

_NAME_TTL: Final = 3600.0  # names rarely change; one call per id per hour at most
_MAX_USERS: Final = 5000
_MAX_CHANNELS: Final = 1000
_FAILURE_TTL: Final = 60.0  # a failed lookup is retried after a minute, not an hour
_HISTORY_PAGE: Final = 200  # Slack's recommended page size for conversations.history
# The conversations with a history from before the bot: channels it was added to. A DM or a
# group DM holding the bot began with it, so its events were all delivered.
_CHANNEL_KINDS: Final = "public_channel,private_channel"


@dataclass(frozen=True)
class ThreadFetch:
    """What ``fetch_thread_newest`` got: root first (if returned), replies oldest first."""

    messages: list[Message]
    complete: bool  # every reply up to the asked ts is in ``messages``
    waited: float  # rate-limit seconds spent getting them
    # When not complete: every reply from ``read_back_to`` up to the asked one was read, and
    # every one up to ``read_up_to`` from the root; a later fetch reads what lies between.
    read_back_to: str | None = None
    read_up_to: str | None = None


def _ts_text(value: Decimal) -> str:
    return f"{value:.6f}"


class SlackFetcher:
    """Slack Web API reads behind a ``RateLimiter``; see the module docstring for the policies.

    ``page_size`` defaults to 15, the most ``conversations.replies`` returns per page to new
    non-Marketplace apps; ``max_pages`` bounds how many pages one thread or history fetch takes.
    """

    def __init__(
        self,
        client: WebClient,
        *,
        limiter: Limiter,
        me: SelfIdentity,
        overflow: Overflow = "queue",
        max_pages: int = 10,
        page_size: int = 15,
        sleep: Callable[[float], None] = time.sleep,
        max_retries: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if overflow not in ("queue", "degrade"):
            raise ValueError(f"overflow must be 'queue' or 'degrade', got {overflow!r}")
        for name, value in (("max_pages", max_pages), ("page_size", page_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self._client = client
        self._limiter = limiter
        self._me = me
        self.overflow: Overflow = overflow
        self._max_pages = max_pages
        self._page_size = page_size
        self._sleep = self._counted(sleep)
        # Seconds this thread spent waiting (rate limits, backoff): a turn's waited_s. Per
        # thread, so answers running side by side do not count each other's waits.
        self._waits = threading.local()
        self._max_retries = max_retries
        self.api_calls: Counter[str] = Counter()
        self._lock = threading.Lock()  # guards api_calls and the name caches
        self._users: TTLCache[str, str] = TTLCache(_MAX_USERS, _NAME_TTL, timer=clock)
        self._channels: TTLCache[str, str] = TTLCache(_MAX_CHANNELS, _NAME_TTL, timer=clock)
        self._failed: TTLCache[tuple[str, str], bool] = TTLCache(
            _MAX_USERS, _FAILURE_TTL, timer=clock
        )

    # --- the protocols cache/ uses -------------------------------------------------------

    def fetch_thread(self, channel: str, thread_ts: str) -> list[Message]:
        """The thread's root, then its replies oldest to newest ([] if Slack has no such thread).

        Follows ``conversations.replies`` cursors for at most ``max_pages`` pages. Hitting the cap,
        or a RateLimited / SlackUnavailable after the first page, returns what was fetched (with
        a warning): a partial thread is worth more than none. These raise only if nothing was.
        """
        found: dict[str, Message] = {}
        cursor = ""
        for page in range(self._max_pages):
            params: dict[str, Any] = {"channel": channel, "ts": thread_ts, "limit": self._page_size}
            if cursor:
                params["cursor"] = cursor
            try:
                data = self._call("conversations.replies", params)
            except (RateLimited, SlackUnavailable) as error:
                if not found:
                    raise
                logger.warning(
                    "thread %s in %s cut after %d page(s), %d message(s): %s",
                    thread_ts,
                    channel,
                    page,
                    len(found),
                    error,
                )
                return self._thread_order(found, thread_ts)
            if data is None:
                break
            # Slack may repeat the root on every page: key by ts so each message counts once.
            found.update((m.ts, m) for m in self._messages(data, channel))
            cursor = str((data.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor or not data.get("messages"):
                break
        else:
            logger.warning(
                "thread %s in %s cut at %d pages (%d messages fetched); later replies omitted",
                thread_ts,
                channel,
                self._max_pages,
                len(found),
            )
        return self._thread_order(found, thread_ts)

    def fetch_thread_newest(
        self,
        channel: str,
        root_ts: str,
        *,
        until: str,
        after: str | None = None,
        expected_replies: int = 0,
        wait_budget: float = 60.0,
    ) -> ThreadFetch:
        """The replies up to ``until`` (inclusive) and after ``after`` (everything up to it
        was read already; default the root), newest first: the part of a thread a
        question at ``until`` is about comes before its old beginning.

        ``conversations.replies`` lists a thread oldest first, so the thread is read in time
        windows going back from ``until``, each sized from Slack's ``reply_count``
        (``expected_replies``) to hold about one page. A window that holds more (``has_more``)
        is narrowed from the top and asked again (what came is kept); an empty one makes the
        next window four times wider. It stops at the root (``complete``) or when the next call
        would take the rate-limit waiting past ``wait_budget`` seconds: a partial fetch, which
        the caller must not cache as the whole thread; ``read_back_to`` says where a later
        fetch goes on. ``waited`` is the rate-limit time spent (replay's virtual time too).
        """
        start, latest = Decimal(after or root_ts), Decimal(until)
        span = self._first_span(start, latest, expected_replies)
        found: dict[str, Message] = {}
        waited = 0.0
        method = "conversations.replies"
        while True:
            oldest = max(start, latest - span)
            wait = self._limiter.wait_time(method)
            if waited + wait > wait_budget:
                return self._partial_thread(found, root_ts, waited, latest, start)
            params: dict[str, Any] = {
                "channel": channel, "ts": root_ts, "limit": self._page_size,
                "oldest": _ts_text(oldest), "latest": _ts_text(latest), "inclusive": True,
            }  # fmt: skip
            before = self._slept()
            try:
                data = self._call(method, params)
            except (RateLimited, SlackUnavailable):
                if not found:
                    raise
                return self._partial_thread(found, root_ts, waited, latest, start)
            finally:
                waited += self._slept() - before
            if data is None:  # no such thread (any more)
                return ThreadFetch(self._thread_order(found, root_ts), True, waited)
            page = self._messages(data, channel)
            found.update((m.ts, m) for m in page)
            if (data.get("response_metadata") or {}).get("next_cursor"):
                # Only the window's oldest page came. If the window reached back to what is
                # read already, that page extends it; either way ask for the top half next.
                replies = [Decimal(m.ts) for m in page if m.ts != root_ts]
                if oldest <= start and replies:
                    start = max(replies)
                span = (latest - max(oldest, start)) / 2
                continue
            if oldest <= start:
                return ThreadFetch(self._thread_order(found, root_ts), True, waited)
            # Replies this window added (its top bound is a reply known already).
            in_window = sum(1 for m in page if m.ts != root_ts and Decimal(m.ts) < latest)
            latest = oldest
            span = (
                span * 4
                if not in_window
                else self._next_span(start, latest, expected_replies, found)
            )

    def _first_span(self, start: Decimal, end: Decimal, expected: int) -> Decimal:
        """A window back from ``end`` holding about 80% of a page, if replies were spread
        evenly since the root; at least a minute."""
        length = max(end - start, Decimal(1))
        if expected <= 0:
            return length
        per_second = Decimal(expected) / length
        return min(length, max(Decimal(60), Decimal(self._page_size) * Decimal("0.8") / per_second))

    def _next_span(
        self, start: Decimal, latest: Decimal, expected: int, found: Mapping[str, Message]
    ) -> Decimal:
        """The next window back: about one page of what is left by Slack's reply count, all of
        the rest once a page holds it."""
        left = expected - max(len(found) - 1, 0)  # the root is in ``found`` too
        if expected <= 0 or left <= self._page_size:
            return latest - start
        return max(Decimal(60), (latest - start) * Decimal(self._page_size) * Decimal("0.9") / left)

    def _partial_thread(
        self,
        found: Mapping[str, Message],
        root_ts: str,
        waited: float,
        read_back_to: Decimal,
        read_up_to: Decimal,
    ) -> ThreadFetch:
        return ThreadFetch(
            self._thread_order(found, root_ts),
            False,
            waited,
            _ts_text(read_back_to),
            _ts_text(read_up_to),
        )

    def fetch_message(self, channel: str, ts: str) -> Message | None:
        """One message by ts, or None if Slack has none.

        ``conversations.history`` (latest=ts, inclusive, limit 1) comes first: it finds every
        top-level message, thread roots included, from the roomy workspace budget.
        ``conversations.replies`` (1/min for new apps) is spent only on a ts history did not
        have, i.e. a reply.
        """
        params = {"channel": channel, "latest": ts, "inclusive": True, "limit": 1}
        data = self._call("conversations.history", params)
        if data is None:  # channel_not_found and the like: replies would say the same
            return None
        for message in self._messages(data, channel)[:1]:
            if message.ts == ts:
                return message
        data = self._call("conversations.replies", {"channel": channel, "ts": ts, "limit": 1})
        for message in self._messages(data, channel)[:1]:
            if message.ts == ts:
                return message
        return None

    # --- other reads ---------------------------------------------------------------------

    def channel_history(
        self, channel: str, *, limit: int = 200, oldest: str | None = None
    ) -> list[Message]:
        """The latest ``limit`` channel messages (newer than ``oldest`` when given: what Slack
        holds since an import), oldest to newest: the cold-start call.

        One ``conversations.history`` call per page of up to 200, at most ``max_pages`` pages.
        """
        found: dict[str, Message] = {}
        cursor = ""
        for _ in range(self._max_pages):
            if len(found) >= limit:
                break
            params: dict[str, Any] = {
                "channel": channel,
                "limit": min(limit - len(found), _HISTORY_PAGE),
            }
            if oldest is not None:
                params["oldest"] = oldest  # exclusive, as Slack reads it
            if cursor:
                params["cursor"] = cursor
            data = self._call("conversations.history", params)
            if data is None:
                break
            found.update((m.ts, m) for m in self._messages(data, channel))
            cursor = str((data.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor or not data.get("messages"):
                break
        newest = sorted(found.values(), key=lambda m: ts_key(m.ts))
        return newest[-limit:] if limit > 0 else []

    @property
    def limiter(self) -> Limiter:
        return self._limiter

    def read_page(
        self, method: str, params: dict[str, Any], channel: str
    ) -> tuple[list[Message], str] | None:
        """A page of history / replies in Slack's order and its next cursor ("" at the end)."""
        data = self._call(method, params)
        more = str(((data or {}).get("response_metadata") or {}).get("next_cursor") or "")
        return None if data is None else (self._messages(data, channel), more)

    def member_channels(
        self, cursor: str = "", *, limit: int = 200
    ) -> tuple[list[str], str] | None:
        """One page of ``users.conversations`` (Tier 3): the ids of the public and private
        channels the bot is in, archived ones left out, and the next cursor ("" at the end)."""
        params: dict[str, Any] = {"types": _CHANNEL_KINDS, "exclude_archived": True, "limit": limit}
        if cursor:
            params["cursor"] = cursor
        data = self._call("users.conversations", params)
        if data is None:
            return None
        listed = [c.get("id") for c in data.get("channels") or [] if isinstance(c, dict)]
        more = str((data.get("response_metadata") or {}).get("next_cursor") or "")
        return [c for c in listed if isinstance(c, str) and c], more

    def pinned_messages(self, channel: str) -> list[Message]:
        """The channel's pinned messages (``pins.list``, one call; Slack allows 100 pins), the
        oldest pin first. Pins are an extra, so a limit or an outage gives none, not an error."""
        try:
            data = self._call("pins.list", {"channel": channel})
        except (RateLimited, SlackUnavailable) as error:
            logger.info("pins of %s not read: %s", channel, error)
            return []
        raw = [
            item["message"]
            for item in (data or {}).get("items") or []
            if isinstance(item, dict)
            and item.get("type") == "message"
            and isinstance(item.get("message"), dict)
        ]
        pinned = self._messages({"messages": raw}, channel)
        return list(reversed(pinned))  # pins.list lists the newest pin first

    def user_name(self, user_id: str) -> str:
        """The user's display name (display_name, real_name, name), or ``user_id`` if unknown."""
        return self._name("users.info", {"user": user_id}, self._users, user_label)

    def channel_name(self, channel_id: str) -> str:
        """The channel's name (without "#"), or ``channel_id`` if unknown or a DM."""
        return self._name(
            "conversations.info", {"channel": channel_id}, self._channels, channel_label
        )

    # --- internals -----------------------------------------------------------------------

    def _counted(self, sleep: Callable[[float], None]) -> Callable[[float], None]:
        def counted(seconds: float) -> None:
            self._waits.total = self._slept() + max(0.0, seconds)
            sleep(seconds)

        return counted

    def _slept(self) -> float:
        return float(getattr(self._waits, "total", 0.0))

    def _name(
        self,
        method: str,
        params: dict[str, str],
        cache: TTLCache[str, str],
        label: Callable[[Mapping[str, Any]], str | None],
    ) -> str:
        key = next(iter(params.values()))
        with self._lock:
            if key in cache:
                return cache[key]
            if (method, key) in self._failed:
                return key
        try:
            data = self._call(method, params)
        except (RateLimited, SlackUnavailable) as error:
            logger.debug("%s %s failed, using the id: %s", method, key, error)
            data = None
        name = label(data) if data is not None else None
        with self._lock:
            if name:
                cache[key] = name
            else:
                self._failed[(method, key)] = True
        return name or key

    def _admit(self, method: str) -> None:
        if self.overflow == "degrade":
            if not self._limiter.try_acquire(method):
                raise RateLimited(method, self._limiter.wait_time(method))
        else:
            self._limiter.acquire(method, sleep=self._sleep)

    def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """One API call through the limiter, with retries; None for a Slack error like not_found."""
        attempts = 0
        while True:
            self._admit(method)
            attempts += 1
            with self._lock:
                self.api_calls[method] += 1
            count_read(method)  # this thread may be answering a turn: counted there too
            try:
                response = self._client.api_call(method, params=params)
            except SlackApiError as error:
                status = error.response.status_code
                if status == 429:
                    retry_after = web_calls.retry_after(error.response.headers)
                    # The limiter then holds every caller of this method, not just this one.
                    self._limiter.penalize(method, retry_after)
                    if self.overflow == "degrade" or attempts > self._max_retries:
                        raise RateLimited(method, retry_after) from error
                    logger.info("%s rate limited; retrying in %.1f s", method, retry_after)
                    continue  # _admit waits out the penalty
                code = str(error.response.get("error", "unknown_error"))
                if status < 500 and code not in TRANSIENT_ERRORS:
                    logger.debug("%s %s -> %s", method, describe(params), code)
                    return None
                detail = f"HTTP {status}" if status >= 500 else code
            except OSError as error:  # URLError, timeouts, refused or reset connections
                detail = f"{type(error).__name__}: {error}"
            else:
                data = response.data
                return data if isinstance(data, dict) else {}
            if attempts > self._max_retries:
                raise SlackUnavailable(method, attempts, detail)
            delay = backoff(attempts)
            logger.info("%s failed (%s); retry %d in %.1f s", method, detail, attempts, delay)
            self._sleep(delay)

    def _messages(self, data: Mapping[str, Any] | None, channel: str) -> list[Message]:
        """The response's messages as Messages, in the response's order; malformed ones skipped."""
        out: list[Message] = []
        for raw in (data or {}).get("messages") or []:
            try:
                out.append(to_message(SlackMessage.model_validate(raw), channel, self._me))
            except (ValidationError, InvalidTimestamp) as error:
                logger.warning("skipped a malformed message in %s: %s", channel, error)
        return out

    @staticmethod
    def _thread_order(found: Mapping[str, Message], thread_ts: str) -> list[Message]:
        root = found.get(thread_ts)
        replies = sorted(
            (m for ts, m in found.items() if ts != thread_ts), key=lambda m: ts_key(m.ts)
        )
        return ([root] if root is not None else []) + replies
