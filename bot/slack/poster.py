"""Posting an answer exactly once: slack_sdk's retry handlers, and the turn id in the metadata.

Every part of an answer carries Slack message metadata naming its turn and part, so after a
crash between "posted" and "recorded as posted" the bot can look in the thread for what it
already said (``conversations.replies`` with ``include_all_metadata``) instead of saying it twice.
429s (after Retry-After), 5xx answers and connection errors are retried by slack_sdk's own
handlers; only when every retry failed does the post fail.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator

__all__ = ["EVENT_TYPE", "Poster"]

logger = logging.getLogger("chanctx.poster")
EVENT_TYPE: Final = "chanctx_turn"
_RETRIES: Final = 4  # per kind of failure: with backoff, about 15 s of trying
_TIMEOUT: Final = 15  # seconds for one HTTP request


class Poster:
    def __init__(
        self,
        client: WebClient,
        *,
        bot_id: str = "",
        bot_user: str = "",
        backoff: float = 0.5,
    ) -> None:
        """``backoff``: seconds before the first retry of a 5xx or a connection error,
        doubling each time (a 429 waits its Retry-After instead)."""
        interval = BackoffRetryIntervalCalculator(backoff_factor=backoff)
        # A client of its own: the reads' client has its own retry policy behind the limiter.
        self._client = WebClient(
            token=client.token,
            base_url=client.base_url,
            timeout=_TIMEOUT,
            retry_handlers=[
                RateLimitErrorRetryHandler(max_retry_count=_RETRIES),
                ServerErrorRetryHandler(max_retry_count=_RETRIES, interval_calculator=interval),
                ConnectionErrorRetryHandler(max_retry_count=_RETRIES, interval_calculator=interval),
            ],
        )
        self._mine = {bot_id, bot_user} - {""}

    def post(self, channel: str, thread_ts: str, text: str, *, turn_id: str, part: int) -> str:
        """Post one part (Markdown) in the thread; its ts. Raises SlackApiError when every
        retry failed, or at once for an error no retry can fix (not_in_channel, ...)."""
        response = self._client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts,
            markdown_text=text,
            metadata={"event_type": EVENT_TYPE, "event_payload": {"turn": turn_id, "part": part}},
        )
        return str(response.get("ts"))

    def already_posted(self, channel: str, thread_ts: str, turn_id: str) -> dict[int, str]:
        """Parts of ``turn_id`` found in the thread (part -> ts). One replies call per page."""
        found: dict[int, str] = {}
        cursor = ""
        try:
            for _ in range(20):
                page = self._client.conversations_replies(
                    channel=channel, ts=thread_ts, cursor=cursor, limit=200,
                    include_all_metadata=True,
                )  # fmt: skip
                for message in page.get("messages") or []:
                    part = self._part_of(message, turn_id)
                    if part is not None:
                        found[part] = str(message.get("ts"))
                cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
                if not cursor:
                    break
        except SlackApiError as error:
            logger.warning(
                "could not check %s/%s for earlier posts: %s",
                channel,
                thread_ts,
                error.response.get("error"),
            )
        return found

    def _part_of(self, message: dict[str, Any], turn_id: str) -> int | None:
        if self._mine and not ({message.get("user"), message.get("bot_id")} & self._mine):
            return None
        metadata = message.get("metadata") or {}
        payload = metadata.get("event_payload") or {}
        if metadata.get("event_type") != EVENT_TYPE or payload.get("turn") != turn_id:
            return None
        part = payload.get("part")
        return part if isinstance(part, int) else None
