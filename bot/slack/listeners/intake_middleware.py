"""Global middleware: drop Slack's retries, then record every event in the caches.

Intake runs here, in dispatch order and before any listener, so the caches see events in the
order Slack delivered them however many listener threads Bolt uses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from chanctx.bot.slack.routing import current_or_none
from slack_bolt import BoltResponse

__all__ = ["build"]

logger = logging.getLogger("chanctx.listeners")


def build() -> Callable[..., BoltResponse | None]:
    def intake(body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        runtime = current_or_none()  # none for the installation's own events (uninstall)
        event = body.get("event")
        if runtime is None or body.get("type") != "event_callback" or not isinstance(event, dict):
            next()
            return None
        if not runtime.first_delivery(body.get("event_id")):
            logger.info("dropped a retried delivery of %s", body.get("event_id"))
            return BoltResponse(status=200, body="")  # acknowledged, not processed twice
        runtime.intake(event)
        next()
        return None

    return intake
