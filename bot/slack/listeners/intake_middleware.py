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

from chanctx.bot.runtime import Runtime
from slack_bolt import BoltResponse

__all__ = ["build"]

logger = logging.getLogger("chanctx.listeners")
# Where a message event needs nothing after intake (a DM, "im", may be a question).
_NO_LISTENER = frozenset({"channel", "group", "mpim"})


def build(runtime: Runtime) -> Callable[..., BoltResponse | None]:
    def intake(body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        event = body.get("event")
        if body.get("type") != "event_callback" or not isinstance(event, dict):
            next()
            return None
        if event.get("type") == "message" and event.get("channel_type") in _NO_LISTENER:
            # Recording is idempotent, so a retry of it needs no dedup either.
            runtime.intake(event)
            return BoltResponse(status=200, body="")
        if not runtime.first_delivery(body.get("event_id")):
            logger.info("dropped a retried delivery of %s", body.get("event_id"))
            return BoltResponse(status=200, body="")  # acknowledged, not processed twice
        runtime.intake(event)
        next()
        return None

    return intake
