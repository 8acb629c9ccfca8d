"""``app_mention``: a question for the bot in a channel or thread.

A question's ids and timestamps are checked before it is queued (``question_fault``, which the
intake middleware applies before intake): a turn anchored at ``abc`` or ``NaN`` can never be
answered, and queued it would fail (or wait on a history that has no such message) on every
start. A bad one is acknowledged, logged once, and never queued.
"""

from __future__ import annotations

import re
from typing import Any, Final

from chanctx.bot.core.turns import Turn
from chanctx.bot.events.routing import current
from chanctx.bot.slack.intake import message_fault
from slack_bolt import App

__all__ = ["question_fault", "register"]

# Slack's message ids ("1781020800.000100") and object ids ("C0123ABCD", "U0123ABCD").
_TS: Final = re.compile(r"\d{10}\.\d{6}")
_ID: Final = re.compile(r"[A-Z0-9]{1,40}")


def question_fault(event: dict[str, Any]) -> str | None:
    """Why this event cannot be queued as a question (a field and its bad value), or None."""
    for key, form, required in (
        ("channel", _ID, True),
        ("user", _ID, True),
        ("ts", _TS, True),
        ("thread_ts", _TS, False),
        ("team", _ID, False),
        ("user_team", _ID, False),
    ):
        value = event.get(key)
        if value is None and not required:
            continue
        if not isinstance(value, str) or not form.fullmatch(value):
            return f"'{key}' is {_shown(value)}"
    # The message itself as intake reads it: one it cannot record cannot be answered.
    fault = message_fault(event, str(event["channel"]))
    return None if fault is None else f"the message is malformed ({fault[:120]})"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def turn_for(event: dict[str, Any], *, assistant_thread: bool = False) -> Turn:
    ts = str(event["ts"])
    return Turn(
        channel=str(event["channel"]),
        # In a thread: answer there. Top-level: answer in a new thread under the message.
        thread_ts=str(event.get("thread_ts") or ts),
        anchor_ts=ts,
        user=str(event.get("user", "")),
        assistant_thread=assistant_thread,
        team=str(event.get("user_team") or event.get("team") or ""),
    )


def register(app: App) -> None:
    @app.event("app_mention")
    def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        runtime = current()
        if not is_question(event, runtime.engine.me.user_id):
            return
        if question_fault(event) is not None:  # refused (and logged) before intake
            return
        runtime.trigger(turn_for(event), event_id=event_id_of(body))


def event_id_of(body: dict[str, Any]) -> str | None:
    event_id = body.get("event_id")
    return event_id if isinstance(event_id, str) and event_id else None


def is_question(event: dict[str, Any], me_user: str) -> bool:
    """An app_mention that asks us something now.

    Slack also sends app_mention when a message that mentions us is *edited* (it carries
    ``edited``) and when another bot mentions us (``bot_id``). An edit is not a new question,
    and answering bots invites bot-to-bot loops; our own messages are never questions.
    """
    if not event.get("channel") or not event.get("ts"):
        return False
    if event.get("edited") or event.get("bot_id") or event.get("subtype"):
        return False
    user = event.get("user")
    return bool(user) and user != me_user
