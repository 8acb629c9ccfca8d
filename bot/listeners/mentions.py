"""``app_mention``: a question for the bot in a channel or thread."""

from __future__ import annotations

from typing import Any

from slack_bolt import App

from ..answers import Turn
from ..runtime import Runtime

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
    )


def register(app: App, runtime: Runtime) -> None:
    @app.event("app_mention")
    def on_mention(event: dict[str, Any]) -> None:
        if event.get("user") and event.get("user") == runtime.engine.me.user_id:
            return  # our own text quoting our name is not a question
        if not event.get("channel") or not event.get("ts"):
            return
        runtime.trigger(turn_for(event))
