"""``message`` (every subtype): recorded by the middleware; answered only in DMs.

In channels the bot answers mentions (``app_mention``); in a DM every new message from a person
is addressed to it. Edits, deletions, bots and our own messages never trigger an answer.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from chanctx.bot.core.runtime import Runtime
from chanctx.bot.core.turns import Turn
from chanctx.bot.events.listeners.mentions import event_id_of, question_fault, turn_for
from chanctx.bot.events.routing import current
from slack_bolt import App

__all__ = ["register"]

logger = logging.getLogger("chanctx.listeners")
_ANSWERABLE_SUBTYPES = {None, "file_share", "thread_broadcast"}


def needs_answer(event: dict[str, Any], me_user: str, me_bot: str) -> bool:
    if event.get("channel_type") != "im":
        return False
    subtype = event.get("subtype")
    if (
        subtype is not None and not isinstance(subtype, str)
    ) or subtype not in _ANSWERABLE_SUBTYPES:
        return False
    if event.get("bot_id"):
        return False
    user = event.get("user")
    return (
        bool(user) and user != me_user and bool(event.get("ts")) and event.get("bot_id") != me_bot
    )


def register(app: App) -> None:
    @app.event("message")
    def on_message(event: dict[str, Any], body: dict[str, Any]) -> None:
        runtime = current()
        me = runtime.engine.me
        if not needs_answer(event, me.user_id, me.bot_id):
            return
        if question_fault(event) is not None:  # refused (and logged) before intake
            return
        runtime.trigger(pane_turn(runtime, event), event_id=event_id_of(body))


def pane_turn(runtime: Runtime, event: dict[str, Any]) -> Turn:
    """A DM question; in an assistant-pane thread, with the channel the user is viewing and,
    for the thread's first question, the title it gives the thread."""
    turn = turn_for(event, assistant_thread=bool(event.get("thread_ts")))
    if not turn.assistant_thread:
        return turn
    threads = runtime.assistant_threads
    title = None
    if threads.first_question(turn.channel, turn.thread_ts):
        text = " ".join(str(event.get("text") or "").split())
        title = text if len(text) <= 60 else text[:59].rstrip() + "\u2026"
    return replace(
        turn, viewed_channel=threads.viewed(turn.channel, turn.thread_ts), title=title or None
    )
