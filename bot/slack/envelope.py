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
from typing import Any, Final, Protocol

from slack_bolt import App, BoltRequest, BoltResponse

__all__ = [
    "MAX_DEPTH",
    "STORE_FAILED",
    "GuardedApp",
    "QuickPath",
    "depth_over",
    "describe_error",
    "malformed",
    "parse_json_payload",
]

logger = logging.getLogger("chanctx.envelope")
# Slack's deepest payloads (a block_actions view's state) nest about a dozen levels; far deeper
# is a hostile body, which recursive code (the JSON parser, Bolt, pydantic) must never see.
MAX_DEPTH: Final = 64


def depth_over(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep; iterative,
    so the check itself cannot overflow the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def malformed(body: Any) -> str | None:
    """Why this payload cannot be dispatched, or None if Bolt can take it."""
    if not isinstance(body, dict):
        return f"the payload is {type(body).__name__}, not an object"
    if depth_over(body):
        return f"the payload nests more than {MAX_DEPTH} levels deep"
    return _shape(body)


def _shape(body: dict[str, Any]) -> str | None:
    """``malformed`` once the payload is known to be an object of bounded depth."""
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
    not JSON at all (or nested so deep the parser gives up). Bolt builds its request context on
    construction, so this runs first."""
    too_deep = ValueError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        body = json.loads(text)
    except RecursionError:
        raise too_deep from None
    # Every level of nesting opens with a bracket, so a text with at most MAX_DEPTH of them
    # (an event has a handful) cannot nest deeper: the walk is for the rest.
    if text.count("{") + text.count("[") > MAX_DEPTH and depth_over(body):
        raise too_deep
    if not isinstance(body, dict):
        return body, f"the payload is {type(body).__name__}, not an object"
    return body, _shape(body)


# What a listener's failure to store an event answers: Slack retries it (HTTP: the status;
# Socket Mode: no acknowledgement). Listeners only record and enqueue, so an OSError in one is
# the disk (the turn journal's append and fsync), never the network.
STORE_FAILED = 503


def _on_error(
    error: Exception, response: BoltResponse | None, logger: logging.Logger
) -> BoltResponse | None:
    """Bolt answers any listener failure 500; we tell a storage failure from the rest."""
    # One line each: a payload missing what a listener needs is the client's, not a crash;
    # the traceback is there at debug level for when it is ours.
    logger.debug("listener failure", exc_info=error)
    if response is None:  # the listener had acknowledged already: nothing left to decide
        logger.warning("a listener failed after its ack: %s", describe_error(error))
        return None
    if isinstance(error, OSError):
        logger.warning("could not store an event (%s): Slack will retry it", describe_error(error))
        return BoltResponse(status=STORE_FAILED, body="could not store the event; retry")
    logger.warning(
        "an event failed (%s); acknowledged so Slack does not retry it forever",
        describe_error(error),
    )
    return BoltResponse(status=200, body="")


def describe_error(error: BaseException) -> str:
    """An error in one line: its type and the first line of its message, kept short."""
    text = str(error).splitlines()[0][:200] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class QuickPath(Protocol):
    """Events recorded without Bolt's dispatch (bot/events/quick_intake.py)."""

    async def take(self, body: dict[str, Any]) -> int | None:
        """The HTTP status answered for an event taken here; None: dispatch it."""
        ...


class GuardedApp(App):
    """Bolt's App, refusing (with a 200 and a warning) what its own middleware would crash on,
    and answering ``STORE_FAILED`` when an event could not be stored.

    ``quick``: the events the HTTP layer may record without dispatching them (None: all are
    dispatched); ``signing_secret``: the secret Bolt checks requests with (None: it checks
    none), so that the HTTP layer checks the same before it takes the quick path."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error(_on_error)
        self.quick: QuickPath | None = None
        verifies = kwargs.get("request_verification_enabled", True)
        secret = kwargs.get("signing_secret")
        self.signing_secret: str | None = secret if verifies and isinstance(secret, str) else None

    def dispatch(self, req: BoltRequest) -> BoltResponse:
        reason = malformed(req.body)
        if reason is not None:
            logger.warning("acknowledged and dropped a malformed payload: %s", reason)
            return BoltResponse(status=200, body="")
        # A context of its own: what routing sets for this request (its workspace's runtime,
        # bot/events/routing.py) is gone when it is answered.
        return contextvars.copy_context().run(super().dispatch, req)
