"""Posting an answer exactly once: slack_sdk's retry handlers, and the turn id in the metadata.

Every part of an answer carries Slack message metadata naming its turn and part, so after a
crash between "posted" and "recorded as posted" the bot can look in the thread for what it
already said (``conversations.replies`` with ``include_all_metadata``) instead of saying it twice.
429s (after Retry-After), 5xx answers and connection errors are retried by slack_sdk's own
handlers; only when every retry failed does the post fail.

A part is streamed (slack_sdk's ``chat_stream``) when Slack lets us: the user sees it grow. A
stream is started at once with the first words so that its ts can be journaled before anything
else happens; the metadata and the feedback buttons come with ``chat.stopStream``. Stream calls
are retried only after a 429 (Slack did nothing then); a 5xx or a lost connection may have
appended already, so the stream is never continued after one: it is stopped and the message
replaced (``chat.update``) with the whole part, which is idempotent; chat.update takes 4,000
characters, so a longer part keeps its first piece there and follows with new replies. A stream a
crash left open is finished the same way after the restart (``replace``). Where streaming is refused (a channel
type, a token, a Slack without the methods) the part is posted in one message instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from chanctx.bot.slack.markdown import split_markdown
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator

__all__ = ["EVENT_TYPE", "UPDATE_LIMIT", "Poster", "ThreadScan"]

logger = logging.getLogger("chanctx.poster")
EVENT_TYPE: Final = "chanctx_turn"
_RETRIES: Final = 4  # per kind of failure: with backoff, about 15 s of trying
_TIMEOUT: Final = 15  # seconds for one HTTP request
_FIRST_WORDS: Final = 80  # characters the stream starts with
# appendStream is Tier 4 (100+ a minute per workspace): a long part grows in at most this many
# appends (bigger pieces), so a few long answers at once stay well under it.
_MAX_APPENDS: Final = 10
# Refusals that mean this Slack (or this token) does not stream at all: stop trying.
_NO_STREAMING: Final = frozenset(
    {"unknown_method", "method_deprecated", "deprecated_endpoint", "not_allowed_token_type"}
)
_GONE: Final = frozenset({"message_not_in_streaming_state", "message_not_found"})
# chat.update refusals after which the part is posted anew: the message is gone, or it still
# streams because stopping it failed.
_POST_ANEW: Final = frozenset({"message_not_found", "streaming_state_conflict"})
UPDATE_LIMIT: Final = 4_000  # characters chat.update takes (longer: msg_too_long)
_PIECE = re.compile(r"\S+\s*|\s+")


@dataclass
class ThreadScan:
    """What the thread shows of a turn after a crash: its parts found by their metadata, and
    our messages with no metadata after the question (streams a crash left unfinished)."""

    found: dict[int, str] = field(default_factory=dict)
    orphans: list[str] = field(default_factory=list)


def _metadata(turn_id: str, part: int, piece: int = 0, last: int = 0) -> dict[str, Any]:
    """A part's metadata; a part replaced in several messages (``last`` > 0) numbers its
    pieces, and only its last piece says the part is complete."""
    payload: dict[str, Any] = {"turn": turn_id, "part": part}
    if last:
        payload.update(piece=piece, pieces=last + 1)
    return {"event_type": EVENT_TYPE, "event_payload": payload}


def _content(text: str, buttons: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A message's arguments: Markdown alone, or (with buttons) a markdown block above them,
    since ``markdown_text`` never goes with ``blocks``."""
    if not buttons:
        return {"markdown_text": text}
    return {"text": text, "blocks": [{"type": "markdown", "text": text}, *buttons]}


def _ambiguous(error: Exception) -> bool:
    """A failure after which Slack may have done what was asked (5xx, a lost connection)."""
    if isinstance(error, SlackApiError):
        return int(getattr(error.response, "status_code", 200) or 200) >= 500
    return True


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
        # Stream calls: a 429 is retried (Slack did nothing), nothing else (see above).
        self._stream_client = WebClient(
            token=client.token,
            base_url=client.base_url,
            timeout=_TIMEOUT,
            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=_RETRIES)],
        )
        self._mine = {bot_id, bot_user} - {""}
        self.streaming = True  # False once Slack said it does not stream for us
        self.stream_buffer = 256  # characters per append (slack_sdk's default)

    def deliver(
        self,
        channel: str,
        thread_ts: str,
        text: str,
        *,
        turn_id: str,
        part: int,
        recipient: tuple[str, str],
        after_ts: str,
        buttons: Sequence[dict[str, Any]] = (),
        on_started: Callable[[str], None] = lambda ts: None,
    ) -> str:
        """One part of an answer: streamed when Slack lets us, else posted; its ts.
        ``recipient`` is (team id, user id) of the asker; ``on_started`` journals the
        stream's ts before anything is appended; ``after_ts`` is the question's ts."""
        if self.streaming and thread_ts:
            ts = self._stream(
                channel, thread_ts, text, turn_id=turn_id, part=part, recipient=recipient,
                after_ts=after_ts, buttons=buttons, on_started=on_started,
            )  # fmt: skip
            if ts is not None:
                return ts
        return self.post(channel, thread_ts, text, turn_id=turn_id, part=part, buttons=buttons)

    def _stream(
        self,
        channel: str,
        thread_ts: str,
        text: str,
        *,
        turn_id: str,
        part: int,
        recipient: tuple[str, str],
        after_ts: str,
        buttons: Sequence[dict[str, Any]],
        on_started: Callable[[str], None],
    ) -> str | None:
        team, user = recipient
        streamer = self._stream_client.chat_stream(
            channel=channel,
            thread_ts=thread_ts,
            recipient_team_id=team or None,
            recipient_user_id=user or None,
            buffer_size=max(self.stream_buffer, len(text) // _MAX_APPENDS),
        )
        pieces = _PIECE.findall(text)
        first = ""
        while pieces and (not first.strip() or len(first) < _FIRST_WORDS):
            first += pieces.pop(0)
        try:
            streamer.append(markdown_text=first, chunks=[])  # chunks=[]: start now
        except Exception as error:
            if not _ambiguous(error):
                reason = (
                    str(error.response.get("error")) if isinstance(error, SlackApiError) else ""
                )
                if reason in _NO_STREAMING:
                    self.streaming = False
                logger.info("not streaming in %s (%s): posting instead", channel, reason)
                return None
            # Slack may have started it: adopt our unfinished message if the thread has one.
            orphans = self.scan(channel, thread_ts, turn_id, after_ts).orphans
            if not orphans:
                return None
            return self.replace(channel, orphans[0], text, turn_id=turn_id, part=part,
                                buttons=buttons, thread_ts=thread_ts)  # fmt: skip
        ts = str(streamer.ts)
        on_started(ts)
        try:
            for piece in pieces:
                streamer.append(markdown_text=piece)
            streamer.stop(metadata=_metadata(turn_id, part), blocks=list(buttons) or None)
        except Exception as error:
            if (
                isinstance(error, SlackApiError)
                and error.response.get("error") == "stopped_by_user"
            ):
                logger.info("the user stopped the answer in %s at %s", channel, ts)
                return ts  # what they chose to keep stays; no second answer
            logger.warning("a stream broke in %s (%s): replacing it whole", channel, error)
            return self.replace(channel, ts, text, turn_id=turn_id, part=part, buttons=buttons,
                                thread_ts=thread_ts)  # fmt: skip
        return ts

    def replace(
        self,
        channel: str,
        ts: str,
        text: str,
        *,
        turn_id: str,
        part: int,
        buttons: Sequence[dict[str, Any]] = (),
        thread_ts: str | None = None,
    ) -> str:
        """Make message ``ts`` (a stream that broke, or one a crash left open) the whole part:
        stop it if it still streams, then update it; the ts of the part's last message. Both
        are safe to repeat. ``chat.update`` takes at most 4,000 characters, so a longer part
        keeps its first piece in ``ts`` and the rest follows as new replies, the last carrying
        the buttons. If the message is gone (someone deleted it) or still streams (its stop
        failed) and ``thread_ts`` is known, the part is posted anew instead."""
        try:
            self._client.chat_stopStream(channel=channel, ts=ts)
        except SlackApiError as error:
            if error.response.get("error") not in _GONE:
                logger.info("stopping %s/%s: %s", channel, ts, error.response.get("error"))
        pieces = split_markdown(text, UPDATE_LIMIT) if len(text) > UPDATE_LIMIT else [text]
        last = len(pieces) - 1
        try:
            self._client.chat_update(
                channel=channel, ts=ts, metadata=_metadata(turn_id, part, 0, last),
                **_content(pieces[0], buttons if not last else ()),
            )  # fmt: skip
        except SlackApiError as error:
            if error.response.get("error") not in _POST_ANEW or not thread_ts:
                raise
            logger.info("%s/%s: %s, posting the part anew", channel, ts, error.response["error"])
            return self.post(channel, thread_ts, text, turn_id=turn_id, part=part, buttons=buttons)
        if last and not thread_ts:
            raise ValueError("a part longer than chat.update takes needs its thread_ts")
        for index in range(1, last + 1):
            ts = self._post_piece(
                channel, str(thread_ts), pieces[index], _metadata(turn_id, part, index, last),
                buttons if index == last else (),
            )  # fmt: skip
        return ts

    def _post_piece(
        self,
        channel: str,
        thread_ts: str,
        text: str,
        metadata: dict[str, Any],
        buttons: Sequence[dict[str, Any]],
    ) -> str:
        response = self._client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, metadata=metadata, **_content(text, buttons)
        )
        return str(response.get("ts"))

    def post(
        self,
        channel: str,
        thread_ts: str,
        text: str,
        *,
        turn_id: str,
        part: int,
        buttons: Sequence[dict[str, Any]] = (),
    ) -> str:
        """Post one part (Markdown) in the thread; its ts. Raises SlackApiError when every
        retry failed, or at once for an error no retry can fix (not_in_channel, ...)."""
        response = self._client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts,
            metadata=_metadata(turn_id, part),
            **_content(text, buttons),
        )
        return str(response.get("ts"))

    def already_posted(self, channel: str, thread_ts: str, turn_id: str) -> dict[int, str]:
        """Parts of ``turn_id`` found in the thread (part -> ts). One replies call per page."""
        return self.scan(channel, thread_ts, turn_id).found

    def scan(
        self, channel: str, thread_ts: str, turn_id: str, after_ts: str | None = None
    ) -> ThreadScan:
        """The thread as a crash left it for ``turn_id``; orphans (oldest first) only with
        ``after_ts``. One replies call per page."""
        result = ThreadScan()
        found = result.found
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
                    elif after_ts is not None and self._orphan(message, after_ts):
                        result.orphans.append(str(message.get("ts")))
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
        return result

    def _orphan(self, message: dict[str, Any], after_ts: str) -> bool:
        """Ours, after the question, and without metadata: only an unfinished stream is."""
        if not self._mine or not ({message.get("user"), message.get("bot_id")} & self._mine):
            return False
        try:
            later = float(str(message.get("ts"))) > float(after_ts)
        except ValueError:
            return False
        return later and not message.get("metadata")

    def _part_of(self, message: dict[str, Any], turn_id: str) -> int | None:
        if self._mine and not ({message.get("user"), message.get("bot_id")} & self._mine):
            return None
        metadata = message.get("metadata") or {}
        payload = metadata.get("event_payload") or {}
        if metadata.get("event_type") != EVENT_TYPE or payload.get("turn") != turn_id:
            return None
        part = payload.get("part")
        pieces = payload.get("pieces")
        if isinstance(pieces, int) and payload.get("piece") != pieces - 1:
            return None  # an earlier piece of a replaced part: the part is not complete yet
        return part if isinstance(part, int) else None
