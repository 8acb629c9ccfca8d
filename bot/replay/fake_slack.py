"""A fake of the Slack Web API on loopback, for tests and offline replays.

The real ``slack_sdk.WebClient`` talks to it unchanged (``base_url=fake.url``), so tests exercise
the SDK's own request building, error mapping and retries. It serves a fixture's
``slack_api.json`` (keys ``auth``, ``channels``, ``users``, ``history``, ``files``) plus whatever
the client itself posted, records every call (never the token) and supports fault injection.

    with FakeSlackAPI(state) as fake:
        client = slack_sdk.WebClient(token="xoxb-test", base_url=fake.url)
        client.conversations_history(channel="C1", limit=15)
        fake.call_counts()  # {"conversations.history": 1}

Behaviour worth knowing:

* ``conversations.history`` lists top-level messages and broadcast replies, newest first;
  ``conversations.replies`` lists the root (first page only) then the replies, oldest first.
  Cursors are Slack-shaped (base64 of ``"next_ts:<ts>"``), so they survive messages being
  posted between pages. A ``ts`` that names a reply answers with that one reply.
* Posting a reply updates the root's ``reply_count``, ``reply_users`` and ``latest_reply``, so
  does ``add_message`` of a reply; messages seeded from ``state`` are served as recorded.
* Every file object served (in messages and by ``files.info``) points at this server:
  ``GET /files/<id>[/<name>]`` returns the bytes of ``state["files"][id]`` (``content_text`` or
  base64 ``content_b64``), recorded as the call ``FILE_DOWNLOAD``. A real Slack host is never named.
* ``chat.startStream`` / ``appendStream`` / ``stopStream`` follow Slack's rules (fake_stream.py);
  ``sent`` lists every call that put text on a message (post, stream call, update), in order.
* ``socket_mode=True`` also serves Socket Mode (``FakeSocketMode``): ``apps.connections.open``,
  called with an app-level token (``xapp-``), hands out its URL, and ``POST /socket-mode/send``
  (``{"payload": ..., "retry_attempt": n}``) delivers an envelope to the connected app and answers
  ``{"envelope_id": ..., "acked": bool}`` once acknowledged or after 5 s: how a test or a
  smoke test from another process sends events to a bot in Socket Mode.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import email.parser
import email.policy
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlsplit

from chanctx.bot.replay._loopback import LoopbackServer
from chanctx.bot.replay.fake_socket_mode import FakeSocketMode
from chanctx.bot.replay.fake_stream import STREAM_TTL, SlackError, StreamMethods, check_blocks

__all__ = [
    "DEFAULT_AUTH",
    "FILE_DOWNLOAD",
    "FakeSlackAPI",
    "RecordedCall",
    "RecordedReaction",
    "RecordedStatus",
]

MARKDOWN_TEXT_LIMIT = 12_000  # chat.postMessage markdown_text
# Who the bot is when the fixture does not say (``auth.test``); each key the fixture gives wins.
DEFAULT_AUTH: Final[dict[str, str]] = {
    "user_id": "U0REPLAYBOT",
    "bot_id": "B0REPLAYBOT",
    "team_id": "T0REPLAY01",
    "user": "chanctx",
    "team": "Replay",
}
TEXT_LIMIT = 40_000  # Slack refuses text past 40,000 characters (msg_too_long)

# What `post_error_rate` fails: every call that puts an answer in front of a user.
_CHAOS_METHODS: Final = frozenset(
    {"chat.postMessage", "chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update"}
)
# The pseudo-method under which file downloads are recorded (not a Web API method).
FILE_DOWNLOAD: Final = "GET /files"
_AUTH_PREFIXES: Final = ("Bearer xoxb-", "Bearer xoxp-")
_MICROS: Final = 1_000_000


@dataclass(frozen=True)
class RecordedCall:
    method: str
    params: dict[str, Any]  # query + body, without any "token" field
    authed: bool  # a well-formed bot/user token came in the Authorization header


@dataclass(frozen=True)
class RecordedReaction:
    channel: str
    ts: str
    name: str
    added: bool  # reactions.add (True) or reactions.remove (False)


@dataclass(frozen=True)
class RecordedStatus:
    channel: str
    thread_ts: str
    status: str


@dataclass
class _Fault:
    method: str  # "*" matches any method
    remaining: int
    status: int | None = None
    retry_after: float | None = None
    error: str | None = None
    delay: float = 0.0
    applied: bool = False  # the call is carried out first, then fails (a lost answer)


@dataclass(frozen=True)
class _Reply:
    status: int
    body: Any  # a JSON value, or bytes sent as they are
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


_SlackError = SlackError  # raised by handlers for an ``{"ok": false, "error": ...}`` answer


def _ts_value(ts: Any) -> Decimal:
    # Decimal compares Slack ts exactly; params may also be "0" or "1700000000" (no fraction).
    try:
        value = Decimal(str(ts))
    except InvalidOperation:
        raise _SlackError("invalid_ts_latest") from None
    if not value.is_finite():
        raise _SlackError("invalid_ts_latest")
    return value


def _int_param(params: Mapping[str, Any], name: str, default: int, cap: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise _SlackError("invalid_arguments") from None
    return default if value <= 0 else min(value, cap)


def _message_text(params: Mapping[str, Any]) -> str:
    """The text of a chat.postMessage, under Slack's documented rules: ``markdown_text`` (at
    most 12,000 characters) never with ``text`` or ``blocks``; some content is required."""
    markdown = params.get("markdown_text")
    if markdown is not None:
        if params.get("text") or params.get("blocks"):
            raise _SlackError("markdown_text_conflict")
        if not isinstance(markdown, str) or not markdown.strip():
            raise _SlackError("no_text")
        if len(markdown) > MARKDOWN_TEXT_LIMIT:
            raise _SlackError("msg_too_long")
        return markdown  # Slack renders it; the stored text keeps what was posted
    if not any(params.get(k) for k in ("text", "blocks", "attachments")):
        raise _SlackError("no_text")
    text = str(params.get("text") or "")
    if len(text) > TEXT_LIMIT:
        raise _SlackError("msg_too_long")
    return text


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in {"1", "true"}


def _encode_cursor(ts: str) -> str:
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def _decode_cursor(cursor: str) -> Decimal:
    try:
        text = base64.b64decode(cursor, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise _SlackError("invalid_cursor") from None
    if not text.startswith("next_ts:"):
        raise _SlackError("invalid_cursor")
    try:
        return _ts_value(text.removeprefix("next_ts:"))
    except _SlackError:
        raise _SlackError("invalid_cursor") from None


def _parse_body(content_type: str, raw: bytes) -> dict[str, Any]:
    """Form-encoded, JSON or multipart: the three ways WebClient sends arguments."""
    if not raw:
        return {}
    if content_type.startswith("application/json"):
        body = json.loads(raw)
        return body if isinstance(body, dict) else {}
    if content_type.startswith("multipart/form-data"):
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields: dict[str, Any] = {}
        for part in parsed.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = payload.decode("utf-8", "replace")
        return fields
    return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))


class FakeSlackAPI(StreamMethods, LoopbackServer):
    """A threaded HTTP server on 127.0.0.1 (a free port) answering like the Slack Web API."""

    def __init__(
        self,
        state: Mapping[str, Any] | None = None,
        *,
        clock: Callable[[], float] | None = None,
        max_replies_limit: int = 1000,
        port: int = 0,
        post_error_rate: float = 0.0,
        seed: int = 0,
        socket_mode: bool = False,
        stream_ttl: float = STREAM_TTL,
    ) -> None:
        """``max_replies_limit`` caps ``conversations.replies`` pages (15 for new apps since 2025).

        ``state["faults"]`` (optional) is a list of ``{"method", "n", "status", "retry_after",
        "error"}``, each registered as ``fail_next(method, n, status=..., retry_after=...,
        error=...)``; only ``method`` is required, an absent key takes ``fail_next``'s default.
        """
        state = copy.deepcopy(dict(state or {}))
        # A fixture without ``auth`` (slack_api.json is optional) still gets a bot identity:
        # without one nothing the bot posts or streams would count as its own.
        self._auth: dict[str, Any] = {**DEFAULT_AUTH, **dict(state.get("auth") or {})}
        self._channels: dict[str, Any] = dict(state.get("channels") or {})
        self._users: dict[str, Any] = dict(state.get("users") or {})
        self._files: dict[str, Any] = dict(state.get("files") or {})
        # channel -> pinned message ts, oldest pin first (``pins.list``; pin events mirrored).
        self._pins: dict[str, list[str]] = {
            str(channel): [str(ts) for ts in pinned]
            for channel, pinned in (state.get("pins") or {}).items()
        }
        self._clock = clock or time.time
        self._max_replies = max_replies_limit
        self._lock = threading.RLock()
        # channel -> ts -> message dict; sorted only when read (fixtures are small).
        self._messages: dict[str, dict[str, dict[str, Any]]] = {}
        self._last_micros: dict[str, int] = {}
        self._calls: list[RecordedCall] = []
        self._faults: list[_Fault] = []
        self.posted: list[dict[str, Any]] = []  # chat.postMessage results, with "channel"
        self.reactions_log: list[RecordedReaction] = []
        self.statuses: list[RecordedStatus] = []
        self._init_streams(stream_ttl)
        for channel, messages in (state.get("history") or {}).items():
            for message in messages:
                self._store(channel, message)
        for fault in state.get("faults") or []:
            method = fault.get("method") if isinstance(fault, dict) else None
            if not isinstance(method, str) or not method:
                raise ValueError(f"a fault needs a 'method', got {fault!r}")
            options = {k: fault[k] for k in ("status", "retry_after", "error") if k in fault}
            self.fail_next(method, int(fault.get("n", 1)), **options)
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self._auth_test,
            "conversations.info": self._conversations_info,
            "users.info": self._users_info,
            "conversations.history": self._history,
            "conversations.replies": self._replies,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.startStream": self._start_stream,
            "chat.appendStream": self._append_stream,
            "chat.stopStream": self._stop_stream,
            "reactions.add": lambda p: self._react(p, added=True),
            "reactions.remove": lambda p: self._react(p, added=False),
            "assistant.threads.setStatus": self._set_status,
            "assistant.threads.setSuggestedPrompts": self._suggested_prompts,
            "assistant.threads.setTitle": self._set_title,
            "conversations.members": self._conversations_members,
            "files.info": self._files_info,
            "pins.list": self._pins_list,
        }
        # `chanctx fakes --post-error-rate`: that share of answer calls (posts, stream calls,
        # updates) fails with a 500 or a 429 (Retry-After 1), chosen by a seeded generator so a
        # run can be repeated.
        if not 0.0 <= post_error_rate <= 1.0:
            raise ValueError(f"post_error_rate must be between 0 and 1, got {post_error_rate!r}")
        self.post_error_rate = post_error_rate
        self._chaos = random.Random(seed)
        self.socket_mode = FakeSocketMode() if socket_mode else None
        self._listen(self._handler_class(), name="fake-slack", port=port)
        self.root = f"{self.origin}/"
        self.url = f"{self.root}api/"

    # --- seeding, inspection, fault injection --------------------------------------------

    def add_message(self, channel: str, message: Mapping[str, Any]) -> None:
        """Seed one message (it needs a "ts"); a reply updates its root like a post does."""
        with self._lock:
            stored = self._store(channel, message)
            self._note_reply(channel, stored)

    def mirror_event(self, event: Mapping[str, Any]) -> None:
        """Apply an Events API event to the stored state, as real Slack's state already reflects it.

        Replay delivers a recorded stream; without this, Slack "would not know" the messages the
        stream describes (``reactions.add`` on them would fail, history would miss them).
        """
        if event.get("type") in ("pin_added", "pin_removed"):
            self._mirror_pin(event)
            return
        channel = event.get("channel")
        if event.get("type") not in ("message", "app_mention") or not isinstance(channel, str):
            return
        subtype = event.get("subtype")
        with self._lock:
            stored = self._messages.setdefault(channel, {})
            if subtype == "message_changed" and isinstance(event.get("message"), dict):
                changed = event["message"]
                if str(changed.get("ts")) in stored:
                    stored[str(changed["ts"])].update(
                        text=changed.get("text", ""), edited=changed.get("edited")
                    )
            elif subtype == "message_deleted":
                stored.pop(str(event.get("deleted_ts")), None)
            elif event.get("ts") and not event.get("hidden") and str(event["ts"]) not in stored:
                message = {
                    k: v
                    for k, v in event.items()
                    if k not in ("channel", "event_ts", "channel_type")
                }
                message["type"] = "message"  # an app_mention describes a plain message
                try:
                    self.add_message(channel, message)
                except ValueError:
                    return  # a malformed ts: the bot ignores it too

    def _mirror_pin(self, event: Mapping[str, Any]) -> None:
        item = event.get("item")
        if not isinstance(item, dict):
            return
        channel = item.get("channel") or event.get("channel_id")
        if not isinstance(channel, str):
            return
        message = item.get("message")
        ts = str(message.get("ts")) if isinstance(message, dict) else ""
        if not ts:
            return
        with self._lock:
            pins = self._pins.setdefault(channel, [])
            if ts in pins:
                pins.remove(ts)
            if event.get("type") == "pin_added":
                pins.append(ts)

    def identity(self) -> dict[str, Any]:
        """Who the bot is here (what ``auth.test`` answers), without making a call."""
        return dict(self._auth)

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """Every stored message of ``channel`` (top-level and replies), oldest first."""
        with self._lock:
            return copy.deepcopy(self._sorted(self._messages.get(channel, {}).values()))

    @property
    def calls(self) -> list[RecordedCall]:
        with self._lock:
            return list(self._calls)

    def call_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(call.method for call in self._calls))

    def fail_next(
        self,
        method: str,
        n: int = 1,
        *,
        status: int = 429,
        retry_after: float | None = 1,
        error: str | None = None,
        applied: bool = False,
    ) -> None:
        """Fail the next ``n`` calls of ``method`` ("*": any method).

        429 answers ``{"ok": false, "error": "ratelimited"}`` with a Retry-After header; 5xx a
        plain-text body; any other status (200 included) ``{"ok": false, "error": error}``.
        ``applied``: the call is carried out before the failure is answered, as Slack warns a
        5xx may mean ("it's possible some aspect of the operation succeeded").
        """
        with self._lock:
            self._faults.append(_Fault(method, n, status, retry_after, error, applied=applied))

    def slow_next(self, method: str, n: int = 1, seconds: float = 1.0) -> None:
        """Sleep ``seconds`` before answering each of the next ``n`` calls of ``method``."""
        with self._lock:
            self._faults.append(_Fault(method, n, delay=seconds))

    # --- lifecycle -----------------------------------------------------------------------

    # --- storage -------------------------------------------------------------------------

    def _store(self, channel: str, message: Mapping[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(dict(message))
        try:  # malformed seeds fail here, not on some later read
            value = _ts_value(stored["ts"])
        except (KeyError, _SlackError):
            raise ValueError(f"a seeded message needs a Slack ts, got {message!r}") from None
        self._messages.setdefault(channel, {})[str(stored["ts"])] = stored
        # Slack's ts only grow within a channel: what we post comes after what is there.
        micros = int(value * _MICROS)
        self._last_micros[channel] = max(self._last_micros.get(channel, -1), micros)
        return stored

    @staticmethod
    def _sorted(messages: Iterable[dict[str, Any]], newest_first: bool = False) -> list[Any]:
        return sorted(messages, key=lambda m: _ts_value(m["ts"]), reverse=newest_first)

    def _now(self) -> float:
        return self._clock()

    def _next_ts(self, channel: str) -> str:
        # From the clock, but strictly increasing per channel and never an existing ts.
        micros = max(round(self._clock() * _MICROS), self._last_micros.get(channel, -1) + 1)
        existing = self._messages.get(channel, {})
        while f"{micros // _MICROS}.{micros % _MICROS:06d}" in existing:
            micros += 1
        self._last_micros[channel] = micros
        return f"{micros // _MICROS}.{micros % _MICROS:06d}"

    def _note_reply(self, channel: str, reply: dict[str, Any]) -> None:
        root_ts = reply.get("thread_ts")
        root = self._messages.get(channel, {}).get(str(root_ts))
        if root is None or root_ts == reply["ts"]:
            return
        root["thread_ts"] = root_ts
        root["reply_count"] = int(root.get("reply_count") or 0) + 1
        if _ts_value(reply["ts"]) > _ts_value(root.get("latest_reply") or 0):
            root["latest_reply"] = reply["ts"]
        users = list(root.get("reply_users") or [])
        if reply.get("user") and reply["user"] not in users:
            users.append(reply["user"])
        root["reply_users"], root["reply_users_count"] = users, len(users)

    def _public(self, message: Mapping[str, Any], *, metadata: bool = True) -> dict[str, Any]:
        out = copy.deepcopy(dict(message))
        if not metadata:  # Slack returns message metadata only with include_all_metadata
            out.pop("metadata", None)
        if isinstance(out.get("files"), list):
            out["files"] = [self._public_file(f) for f in out["files"] if isinstance(f, dict)]
        return out

    def _public_file(self, file: Mapping[str, Any]) -> dict[str, Any]:
        file_id = str(file.get("id", ""))
        known = self._files.get(file_id) or {}
        out = {
            k: v for k, v in {**known, **file}.items() if k not in ("content_text", "content_b64")
        }
        out.setdefault("name", file_id)
        if "size" not in out and known:
            out["size"] = len(self._file_bytes(known))
        url = f"{self.root}files/{quote(file_id)}/{quote(str(out['name']))}"
        out["url_private"] = out["url_private_download"] = url
        return out

    @staticmethod
    def _file_bytes(file: Mapping[str, Any]) -> bytes:
        if "content_b64" in file:
            return base64.b64decode(file["content_b64"])
        return str(file.get("content_text", "")).encode()

    def _channel(self, params: Mapping[str, Any], name: str = "channel") -> str:
        channel = str(params.get(name) or "")
        if channel not in self._channels and channel not in self._messages:
            raise _SlackError("channel_not_found")
        return channel

    def _message(self, params: Mapping[str, Any], ts_name: str = "ts") -> dict[str, Any]:
        message = self._messages.get(self._channel(params), {}).get(str(params.get(ts_name)))
        if message is None:
            raise _SlackError("message_not_found")
        return message

    # --- method handlers (called with the lock held) -------------------------------------

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": "https://fake.slack.test/", **self._auth}

    def _conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        info = self._channels.get(self._channel(params))
        return {"channel": info or {"id": params["channel"]}}

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = self._users.get(str(params.get("user")))
        if user is None:
            raise _SlackError("user_not_found")
        return {"user": user}

    def _page(
        self, items: list[dict[str, Any]], params: dict[str, Any], limit: int, newest_first: bool
    ) -> dict[str, Any]:
        if params.get("cursor"):
            at = _decode_cursor(str(params["cursor"]))
            items = [
                m
                for m in items
                if (_ts_value(m["ts"]) <= at if newest_first else _ts_value(m["ts"]) >= at)
            ]
        page, rest = items[:limit], items[limit:]
        metadata = _truthy(params.get("include_all_metadata"))
        return {
            "messages": [self._public(m, metadata=metadata) for m in page],
            "has_more": bool(rest),
            "response_metadata": {"next_cursor": _encode_cursor(rest[0]["ts"]) if rest else ""},
        }

    @staticmethod
    def _in_range(params: Mapping[str, Any]) -> Callable[[dict[str, Any]], bool]:
        oldest = _ts_value(params.get("oldest") or 0)
        latest = _ts_value(params["latest"]) if params.get("latest") else None
        inclusive = _truthy(params.get("inclusive"))

        def check(message: dict[str, Any]) -> bool:
            ts = _ts_value(message["ts"])
            if inclusive:
                return oldest <= ts and (latest is None or ts <= latest)
            return oldest < ts and (latest is None or ts < latest)

        return check

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        messages = self._messages.get(self._channel(params), {}).values()
        in_range = self._in_range(params)
        timeline = [
            m
            for m in messages
            if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
        ]
        items = self._sorted(filter(in_range, timeline), newest_first=True)
        limit = _int_param(params, "limit", 100, 999)
        return self._page(items, params, limit, newest_first=True)

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
            raise _SlackError("thread_not_found")
        limit = _int_param(params, "limit", self._max_replies, self._max_replies)
        return self._page(items, params, limit, newest_first=False)

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel") or "")
        if not channel:
            raise _SlackError("channel_not_found")
        text = _message_text(params)
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
        for key in ("attachments", "metadata"):
            if params.get(key):
                message[key] = params[key]
        if params.get("thread_ts"):
            target = self._messages.get(channel, {}).get(str(params["thread_ts"]))
            # A reply to a reply lands in the same thread, as on Slack.
            message["thread_ts"] = str((target or {}).get("thread_ts") or params["thread_ts"])
            if _truthy(params.get("reply_broadcast")):
                message["subtype"] = "thread_broadcast"
        stored = self._store(channel, message)
        self._note_reply(channel, stored)
        extra = {"markdown_text": params["markdown_text"]} if params.get("markdown_text") else {}
        self.posted.append({"channel": channel, **copy.deepcopy(stored), **extra})
        self.log_sent("chat.postMessage", channel, stored, str(params.get("markdown_text") or ""))
        return {"channel": channel, "ts": stored["ts"], "message": self._public(stored)}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message(params)
        mine = {self._auth.get("user_id"), self._auth.get("bot_id")} - {None, ""}
        if message.get("user") not in mine and message.get("bot_id") not in mine:
            raise _SlackError("cant_update_message")
        if params.get("markdown_text") is not None:
            message["text"] = _message_text(params)  # the same rules as chat.postMessage
        blocks = check_blocks(params.get("blocks"))
        if blocks:
            message["blocks"] = blocks
        for key in ("text", "attachments", "metadata"):
            if params.get(key) not in (None, ""):
                message[key] = params[key]
        # An update ends a stream: the message is now what the update says.
        self._streams.pop((str(params["channel"]), str(message["ts"])), None)
        self.log_sent(
            "chat.update", str(params["channel"]), message, str(params.get("markdown_text") or "")
        )
        edit_ts = self._next_ts(str(params["channel"]))
        message["edited"] = {"user": self._auth.get("user_id", ""), "ts": edit_ts}
        return {
            "channel": params["channel"],
            "ts": message["ts"],
            "text": message.get("text", ""),
            "message": self._public(message),
        }

    def _react(self, params: dict[str, Any], *, added: bool) -> dict[str, Any]:
        message = self._message(params, "timestamp")
        name, me = str(params.get("name") or ""), str(self._auth.get("user_id", ""))
        if not name:
            raise _SlackError("invalid_name")
        reactions: list[dict[str, Any]] = message.setdefault("reactions", [])
        entry = next((r for r in reactions if r.get("name") == name), None)
        if added:
            if entry is None:
                entry = {"name": name, "users": [], "count": 0}
                reactions.append(entry)
            if me in entry["users"]:
                raise _SlackError("already_reacted")
            entry["users"].append(me)
        else:
            if entry is None or me not in entry.get("users", []):
                raise _SlackError("no_reaction")
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
            raise _SlackError("invalid_arguments")
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
            raise _SlackError("invalid_arguments")
        for prompt in prompts:
            if not isinstance(prompt, dict) or not prompt.get("title") or not prompt.get("message"):
                raise _SlackError("invalid_arguments")
        return {}

    def _set_title(self, params: dict[str, Any]) -> dict[str, Any]:
        self._channel(params, "channel_id")
        if not params.get("thread_ts") or not str(params.get("title") or "").strip():
            raise _SlackError("invalid_arguments")
        return {}

    def _conversations_members(self, params: dict[str, Any]) -> dict[str, Any]:
        """From ``slack_api.json`` channels' ``members`` (none listed: nobody), paginated."""
        channel = self._channel(params)
        if channel not in self._channels:
            raise _SlackError("channel_not_found")
        members = [str(m) for m in self._channels[channel].get("members") or []]
        start = int(str(params.get("cursor") or "0") or 0)
        limit = _int_param(params, "limit", 100, 1000)
        page = members[start : start + limit]
        more = start + limit < len(members)
        return {
            "members": page,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

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
            raise _SlackError("file_not_found")
        return {"file": self._public_file({"id": file_id}), "comments": []}

    # --- serving -------------------------------------------------------------------------

    def _take_faults(self, method: str) -> tuple[_Fault | None, float]:
        """The first pending error fault for ``method`` and the delay to apply, both consumed."""
        error: _Fault | None = None
        delay = 0.0
        for fault in self._faults:
            if fault.method not in ("*", method) or fault.remaining <= 0:
                continue
            if fault.delay and not delay:
                delay, fault.remaining = fault.delay, fault.remaining - 1
            elif fault.status is not None and error is None:
                error, fault.remaining = fault, fault.remaining - 1
        self._faults = [f for f in self._faults if f.remaining > 0]
        chaos = error is None and method in _CHAOS_METHODS and self.post_error_rate > 0
        if chaos and self._chaos.random() < self.post_error_rate:
            status = self._chaos.choice([500, 429])
            error = _Fault(method, 0, status, 1 if status == 429 else None)
        return error, delay

    def _serve(self, verb: str, path: str, headers: Mapping[str, str], raw: bytes) -> _Reply:
        url = urlsplit(path)
        params: dict[str, Any] = dict(parse_qsl(url.query, keep_blank_values=True))
        try:
            params.update(_parse_body(headers.get("content-type", ""), raw))
        except ValueError:
            return _Reply(200, {"ok": False, "error": "invalid_json"})
        params.pop("token", None)  # a token sent as a form field is never recorded either
        authed = headers.get("authorization", "").startswith(_AUTH_PREFIXES)
        if url.path == "/socket-mode/send" and verb == "POST":
            return self._socket_mode_send(raw)
        if url.path.startswith("/files/") and verb == "GET":
            method, params = FILE_DOWNLOAD, {"file": url.path.split("/")[2]}
        elif url.path.startswith("/api/"):
            method = url.path.removeprefix("/api/")
        else:
            return _Reply(404, b"not found", "text/plain")
        with self._lock:
            self._calls.append(RecordedCall(method, params, authed))
            fault, delay = self._take_faults(method)
        if delay:
            time.sleep(delay)
        if fault is not None and not fault.applied:
            return self._fault_reply(fault)
        if method == "apps.connections.open":
            return self._connections_open(headers.get("authorization", ""))
        if not authed:
            if method == FILE_DOWNLOAD:
                return _Reply(403, b"not_authed", "text/plain")
            return _Reply(200, {"ok": False, "error": "not_authed"})
        with self._lock:
            if method == FILE_DOWNLOAD:
                file = self._files.get(params["file"])
                if file is None:
                    return _Reply(404, b"not found", "text/plain")
                mimetype = str(file.get("mimetype") or "application/octet-stream")
                return _Reply(200, self._file_bytes(file), mimetype)
            handler = self._handlers.get(method)
            if handler is None:
                return _Reply(404, {"ok": False, "error": "unknown_method"})
            try:
                reply = _Reply(200, {"ok": True, **handler(params)})
            except _SlackError as error:
                reply = _Reply(200, {"ok": False, "error": str(error)})
            return reply if fault is None else self._fault_reply(fault)

    def _connections_open(self, authorization: str) -> _Reply:
        """Socket Mode's URL; Slack wants the app-level token here, never the bot's."""
        if not authorization.startswith("Bearer "):
            return _Reply(200, {"ok": False, "error": "not_authed"})
        if not authorization.startswith("Bearer xapp-"):
            return _Reply(200, {"ok": False, "error": "not_allowed_token_type"})
        if self.socket_mode is None:
            return _Reply(200, {"ok": False, "error": "socket_mode_not_enabled"})
        return _Reply(200, {"ok": True, "url": self.socket_mode.url})

    def _socket_mode_send(self, raw: bytes) -> _Reply:
        if self.socket_mode is None:
            return _Reply(404, {"error": "this fake was started without socket_mode"})
        try:
            body = json.loads(raw)
            payload, attempt = body["payload"], int(body.get("retry_attempt") or 0)
        except (ValueError, KeyError, TypeError) as error:
            return _Reply(400, {"error": f"expected {{payload, retry_attempt?}}: {error!r}"})
        try:
            envelope_id = self.socket_mode.send(payload, retry_attempt=attempt)
        except ConnectionError as error:
            return _Reply(409, {"error": str(error)})
        acked = self.socket_mode.wait_ack(envelope_id, timeout=5.0)
        return _Reply(200, {"envelope_id": envelope_id, "acked": acked})

    def close(self) -> None:
        super().close()
        if self.socket_mode is not None:
            self.socket_mode.close()

    @staticmethod
    def _fault_reply(fault: _Fault) -> _Reply:
        assert fault.status is not None
        if fault.status == 429:
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return _Reply(
                429, {"ok": False, "error": fault.error or "ratelimited"}, headers=headers
            )
        if fault.status >= 500:
            text = fault.error or f"injected fault: HTTP {fault.status}"
            return _Reply(fault.status, text.encode(), "text/plain")
        return _Reply(fault.status, {"ok": False, "error": fault.error or "invalid_request"})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = fake._serve(self.command, self.path, headers, raw)
                payload = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status, HTTPStatus(reply.status).phrase)
                except ValueError:
                    self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                # The client may have given up (a timeout test): nothing left to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

            do_GET = do_POST = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler
