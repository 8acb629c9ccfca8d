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
  posted between pages; one the fake did not issue answers ``invalid_cursor``. A ``ts`` that
  names a reply answers with that one reply. ``tier="limited"`` bounds both (fake_slack_smoke.py).
* ``chat.update`` takes at most 4,000 characters of text and never a message still streaming
  (``streaming_state_conflict``); ``chat.postMessage`` truncates text past 40,000 characters
  with a ``message_truncated`` warning. ``failures`` lists every call that failed.
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
import copy
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlsplit

from chanctx.bot.replay._loopback import LoopbackServer
from chanctx.bot.replay.fake_slack_reads import ReadMethods
from chanctx.bot.replay.fake_slack_smoke import LIMITED_PAGE, TIERS, SmokeMethods
from chanctx.bot.replay.fake_slack_wire import (
    MICROS,
    Fault,
    RecordedCall,
    RecordedReaction,
    RecordedStatus,
    Reply,
    fault_reply,
    handler_class,
    oauth_access,
    parse_body,
    ts_value,
)
from chanctx.bot.replay.fake_slack_writes import WriteMethods
from chanctx.bot.replay.fake_socket_mode import FakeSocketMode
from chanctx.bot.replay.fake_stream import STREAM_TTL, SlackError

__all__ = [
    "DEFAULT_AUTH",
    "FILE_DOWNLOAD",
    "FakeSlackAPI",
    "RecordedCall",
    "RecordedReaction",
    "RecordedStatus",
]

logger = logging.getLogger("chanctx.fake_slack")

# Who the bot is when the fixture does not say (``auth.test``); each key the fixture gives wins.
DEFAULT_AUTH: Final[dict[str, str]] = {
    "user_id": "U0REPLAYBOT",
    "bot_id": "B0REPLAYBOT",
    "team_id": "T0REPLAY01",
    "user": "chanctx",
    "team": "Replay",
}

# What `post_error_rate` fails: every call that puts an answer in front of a user.
_CHAOS_METHODS: Final = frozenset(
    {"chat.postMessage", "chat.startStream", "chat.appendStream", "chat.stopStream", "chat.update"}
)
# The pseudo-method under which file downloads are recorded (not a Web API method).
FILE_DOWNLOAD: Final = "GET /files"
_AUTH_PREFIXES: Final = ("Bearer xoxb-", "Bearer xoxp-")


class FakeSlackAPI(ReadMethods, WriteMethods, SmokeMethods, LoopbackServer):
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
        tier: str = "standard",
        minute_seconds: float = 60.0,
    ) -> None:
        """``max_replies_limit`` caps ``conversations.replies`` pages (15 for new apps since 2025).

        ``tier="limited"``: ``conversations.history`` and ``conversations.replies`` as Slack
        serves them to apps not in the Marketplace since 2025: one call a minute per method
        (then HTTP 429 with Retry-After, timed by ``clock``) and at most 15 messages a call (a
        larger ``limit`` is clamped). ``"standard"``: Tier 3, 50 calls a minute per method
        (bursts allowed), pages as large as asked. ``minute_seconds`` shortens the minute both
        tiers count in, for tests and benchmarks that cannot wait real minutes.

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
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")
        self.tier = tier
        if not (0 < minute_seconds < 86_400):
            raise ValueError(f"minute_seconds must be a positive number, got {minute_seconds!r}")
        self.minute_seconds = float(minute_seconds)
        self._clock = clock or time.time
        limited = tier == "limited"
        self._max_replies = min(max_replies_limit, LIMITED_PAGE) if limited else max_replies_limit
        self._max_history = LIMITED_PAGE if limited else 999
        self._last_read: dict[str, float] = {}  # method -> when its tier bucket is full again
        self._lock = threading.RLock()
        # channel -> ts -> message dict; sorted only when read (fixtures are small).
        self._messages: dict[str, dict[str, dict[str, Any]]] = {}
        self._last_micros: dict[str, int] = {}
        self._calls: list[RecordedCall] = []
        self._issued: set[str] = set()
        self._faults: list[Fault] = []
        self.posted: list[dict[str, Any]] = []  # chat.postMessage results, with "channel"
        # Every Web API call that failed, injected or refused: (method, HTTP status, error).
        self.failures: list[tuple[str, int, str]] = []
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
            "users.conversations": self._users_conversations,
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
        self._listen(handler_class(self._serve), name="fake-slack", port=port)
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
            self._faults.append(Fault(method, n, status, retry_after, error, applied=applied))

    def slow_next(self, method: str, n: int = 1, seconds: float = 1.0) -> None:
        """Sleep ``seconds`` before answering each of the next ``n`` calls of ``method``."""
        with self._lock:
            self._faults.append(Fault(method, n, delay=seconds))

    # --- lifecycle -----------------------------------------------------------------------

    # --- storage -------------------------------------------------------------------------

    def _store(self, channel: str, message: Mapping[str, Any]) -> dict[str, Any]:
        stored = copy.deepcopy(dict(message))
        try:  # malformed seeds fail here, not on some later read
            value = ts_value(stored["ts"])
        except (KeyError, SlackError):
            raise ValueError(f"a seeded message needs a Slack ts, got {message!r}") from None
        self._messages.setdefault(channel, {})[str(stored["ts"])] = stored
        # Slack's ts only grow within a channel: what we post comes after what is there.
        micros = int(value * MICROS)
        self._last_micros[channel] = max(self._last_micros.get(channel, -1), micros)
        return stored

    @staticmethod
    def _sorted(messages: Iterable[dict[str, Any]], newest_first: bool = False) -> list[Any]:
        return sorted(messages, key=lambda m: ts_value(m["ts"]), reverse=newest_first)

    def _now(self) -> float:
        return self._clock()

    def _next_ts(self, channel: str) -> str:
        # From the clock, but strictly increasing per channel and never an existing ts.
        micros = max(round(self._clock() * MICROS), self._last_micros.get(channel, -1) + 1)
        existing = self._messages.get(channel, {})
        while f"{micros // MICROS}.{micros % MICROS:06d}" in existing:
            micros += 1
        self._last_micros[channel] = micros
        return f"{micros // MICROS}.{micros % MICROS:06d}"

    def _note_reply(self, channel: str, reply: dict[str, Any]) -> None:
        root_ts = reply.get("thread_ts")
        root = self._messages.get(channel, {}).get(str(root_ts))
        if root is None or root_ts == reply["ts"]:
            return
        root["thread_ts"] = root_ts
        if root.get("user"):
            reply.setdefault("parent_user_id", root["user"])  # as Slack marks every reply
        root["reply_count"] = int(root.get("reply_count") or 0) + 1
        if ts_value(reply["ts"]) > ts_value(root.get("latest_reply") or 0):
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
            raise SlackError("channel_not_found")
        return channel

    def _message(self, params: Mapping[str, Any], ts_name: str = "ts") -> dict[str, Any]:
        message = self._messages.get(self._channel(params), {}).get(str(params.get(ts_name)))
        if message is None:
            raise SlackError("message_not_found")
        return message

    # --- serving -------------------------------------------------------------------------

    def _take_faults(self, method: str) -> tuple[Fault | None, float]:
        """The first pending error fault for ``method`` and the delay to apply, both consumed."""
        error: Fault | None = None
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
            error = Fault(method, 0, status, 1 if status == 429 else None)
        return error, delay

    def _serve(self, verb: str, path: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        reply = self._answer(verb, path, headers, raw)
        body = reply.body
        failed = reply.status >= 400 or (isinstance(body, dict) and body.get("ok") is False)
        if failed and path.startswith("/api/"):
            error = body.get("error") if isinstance(body, dict) else None
            method = urlsplit(path).path.removeprefix("/api/")
            with self._lock:
                self.failures.append((method, reply.status, str(error or "")))
        return reply

    def _answer(self, verb: str, path: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        url = urlsplit(path)
        params: dict[str, Any] = dict(parse_qsl(url.query, keep_blank_values=True))
        try:
            params.update(parse_body(headers.get("content-type", ""), raw))
        except ValueError:
            return Reply(200, {"ok": False, "error": "invalid_json"})
        params.pop("token", None)  # a token sent as a form field is never recorded either
        authed = headers.get("authorization", "").startswith(_AUTH_PREFIXES)
        if url.path == "/socket-mode/send" and verb == "POST":
            return self._socket_mode_send(raw)
        if url.path.startswith("/_fake/"):
            return self._inspect(verb, url.path, raw)
        if url.path.startswith("/files/") and verb == "GET":
            method, params = FILE_DOWNLOAD, {"file": url.path.split("/")[2]}
        elif url.path.startswith("/api/"):
            method = url.path.removeprefix("/api/")
        else:
            return Reply(404, b"not found", "text/plain")
        with self._lock:
            self._calls.append(RecordedCall(method, params, authed))
            fault, delay = self._take_faults(method)
        if delay:
            time.sleep(delay)
        if fault is not None and not fault.applied:
            return fault_reply(fault)
        if method == "apps.connections.open":
            return self._connections_open(headers.get("authorization", ""))
        if method == "oauth.v2.access":  # the app's client id and secret, not a token
            with self._lock:
                return oauth_access(self._auth, headers, params)
        if not authed:
            if method == FILE_DOWNLOAD:
                return Reply(403, b"not_authed", "text/plain")
            return Reply(200, {"ok": False, "error": "not_authed"})
        with self._lock:
            if method == FILE_DOWNLOAD:
                file = self._files.get(params["file"])
                if file is None:
                    return Reply(404, b"not found", "text/plain")
                mimetype = str(file.get("mimetype") or "application/octet-stream")
                return Reply(200, self._file_bytes(file), mimetype)
            handler = self._handlers.get(method)
            if handler is None:
                return Reply(404, {"ok": False, "error": "unknown_method"})
            wait = self._tier_wait(method)
            if wait:
                # Slack says whole seconds; a minute shortened for a test says fractions.
                after = str(math.ceil(wait)) if self.minute_seconds >= 60 else f"{wait:.3f}"
                headers = {"Retry-After": after}
                return Reply(429, {"ok": False, "error": "ratelimited"}, headers=headers)
            try:
                reply = Reply(200, {"ok": True, **handler(params)})
            except SlackError as error:
                reply = Reply(200, {"ok": False, "error": str(error)})
            except Exception:  # a bug here answers as Slack's own would, never a dropped line
                logger.exception("the fake Slack failed on %s", method)
                reply = Reply(500, {"ok": False, "error": "fatal_error"})
            return reply if fault is None else fault_reply(fault)

    def close(self) -> None:
        super().close()
        if self.socket_mode is not None:
            self.socket_mode.close()
