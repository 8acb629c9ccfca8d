"""The fake Slack Web API's streaming methods and Block Kit checks (a mixin of ``FakeSlackAPI``).

``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream`` under Slack's documented
argument rules and errors:

* start: ``channel`` and ``thread_ts`` required; outside a DM the ``recipient_team_id`` and
  ``recipient_user_id`` are required (``missing_recipient_team_id`` / ``_user_id``); text is
  optional. The message is a reply in the thread from the first call, text growing as appended.
* append: ``markdown_text`` or ``chunks`` required (``no_text``); the message must exist
  (``message_not_found``), be the app's (``message_not_owned_by_app``) and still stream
  (``message_not_in_streaming_state``, or ``stopped_by_user`` after a person pressed stop).
* stop: as append, text optional; ``metadata`` and ``blocks`` (rendered under the text) land on
  the finished message, which is then also listed in ``posted``.
* ``markdown_text`` at most 12,000 characters per call (``msg_too_long``); ``chunks`` a list of
  ``markdown_text`` / ``task_update`` / ``plan_update`` / ``blocks`` objects (``invalid_chunks``).

Slack ends a stream about 5 minutes after it started whatever is appended (observed and reported
by users of the SDK, not documented): ``stream_ttl`` models it; later calls answer
``message_not_in_streaming_state`` and the message keeps what it had.

Blocks are checked where chanctx posts them: at most 50 (``msg_blocks_too_many``); a ``markdown``
block needs its text (at most 12,000 characters); a ``context_actions`` block holds 1 to 5
``feedback_buttons`` / ``icon_button`` elements, feedback buttons each a plain_text ``text`` and a
``value``; anything malformed answers ``invalid_blocks``.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

__all__ = ["STREAM_TTL", "SlackError", "StreamMethods", "check_blocks", "metadata_arg"]

MARKDOWN_LIMIT: Final = 12_000
STREAM_TTL: Final = 300.0  # seconds a stream stays open on Slack (observed, see above)
_CHUNK_TYPES: Final = {"markdown_text", "task_update", "plan_update", "blocks"}


class SlackError(Exception):
    """An ``{"ok": false, "error": ...}`` answer (FakeSlackAPI's handlers raise it)."""


def _json_arg(value: Any, error: str) -> Any:
    """Arrays and objects arrive as JSON text in form-encoded calls."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise SlackError(error) from None
    return value


def _feedback_button(button: Any) -> bool:
    if not isinstance(button, dict) or not isinstance(button.get("value"), str):
        return False
    text = button.get("text")
    return isinstance(text, dict) and text.get("type") == "plain_text" and bool(text.get("text"))


def _block_ok(block: Any) -> bool:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return False
    kind = block["type"]
    if kind == "markdown":
        text = block.get("text")
        return isinstance(text, str) and bool(text.strip()) and len(text) <= MARKDOWN_LIMIT
    if kind == "context_actions":
        elements = block.get("elements")
        if not isinstance(elements, list) or not 1 <= len(elements) <= 5:
            return False
        for element in elements:
            if not isinstance(element, dict):
                return False
            if element.get("type") == "feedback_buttons":
                if not (
                    _feedback_button(element.get("positive_button"))
                    and _feedback_button(element.get("negative_button"))
                ):
                    return False
            elif element.get("type") != "icon_button":
                return False
        return True
    return True  # other block types are stored as given


def metadata_arg(params: dict[str, Any]) -> dict[str, Any] | None:
    """A call's ``metadata`` as the object Slack stores (form-encoded calls send JSON text);
    ``invalid_metadata_format`` for anything else."""
    metadata = _json_arg(params.get("metadata"), "invalid_metadata_format")
    if metadata in (None, ""):
        return None
    if not isinstance(metadata, dict):
        raise SlackError("invalid_metadata_format")
    return metadata


def check_blocks(raw: Any) -> list[dict[str, Any]] | None:
    """The blocks of a call, checked; None when the call has none."""
    if raw in (None, "", []):
        return None
    blocks = _json_arg(raw, "invalid_blocks_format")
    if not isinstance(blocks, list):
        raise SlackError("invalid_blocks_format")
    if len(blocks) > 50:
        raise SlackError("msg_blocks_too_many")
    if not all(_block_ok(b) for b in blocks):
        raise SlackError("invalid_blocks")
    return blocks


def _stream_text(params: dict[str, Any], *, required: bool) -> str:
    """What one stream call adds: its ``markdown_text`` then its markdown chunks."""
    added = ""
    markdown = params.get("markdown_text")
    if markdown not in (None, ""):
        if not isinstance(markdown, str):
            raise SlackError("invalid_arguments")
        if len(markdown) > MARKDOWN_LIMIT:
            raise SlackError("msg_too_long")
        added += markdown
    chunks = params.get("chunks")
    if chunks not in (None, "", []):
        chunks = _json_arg(chunks, "invalid_chunks")
        if not isinstance(chunks, list):
            raise SlackError("invalid_chunks")
        for chunk in chunks:
            if not isinstance(chunk, dict) or chunk.get("type") not in _CHUNK_TYPES:
                raise SlackError("invalid_chunks")
            if chunk["type"] == "markdown_text":
                text = chunk.get("text")
                if not isinstance(text, str):
                    raise SlackError("invalid_chunks")
                if len(text) > MARKDOWN_LIMIT:
                    raise SlackError("msg_too_long")
                added += text
    elif required and not added:
        raise SlackError("no_text")
    return added


class StreamMethods:
    """Mixed into FakeSlackAPI, whose storage, clock and auth these handlers use."""

    # Provided by FakeSlackAPI.
    _auth: dict[str, Any]
    _channels: dict[str, Any]
    _messages: dict[str, dict[str, dict[str, Any]]]
    posted: list[dict[str, Any]]

    def _init_streams(self, stream_ttl: float) -> None:
        self.stream_ttl = stream_ttl
        self._streams: dict[tuple[str, str], float] = {}  # open streams: (channel, ts) -> start
        self._stopped_by_user: set[tuple[str, str]] = set()
        # Every call that put text on a message, in order: what a user saw appear.
        self.sent: list[dict[str, Any]] = []

    # Provided by FakeSlackAPI (which comes first in its own MRO).
    def _channel(self, params: Any, name: str = "channel") -> str:
        raise NotImplementedError

    def _next_ts(self, channel: str) -> str:
        raise NotImplementedError

    def _store(self, channel: str, message: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _note_reply(self, channel: str, reply: dict[str, Any]) -> None:
        raise NotImplementedError

    def _now(self) -> float:
        raise NotImplementedError

    # --- inspection ------------------------------------------------------------------------

    def streaming(self) -> list[tuple[str, str]]:
        """Streams started and neither stopped nor expired: (channel, ts)."""
        now = self._now()
        return [key for key, at in self._streams.items() if now - at < self.stream_ttl]

    def stop_by_user(self, channel: str, ts: str) -> None:
        """A person pressed stop on the streaming message (Slack's UI offers it)."""
        self._streams.pop((channel, ts), None)
        self._stopped_by_user.add((channel, ts))

    def log_sent(self, method: str, channel: str, message: dict[str, Any], added: str) -> None:
        self.sent.append(
            {
                "method": method,
                "channel": channel,
                "ts": message["ts"],
                "text": message.get("text", ""),
                "markdown_text": added or None,
            }
        )

    # --- handlers ----------------------------------------------------------------------------

    def _start_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        thread_ts = str(params.get("thread_ts") or "")
        if not thread_ts:
            raise SlackError("invalid_arguments")  # streamed messages are always replies
        info = self._channels.get(channel) or {}
        if not (channel.startswith("D") or info.get("is_im")):
            if not params.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
            if not params.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
        added = _stream_text(params, required=False)
        target = self._messages.get(channel, {}).get(thread_ts) or {}
        message: dict[str, Any] = {
            "type": "message",
            "user": self._auth.get("user_id", ""),
            "bot_id": self._auth.get("bot_id", ""),
            "text": added,
            "ts": self._next_ts(channel),
            "team": self._auth.get("team_id", ""),
            "thread_ts": str(target.get("thread_ts") or thread_ts),
        }
        stored = self._store(channel, message)
        self._note_reply(channel, stored)
        self._streams[(channel, stored["ts"])] = self._now()
        self.log_sent("chat.startStream", channel, stored, added)
        return {"channel": channel, "ts": stored["ts"]}

    def _open_stream(self, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        channel = self._channel(params)
        ts = str(params.get("ts") or "")
        message = self._messages.get(channel, {}).get(ts)
        if message is None:
            raise SlackError("message_not_found")
        mine = {self._auth.get("user_id"), self._auth.get("bot_id")} - {None, ""}
        if message.get("user") not in mine and message.get("bot_id") not in mine:
            raise SlackError("message_not_owned_by_app")
        if (channel, ts) in self._stopped_by_user:
            raise SlackError("stopped_by_user")
        started = self._streams.get((channel, ts))
        if started is None or self._now() - started >= self.stream_ttl:
            self._streams.pop((channel, ts), None)
            raise SlackError("message_not_in_streaming_state")
        return channel, message

    def _append_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, message = self._open_stream(params)
        added = _stream_text(params, required=True)
        message["text"] = message.get("text", "") + added
        self.log_sent("chat.appendStream", channel, message, added)
        return {"channel": channel, "ts": message["ts"]}

    def _stop_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, message = self._open_stream(params)
        added = _stream_text(params, required=False)
        blocks = check_blocks(params.get("blocks"))
        metadata = metadata_arg(params)
        message["text"] = message.get("text", "") + added
        if blocks:
            message["blocks"] = blocks
        if metadata:
            message["metadata"] = metadata
        del self._streams[(channel, message["ts"])]
        self.log_sent("chat.stopStream", channel, message, added)
        self.posted.append(
            {"channel": channel, **copy.deepcopy(message), "markdown_text": message["text"]}
        )
        return {"channel": channel, "ts": message["ts"], "message": copy.deepcopy(message)}
