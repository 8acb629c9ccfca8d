"""Every other event: reactions and files are already recorded; the rest is logged and dropped."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt import App

__all__ = ["register"]

logger = logging.getLogger("chanctx.listeners")


def register(app: App) -> None:
    # Matching everything keeps Bolt from answering 404 "unhandled request" to Slack.
    @app.event(re.compile(".*"))
    def on_other(event: dict[str, Any]) -> None:
        logger.debug("event %s needs no answer", event.get("type"))
