"""``app_mention``: a question for the bot in a channel or thread."""

from __future__ import annotations

from typing import Any

from chanctx.bot.core.turns import Turn
from chanctx.bot.events.routing import current
from slack_bolt import App

__all__ = ["register"]


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
        if is_question(event, runtime.engine.me.user_id):
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
