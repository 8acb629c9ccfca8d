"""The fake Slack Web API's read methods: ``auth.test``, ``conversations.info`` / ``.history`` /
``.replies`` / ``.members``, ``users.info``, ``users.conversations``, ``pins.list`` and
``files.info``, paged and bounded as
Slack pages and bounds them."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from chanctx.bot.replay.fake_slack_wire import (
    cursor_position,
    decode_cursor,
    encode_cursor,
    int_param,
    truthy,
    ts_value,
)
from chanctx.bot.replay.fake_stream import SlackError

__all__ = ["ReadMethods"]


class ReadMethods:
    """Mixed into FakeSlackAPI, whose storage these handlers use (called with its lock held)."""

    # Provided by FakeSlackAPI.
    _auth: dict[str, Any]
    _channels: dict[str, Any]
    _users: dict[str, Any]
    _files: dict[str, Any]
    _pins: dict[str, list[str]]
    _max_replies: int
    _max_history: int
    _messages: dict[str, dict[str, dict[str, Any]]]
    _issued: set[str]  # every cursor handed out: Slack refuses one it did not issue

    def _channel(self, params: Mapping[str, Any], name: str = "channel") -> str:
        raise NotImplementedError

    def _public(self, message: Mapping[str, Any], *, metadata: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def _public_file(self, file: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def _sorted(messages: Iterable[dict[str, Any]], newest_first: bool = False) -> list[Any]:
        raise NotImplementedError

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": "https://fake.slack.test/", "is_enterprise_install": False, **self._auth}

    def _conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        """The fixture's channel, with the flags Slack always sends filled in (never its
        ``members``: conversations.members lists those)."""
        channel = self._channel(params)
        info = {k: v for k, v in (self._channels.get(channel) or {}).items() if k != "members"}
        is_im = bool(info.get("is_im", channel.startswith("D")))
        private = bool(info.get("is_private", False))
        name = str(info.get("name") or "")
        defaults = {
            "id": channel, "name": name, "name_normalized": name.lower(),
            "is_channel": not is_im and not private, "is_group": False, "is_im": is_im,
            "is_mpim": False, "is_private": private or is_im, "is_archived": False,
            "is_general": False, "is_shared": False, "is_org_shared": False,
            "is_ext_shared": False, "is_member": True, "created": 0,
        }  # fmt: skip
        return {"channel": {**defaults, **info}}

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self._users.get(str(params.get("user")))
        if user is None:
            raise SlackError("user_not_found")
        team = self._auth.get("team_id", "")
        defaults = {"team_id": team, "deleted": False, "is_bot": False, "is_app_user": False}
        return {"user": {**defaults, **user}}

    def _page(
        self, items: list[dict[str, Any]], params: dict[str, Any], limit: int, newest_first: bool
    ) -> dict[str, Any]:
        if params.get("cursor"):
            at = decode_cursor(self._redeem(str(params["cursor"])))
            items = [
                m
                for m in items
                if (ts_value(m["ts"]) <= at if newest_first else ts_value(m["ts"]) >= at)
            ]
        page, rest = items[:limit], items[limit:]
        metadata = truthy(params.get("include_all_metadata"))
        return {
            "messages": [self._public(m, metadata=metadata) for m in page],
            "has_more": bool(rest),
            "response_metadata": {"next_cursor": self._issue(rest[0]["ts"]) if rest else ""},
        }

    def _issue(self, position: str, kind: str = "next_ts") -> str:
        cursor = encode_cursor(position, kind)
        self._issued.add(cursor)
        return cursor

    def _redeem(self, cursor: str) -> str:
        if cursor not in self._issued:
            raise SlackError("invalid_cursor")
        return cursor

    @staticmethod
    def _in_range(params: Mapping[str, Any]) -> Callable[[dict[str, Any]], bool]:
        oldest = ts_value(params.get("oldest") or 0)
        latest = ts_value(params["latest"]) if params.get("latest") else None
        inclusive = truthy(params.get("inclusive"))

        def check(message: dict[str, Any]) -> bool:
            ts = ts_value(message["ts"])
            if inclusive:
                return oldest <= ts and (latest is None or ts <= latest)
            return oldest < ts and (latest is None or ts < latest)

        return check

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        if (self._channels.get(channel) or {}).get("is_member") is False:
            raise SlackError("not_in_channel")  # a channel the bot was not added to
        messages = self._messages.get(channel, {}).values()
        in_range = self._in_range(params)
        timeline = [
            m
            for m in messages
            if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
        ]
        items = self._sorted(filter(in_range, timeline), newest_first=True)
        limit = int_param(params, "limit", min(100, self._max_history), self._max_history)
        pins = self._pins.get(str(params["channel"]), [])
        # Keys Slack's schema requires of a history answer.
        counts = {"pin_count": len(pins), "channel_actions_count": 0, "channel_actions_ts": None}
        return {**self._page(items, params, limit, newest_first=True), **counts}

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        messages = self._messages.get(self._channel(params), {})
        root_ts = str(params.get("ts") or "")
        root = messages.get(root_ts)
        if root is not None and root.get("thread_ts") not in (None, root_ts):
            return self._page([root], params, 1, newest_first=False)  # a reply's ts: itself
        in_range = self._in_range(params)
        replies = [
            m for m in messages.values() if m.get("thread_ts") == root_ts and m["ts"] != root_ts
        ]
        items = ([root] if root is not None else []) + self._sorted(filter(in_range, replies))
        if not items:
            raise SlackError("thread_not_found")
        limit = int_param(params, "limit", self._max_replies, self._max_replies)
        page = self._page(items, params, limit, newest_first=False)
        if root is not None and page["messages"] and page["messages"][0]["ts"] == root_ts:
            page["messages"][0].setdefault("subscribed", False)  # the caller's, as Slack says
        return page

    def _conversations_members(self, params: dict[str, Any]) -> dict[str, Any]:
        """From ``slack_api.json`` channels' ``members`` (none listed: nobody), paginated."""
        channel = self._channel(params)
        if channel not in self._channels:
            raise SlackError("channel_not_found")
        members = [str(m) for m in self._channels[channel].get("members") or []]
        start = 0
        if params.get("cursor"):
            user = cursor_position(self._redeem(str(params["cursor"])), "user")
            if user not in members:
                raise SlackError("invalid_cursor")
            start = members.index(user)
        limit = int_param(params, "limit", 100, 1000)
        page = members[start : start + limit]
        more = start + limit < len(members)
        return {
            "members": page,
            "response_metadata": {
                "next_cursor": self._issue(members[start + limit], "user") if more else ""
            },
        }

    def _users_conversations(self, params: dict[str, Any]) -> dict[str, Any]:
        """The conversations the bot is in (a fixture channel not marked ``is_member: false``)
        of the asked ``types`` (default public channels), paged by channel id; the objects
        carry neither ``is_member`` nor ``num_members``, as Slack's answer does not."""
        types = str(params.get("types") or "public_channel").split(",")
        unknown = set(types) - {"public_channel", "private_channel", "mpim", "im"}
        if unknown:
            raise SlackError("invalid_types")
        listed = []
        for channel in sorted(self._channels):
            info = self._conversations_info({"channel": channel})["channel"]
            if info.pop("is_member") is False:
                continue
            if truthy(params.get("exclude_archived")) and info["is_archived"]:
                continue
            kind = (
                "im" if info["is_im"] else "mpim" if info["is_mpim"]
                else "private_channel" if info["is_private"] else "public_channel"
            )  # fmt: skip
            if kind in types:
                listed.append(info)
        start = 0
        if params.get("cursor"):
            after = cursor_position(self._redeem(str(params["cursor"])), "channel")
            start = next((n for n, c in enumerate(listed) if c["id"] == after), -1)
            if start < 0:
                raise SlackError("invalid_cursor")
        limit = int_param(params, "limit", 100, 1000)
        page, rest = listed[start : start + limit], listed[start + limit :]
        cursor = self._issue(rest[0]["id"], "channel") if rest else ""
        return {"channels": page, "response_metadata": {"next_cursor": cursor}}

    def _pins_list(self, params: dict[str, Any]) -> dict[str, Any]:
        """The channel's pinned messages, newest pin first, as ``pins.list`` lists them (a
        pinned message this fake does not hold is left out, as Slack omits deleted ones)."""
        channel = self._channel(params)
        stored = self._messages.get(channel, {})
        items = [
            {
                "type": "message",
                "channel": channel,
                "created": int(float(ts)),
                "created_by": str(stored[ts].get("user") or ""),
                "message": copy.deepcopy(stored[ts]),
            }
            for ts in reversed(self._pins.get(channel, []))
            if ts in stored
        ]
        return {"items": items}

    def _files_info(self, params: dict[str, Any]) -> dict[str, Any]:
        file_id = str(params.get("file") or "")
        if file_id not in self._files:
            raise SlackError("file_not_found")
        return {"file": self._public_file({"id": file_id}), "comments": []}
