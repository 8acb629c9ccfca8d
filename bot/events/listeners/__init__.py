"""Bolt listeners, one module per kind of event, wired by ``register``."""

from __future__ import annotations

from chanctx.bot.events.listeners import (
    assistant,
    commands,
    feedback,
    intake_middleware,
    mentions,
    messages,
    other,
)
from chanctx.bot.events.routing import RuntimeFor, routing_middleware
from slack_bolt import App

__all__ = ["register"]


def register(app: App, runtime_for: RuntimeFor) -> None:
    """Every listener serves the runtime of the request's workspace (bot/events/routing.py)."""
    app.use(routing_middleware(runtime_for))  # first: the rest work on that runtime
    app.use(intake_middleware.build())
    app.use(assistant.build())  # the pane's own events; its questions go on below
    mentions.register(app)
    messages.register(app)
    commands.register(app)
    feedback.register(app)
    other.register(app)  # last: the catch-all for everything else Slack sends
