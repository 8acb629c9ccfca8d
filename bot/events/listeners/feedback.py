"""Clicks on the feedback buttons under an answer: acknowledged at once, recorded per turn in
the same store as reactions (the playbook reads both)."""

from __future__ import annotations

import logging
from typing import Any

from chanctx.bot.events.routing import current
from chanctx.bot.slack.feedback_buttons import ACTION_ID, click_of
from slack_bolt import Ack, App

__all__ = ["register"]

logger = logging.getLogger("chanctx.feedback")


def register(app: App) -> None:
    @app.action(ACTION_ID)
    def on_click(ack: Ack, body: dict[str, Any]) -> None:
        ack()
        runtime = current()
        click = click_of(body)
        if click is None:
            logger.warning("a feedback click without its user, message or value; ignored")
            return
        if runtime.feedback is None:
            return
        vote = runtime.feedback.record_click(
            click.channel, click.message_ts, click.user, helpful=click.helpful, turn=click.turn
        )
        if vote is None:
            logger.info("a feedback click on a message that is not an answer of ours")
            return
        runtime.voted(vote)  # the playbook credits (or blames) the bullets the answer used
