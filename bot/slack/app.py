"""The Bolt app: chanctx's listeners and middleware on a real ``slack_bolt.App``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from chanctx.bot.runtime import Runtime
from chanctx.bot.slack.envelope import GuardedApp
from chanctx.bot.slack.listeners import register
from slack_bolt import App
from slack_sdk import WebClient

__all__ = ["build_app"]


def build_app(
    runtime: Runtime,
    *,
    signing_secret: str | None = None,
    verify_token: bool = True,
    before: Sequence[Callable[..., Any]] = (),
) -> App:
    """A Bolt App wired to ``runtime``.

    Bolt's own self-event filter is off: chanctx records its own replies as the assistant's side
    of the conversation (dropping them loses it after a restart) and guards against answering
    itself in its listeners instead.

    Listeners run inside ``dispatch`` (``process_before_response``): they only record and
    enqueue, which takes microseconds, so the ack is still immediate, and events are handled in
    the order they arrive. The slow work runs on the answer runner, never on the ack path. ``before`` middleware runs ahead of intake (``record``
    uses it to see every delivery, retries included).
    """
    client: WebClient = runtime.client
    app = GuardedApp(
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=signing_secret is not None,
        token_verification_enabled=verify_token,
        process_before_response=True,
        ignoring_self_events_enabled=False,
        ignoring_self_assistant_message_events_enabled=False,
        logger=logging.getLogger("chanctx.bolt"),
    )
    for middleware in before:
        app.use(middleware)
    register(app, lambda team: runtime)  # one workspace: one runtime for every request
    return app
