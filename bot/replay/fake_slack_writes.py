"""The fake Slack Web API's write methods: ``chat.postMessage`` and ``chat.update`` (Slack's text
and block rules), ``reactions.add`` / ``.remove`` and the assistant pane's
``assistant.threads.setStatus`` / ``.setSuggestedPrompts`` / ``.setTitle``."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from chanctx.bot.replay.fake_slack_wire import (
    TEXT_LIMIT,
    UPDATE_TEXT_LIMIT,
    RecordedReaction,
    RecordedStatus,
    message_text,
    truthy,
)
from chanctx.bot.replay.fake_stream import (
    SlackError,
    StreamMethods,
    check_blocks,
    metadata_arg,
)

__all__ = ["WriteMethods"]


class WriteMethods(StreamMethods):
    """Mixed into FakeSlackAPI, whose storage these handlers use (called with its lock held);
    the streaming methods are its base (a post and a stream log what they sent alike)."""

    # Provided by FakeSlackAPI.
    _auth: dict[str, Any]
    _channels: dict[str, Any]
    _messages: dict[str, dict[str, dict[str, Any]]]
    posted: list[dict[str, Any]]
    reactions_log: list[RecordedReaction]
    statuses: list[RecordedStatus]

    def _channel(self, params: Mapping[str, Any], name: str = "channel") -> str:
        raise NotImplementedError

    def _message(self, params: Mapping[str, Any], ts_name: str = "ts") -> dict[str, Any]:
        raise NotImplementedError

    def _public(self, message: Mapping[str, Any], *, metadata: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def _next_ts(self, channel: str) -> str:
        raise NotImplementedError

    def _note_reply(self, channel: str, reply: dict[str, Any]) -> None:
        raise NotImplementedError

    def _store(self, channel: str, message: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        if (self._channels.get(channel) or {}).get("is_member") is False:
            raise SlackError("not_in_channel")
        text = message_text(params)
        message: dict[str, Any] = {
            "type": "message",
            "user": self._auth.get("user_id", ""),
            "bot_id": self._auth.get("bot_id", ""),
            "text": text,
            "ts": self._next_ts(channel),
            "team": self._auth.get("team_id", ""),
        }
        blocks = check_blocks(params.get("blocks"))
        if blocks:
            message["blocks"] = blocks
        if params.get("attachments"):
            message["attachments"] = params["attachments"]
        metadata = metadata_arg(params)
        if metadata:
            message["metadata"] = metadata
        if params.get("thread_ts"):
            target = self._messages.get(channel, {}).get(str(params["thread_ts"]))
            # A reply to a reply lands in the same thread, as on Slack.
            message["thread_ts"] = str((target or {}).get("thread_ts") or params["thread_ts"])
            if truthy(params.get("reply_broadcast")):
                message["subtype"] = "thread_broadcast"
        stored = self._store(channel, message)
        self._note_reply(channel, stored)
        extra = {"markdown_text": params["markdown_text"]} if params.get("markdown_text") else {}
        self.posted.append({"channel": channel, **copy.deepcopy(stored), **extra})
        self.log_sent("chat.postMessage", channel, stored, str(params.get("markdown_text") or ""))
        answer = {"channel": channel, "ts": stored["ts"], "message": self._public(stored)}
        if len(str(params.get("text") or "")) > TEXT_LIMIT and not params.get("markdown_text"):
            # Slack keeps the first 40,000 characters and says so.
            answer["warning"] = "message_truncated"
            answer["response_metadata"] = {"warnings": ["message_truncated"]}
        return answer

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message(params)
        mine = {self._auth.get("user_id"), self._auth.get("bot_id")} - {None, ""}
        if message.get("user") not in mine and message.get("bot_id") not in mine:
            raise SlackError("cant_update_message")
        stream = (str(params["channel"]), str(message["ts"]))
        started = self._streams.get(stream)
        if started is not None and self._now() - started < self.stream_ttl:
            raise SlackError("streaming_state_conflict")  # stop the stream first
        if len(str(params.get("text") or "")) > UPDATE_TEXT_LIMIT:
            raise SlackError("msg_too_long")
        if params.get("markdown_text") is not None:
            message["text"] = message_text(params)  # the same rules as chat.postMessage
        blocks = check_blocks(params.get("blocks"))
        if blocks:
            message["blocks"] = blocks
        for key in ("text", "attachments"):
            if params.get(key) not in (None, ""):
                message[key] = params[key]
        metadata = metadata_arg(params)
        if metadata:
            message["metadata"] = metadata
        self._streams.pop(stream, None)  # an expired stream: the message is what the update says
        self.log_sent(
            "chat.update", str(params["channel"]), message, str(params.get("markdown_text") or "")
        )
        edit_ts = self._next_ts(str(params["channel"]))
        message["edited"] = {"user": self._auth.get("user_id", ""), "ts": edit_ts}
        return {
            "channel": params["channel"],
            "ts": message["ts"],
            "text": message.get("text", ""),
            # Slack's chat.update message carries none of its place in a thread.
            "message": {
                k: v
                for k, v in self._public(message).items()
                if k not in ("ts", "thread_ts", "parent_user_id")
            },
        }

    def _react(self, params: dict[str, Any], *, added: bool) -> dict[str, Any]:
        message = self._message(params, "timestamp")
        name, me = str(params.get("name") or ""), str(self._auth.get("user_id", ""))
        if not name:
            raise SlackError("invalid_name")
        reactions: list[dict[str, Any]] = message.setdefault("reactions", [])
        entry = next((r for r in reactions if r.get("name") == name), None)
        if added:
            if entry is None:
                entry = {"name": name, "users": [], "count": 0}
                reactions.append(entry)
            if me in entry["users"]:
                raise SlackError("already_reacted")
            entry["users"].append(me)
        else:
            if entry is None or me not in entry.get("users", []):
                raise SlackError("no_reaction")
            entry["users"].remove(me)
        entry["count"] = len(entry["users"])
        message["reactions"] = [r for r in reactions if r.get("count")]
        self.reactions_log.append(
            RecordedReaction(str(params["channel"]), str(message["ts"]), name, added)
        )
        return {}

    def _set_status(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params, "channel_id")
        if not params.get("thread_ts"):
            raise SlackError("invalid_arguments")
        self.statuses.append(
            RecordedStatus(channel, str(params["thread_ts"]), str(params.get("status", "")))
        )
        return {}

    def _suggested_prompts(self, params: dict[str, Any]) -> dict[str, Any]:
        self._channel(params, "channel_id")
        prompts = params.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        # Slack takes 1 to 4 prompts, each a title and the message it sends.
        if (
            not params.get("thread_ts")
            or not isinstance(prompts, list)
            or not 1 <= len(prompts) <= 4
        ):
            raise SlackError("invalid_arguments")
        for prompt in prompts:
            if not isinstance(prompt, dict) or not prompt.get("title") or not prompt.get("message"):
                raise SlackError("invalid_arguments")
        return {}

    def _set_title(self, params: dict[str, Any]) -> dict[str, Any]:
        self._channel(params, "channel_id")
        if not params.get("thread_ts") or not str(params.get("title") or "").strip():
            raise SlackError("invalid_arguments")
        return {}
