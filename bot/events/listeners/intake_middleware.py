"""Global middleware: drop Slack's retries, then record every event in the caches.

Intake runs here, in dispatch order and before any listener, so the caches see events in the
order Slack delivered them however many listener threads Bolt uses. A ``message`` event in a
channel (most of what Slack sends) ends here: no listener acts on it (channels are answered on
``app_mention``; only DMs are answered on ``message``), and matching it against every listener
cost Bolt more than the intake itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from chanctx.bot.events.listeners.mentions import question_fault
from chanctx.bot.events.quick_intake import NO_LISTENER_CHANNELS, record_alone
from chanctx.bot.events.routing import current_or_none
from chanctx.bot.slack.envelope import STORE_FAILED
from slack_bolt import BoltRequest, BoltResponse
from slack_bolt.middleware import Middleware

__all__ = ["IntakeMiddleware", "build"]

logger = logging.getLogger("chanctx.listeners")
# Events whose listeners store something of their own (a question queued, the pane's channel
# kept), idempotently: a retry of one already recorded still runs them, in case that store
# failed after the change was recorded (the event was refused, and Slack retried it).
_REPLAYABLE = frozenset(
    {"app_mention", "message", "assistant_thread_started", "assistant_thread_context_changed"}
)


class IntakeMiddleware(Middleware):
    """The intake, as a Bolt ``Middleware`` object: called directly, without the
    keyword-argument injection Bolt does for a function middleware on every request."""

    def process(
        self, *, req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]
    ) -> BoltResponse | None:
        body = req.body
        runtime = current_or_none()  # none for the installation's own events (uninstall)
        event = body.get("event")
        if runtime is None or body.get("type") != "event_callback" or not isinstance(event, dict):
            next()
            return None
        fault = _question_fault(event)
        if fault is not None:
            # Nothing a question with a bad id or ts carries is usable: not recorded, not
            # queued, said once.
            logger.warning("ignored a %s that cannot be answered: %s", event.get("type"), fault)
            return BoltResponse(status=200, body="")
        if runtime.replicas is not None:
            # Recorded in the change stream, which every replica's caches read.
            if runtime.publish(event, body.get("event_id")) or event.get("type") in _REPLAYABLE:
                next()
                return None
            logger.info("dropped a retried delivery of %s", body.get("event_id"))
            return BoltResponse(status=200, body="")
        if event.get("type") == "message" and event.get("channel_type") in NO_LISTENER_CHANNELS:
            # What the HTTP layer's quick path does for it (bot/events/quick_intake.py); here
            # for Socket Mode and for a Bolt app without that path.
            return BoltResponse(status=record_alone(runtime, event, body.get("event_id")), body="")
        event_id = body.get("event_id")
        if not runtime.first_delivery(event_id):
            logger.info("dropped a retried delivery of %s", event_id)
            return BoltResponse(status=200, body="")  # acknowledged, not processed twice
        try:
            runtime.intake(event)  # in the channel store (fsynced) before the ack
        except OSError as error:
            runtime.refused(event_id)  # Slack's retry of it must get through
            return _refused(error)
        next()
        return None


def _question_fault(event: dict[str, Any]) -> str | None:
    """Why a would-be question (a mention, or a person's new message in a DM) cannot be
    queued; None for every other event, which intake judges on its own."""
    kind = event.get("type")
    if kind == "message":
        subtype = event.get("subtype")
        if event.get("channel_type") != "im" or subtype not in (
            None,
            "file_share",
            "thread_broadcast",
        ):
            return None
        if event.get("bot_id"):
            return None
    elif kind != "app_mention":
        return None
    return question_fault(event)


def _refused(error: OSError) -> BoltResponse:
    """Not stored, so not acknowledged: Slack delivers it again."""
    logger.error("could not store an event, so it is refused: %s", error)
    return BoltResponse(status=STORE_FAILED, body="could not store the event; retry")


def build() -> IntakeMiddleware:
    return IntakeMiddleware()
