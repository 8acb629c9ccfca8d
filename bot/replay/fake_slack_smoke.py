"""What the fake Slack offers a smoke test beyond the Web API methods: Slack's limited tier for
history reads, Socket Mode's URL and a way to send it events, and ``/_fake/`` inspection."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Final

from chanctx.bot.replay.fake_slack_wire import RecordedCall, Reply
from chanctx.bot.replay.fake_socket_mode import FakeSocketMode

__all__ = ["LIMITED_PAGE", "TIERS", "SmokeMethods"]

TIERS: Final = ("standard", "limited")
LIMITED_PAGE: Final = 15  # messages a call in the limited tier
_LIMITED_METHODS: Final = frozenset({"conversations.history", "conversations.replies"})
# Calls a minute of each history method: Tier 3 ("50+ per minute") and the limited tier's one.
_PER_MINUTE: Final = {"standard": 50, "limited": 1}


class SmokeMethods:
    """Mixed into FakeSlackAPI, whose storage, clock and lock these use."""

    # Provided by FakeSlackAPI.
    tier: str
    minute_seconds: float  # how long the fake's rate-limit minute lasts (60 s but in tests)
    socket_mode: FakeSocketMode | None
    _auth: dict[str, Any]
    _messages: dict[str, dict[str, dict[str, Any]]]
    _last_read: dict[str, float]  # method -> when its bucket is full again (GCRA)
    _calls: list[RecordedCall]
    _clock: Callable[[], float]
    _lock: Any

    def _public(self, message: Any, *, metadata: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def _sorted(messages: Iterable[dict[str, Any]], newest_first: bool = False) -> list[Any]:
        raise NotImplementedError

    def mirror_event(self, event: Any) -> None:
        raise NotImplementedError

    def call_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(call.method for call in self._calls))

    def _tier_wait(self, method: str) -> float:
        """Seconds until the tier serves ``method`` again (0: now, and counted).

        A bucket per history method holding a minute's calls (Tier 3: 50, bursts allowed; the
        limited tier: 1), refilled evenly over the minute, as Slack's limits behave.
        """
        if method not in _LIMITED_METHODS:
            return 0.0
        per_minute = _PER_MINUTE[self.tier]
        interval = self.minute_seconds / per_minute
        now = self._clock()
        full_at = max(self._last_read.get(method, now), now)
        earliest = full_at - (per_minute - 1) * interval
        if earliest - now > 1e-3:  # float sums of the interval: a millisecond is "now"
            return earliest - now
        self._last_read[method] = full_at + interval
        return 0.0

    def _connections_open(self, authorization: str) -> Reply:
        """Socket Mode's URL; Slack wants the app-level token here, never the bot's."""
        if not authorization.startswith("Bearer "):
            return Reply(200, {"ok": False, "error": "not_authed"})
        if not authorization.startswith("Bearer xapp-"):
            return Reply(200, {"ok": False, "error": "not_allowed_token_type"})
        if self.socket_mode is None:
            return Reply(200, {"ok": False, "error": "socket_mode_not_enabled"})
        return Reply(200, {"ok": True, "url": self.socket_mode.url})

    def _inspect(self, verb: str, path: str, raw: bytes) -> Reply:
        """What a smoke test asks the fake: ``GET /_fake/calls`` (method -> count), ``GET
        /_fake/messages`` (every message the bot wrote, as it stands now, with its channel) and
        ``POST /_fake/events`` (an Events API body the test sent the bot: Slack knows the
        message it describes, so the bot's reactions and thread reads find it)."""
        if path == "/_fake/calls" and verb == "GET":
            return Reply(200, {"calls": self.call_counts()})
        if path == "/_fake/messages" and verb == "GET":
            mine = {self._auth.get("user_id"), self._auth.get("bot_id")} - {None, ""}
            with self._lock:
                found = [
                    {"channel": channel, **self._public(message)}
                    for channel, stored in self._messages.items()
                    for message in self._sorted(stored.values())
                    if message.get("user") in mine or message.get("bot_id") in mine
                ]
            return Reply(200, {"messages": found})
        if path == "/_fake/events" and verb == "POST":
            try:
                body = json.loads(raw)
                event = body.get("event", body)
            except (ValueError, AttributeError):
                return Reply(400, {"error": "expected an Events API body (JSON object)"})
            if not isinstance(event, dict):
                return Reply(400, {"error": "expected an Events API body (JSON object)"})
            self.mirror_event(event)
            return Reply(200, {"ok": True})
        return Reply(404, {"error": f"no {verb} {path} here: /_fake/calls, /_fake/messages"})

    def _socket_mode_send(self, raw: bytes) -> Reply:
        if self.socket_mode is None:
            return Reply(404, {"error": "this fake was started without socket_mode"})
        try:
            body = json.loads(raw)
            payload, attempt = body["payload"], int(body.get("retry_attempt") or 0)
        except (ValueError, KeyError, TypeError) as error:
            return Reply(400, {"error": f"expected {{payload, retry_attempt?}}: {error!r}"})
        event = payload.get("event") if isinstance(payload, dict) else None
        if isinstance(event, dict):  # Slack knows the message it tells the app about
            self.mirror_event(event)
        try:
            envelope_id = self.socket_mode.send(payload, retry_attempt=attempt)
        except ConnectionError as error:
            return Reply(409, {"error": str(error)})
        acked = self.socket_mode.wait_ack(envelope_id, timeout=5.0)
        return Reply(200, {"envelope_id": envelope_id, "acked": acked})
