"""Envelopes Bolt itself cannot take: caught before dispatch, acknowledged and logged once.

Bolt's built-in middleware assumes ``event`` is an object with a string ``type``; an envelope
with ``"event": null`` or a list-valued ``event_id`` makes it raise, and it answers 500, which
makes Slack retry a poison event. Such an envelope is not an event anyone can act on: it is
acknowledged (200) with one warning saying what was wrong, and the bot goes on.
"""

from __future__ import annotations

import contextvars
import json
import logging
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse

__all__ = ["STORE_FAILED", "GuardedApp", "malformed", "parse_json_payload"]

logger = logging.getLogger("chanctx.envelope")


def malformed(body: Any) -> str | None:
    """Why this payload cannot be dispatched, or None if Bolt can take it."""
    if not isinstance(body, dict):
        return f"the payload is {type(body).__name__}, not an object"
    kind = body.get("type")
    if kind is not None and not isinstance(kind, str):
        return f"'type' is {type(kind).__name__}, not a string"
    for key in ("event_id", "team_id", "api_app_id", "enterprise_id"):
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            return f"'{key}' is {type(value).__name__}, not a string"
    if kind == "event_callback" or "event" in body:
        event = body.get("event")
        if not isinstance(event, dict):
            return f"'event' is {type(event).__name__}, not an object"
        if not isinstance(event.get("type"), str):
            return "'event.type' is missing or not a string"
        for where, part in (("event", event), *_nested(event)):
            reason = _ids(where, part)
            if reason:
                return reason
    return _ids("payload", body)


def _nested(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"event.{k}", v)
        for k in ("message", "previous_message", "item")
        if isinstance(v := event.get(k), dict)
    ]


def _ids(where: str, part: dict[str, Any]) -> str | None:
    """Bolt reads ``user`` and ``channel`` as a string or an object with an ``id``."""
    for key in ("user", "channel"):
        value = part.get(key)
        if value is not None and not isinstance(value, str | dict):
            return f"'{where}.{key}' is {type(value).__name__}, not a string"
    return None


def parse_json_payload(text: str) -> tuple[Any, str | None]:
    """A JSON request body and why it cannot be dispatched (None: it can). ValueError if it is
    not JSON at all. Bolt builds its request context on construction, so this runs first."""
    body = json.loads(text)
    return body, malformed(body)


# What a listener's failure to store an event answers: Slack retries it (HTTP: the status;
# Socket Mode: no acknowledgement). Listeners only record and enqueue, so an OSError in one is
# the disk (the turn journal's append and fsync), never the network.
STORE_FAILED = 503


def _on_error(
    error: Exception, response: BoltResponse | None, logger: logging.Logger
) -> BoltResponse | None:
    """Bolt answers any listener failure 500; we tell a storage failure from the rest."""
    if response is None:  # the listener had acknowledged already: nothing left to decide
        logger.exception("a listener failed after its ack")
        return None
    if isinstance(error, OSError):
        logger.exception("could not store an event: Slack will retry it")
        return BoltResponse(status=STORE_FAILED, body="could not store the event; retry")
    logger.exception("an event failed; acknowledged so Slack does not retry it forever")
    return BoltResponse(status=200, body="")


class GuardedApp(App):
    """Bolt's App, refusing (with a 200 and a warning) what its own middleware would crash on,
    and answering ``STORE_FAILED`` when an event could not be stored."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error(_on_error)

    def dispatch(self, req: BoltRequest) -> BoltResponse:
        reason = malformed(req.body)
        if reason is not None:
            logger.warning("acknowledged and dropped a malformed payload: %s", reason)
            return BoltResponse(status=200, body="")
        # A context of its own: what routing sets for this request (its workspace's runtime,
        # bot/events/routing.py) is gone when it is answered.
        return contextvars.copy_context().run(super().dispatch, req)
