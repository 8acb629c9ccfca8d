"""What the asker sees around an answer, apart from the answer: the working indicator, the
assistant thread's title, and whether the pane's viewed channel may be used at all.

Each is best effort: a missing scope or a Slack error is logged and never costs the answer.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from chanctx.bot.core.turns import Turn
from chanctx.bot.slack.membership import MembershipChecker
from chanctx.context import Names
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["may_view", "set_title", "show_working"]

logger = logging.getLogger("chanctx.runtime")

_STATUS_TEXT = "is reading the channel..."


def may_view(turn: Turn, membership: MembershipChecker, names: Names) -> tuple[Turn, str | None]:
    """The pane's viewed channel, if the asker is a member of it; else none, and why."""
    viewed = turn.viewed_channel
    if not viewed or membership.is_member(viewed, turn.user):
        return turn, None
    name = names.channels.get(viewed, viewed)
    note = (
        f"You're viewing #{name}, which you are not a member of, so I can't use its "
        "conversations here; this answer uses no channel context."
    )
    return replace(turn, viewed_channel=None), note


def set_title(client: WebClient, turn: Turn) -> None:
    """An assistant thread is titled after its first question."""
    if not (turn.assistant_thread and turn.title):
        return
    try:
        client.assistant_threads_setTitle(
            channel_id=turn.channel, thread_ts=turn.thread_ts, title=turn.title
        )
    except SlackApiError as error:
        logger.warning("could not set the thread title: %s", error.response.get("error"))


def show_working(client: WebClient, turn: Turn, *, on: bool) -> None:
    """The user sees that the bot is on it: assistant status, or an :eyes: reaction."""
    try:
        if turn.assistant_thread:
            client.assistant_threads_setStatus(
                channel_id=turn.channel, thread_ts=turn.thread_ts, status=_STATUS_TEXT if on else ""
            )
        elif on:
            client.reactions_add(channel=turn.channel, timestamp=turn.anchor_ts, name="eyes")
        else:
            client.reactions_remove(channel=turn.channel, timestamp=turn.anchor_ts, name="eyes")
    except SlackApiError as error:
        # A missing reaction scope must not cost the answer itself.
        logger.warning("could not update the working indicator: %s", error.response.get("error"))
