"""Bolt listeners, one module per kind of event, wired by ``register``."""

from __future__ import annotations

from chanctx.bot.runtime import Runtime
from chanctx.bot.slack.listeners import (
    assistant,
    commands,
    feedback,
    intake_middleware,
    mentions,
    messages,
    other,
)
from slack_bolt import App

__all__ = ["register"]


def register(app: App, runtime: Runtime) -> None:
    app.use(intake_middleware.build(runtime))
    app.use(assistant.build(runtime))  # the pane's own events; its questions go on below
    mentions.register(app, runtime)
    messages.register(app, runtime)
    commands.register(app, runtime)
    feedback.register(app, runtime)
    other.register(app)  # last: the catch-all for everything else Slack sends
