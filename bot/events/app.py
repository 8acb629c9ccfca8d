"""The Bolt app: chanctx's listeners and middleware on a real ``slack_bolt.App``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from chanctx.bot.core.runtime import Runtime
from chanctx.bot.events.listeners import register
from chanctx.bot.events.quick_intake import QuickIntake
from chanctx.bot.events.workspaces import Workspaces, register_uninstall
from chanctx.bot.slack.envelope import GuardedApp
from slack_bolt import App
from slack_bolt.authorization.authorize import InstallationStoreAuthorize
from slack_bolt.oauth.oauth_settings import OAuthSettings
from slack_sdk import WebClient

__all__ = ["build_app", "build_oauth_app"]


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
    the order they arrive. The slow work runs on the answer runner, never on the ack path.
    ``before`` middleware runs ahead of intake (``record`` uses it to see every delivery,
    retries included), so with it every event is dispatched; without it the HTTP layer records
    the events no listener answers on its own quick path (bot/events/quick_intake.py).
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
    if not before:  # what ``before`` sees must go through dispatch
        app.quick = QuickIntake(lambda team: runtime)
    return app


def build_oauth_app(
    workspaces: Workspaces,
    *,
    oauth_settings: OAuthSettings,
    client: WebClient,
    signing_secret: str | None = None,
) -> App:
    """A Bolt App for many workspaces (``run --http --oauth``): Slack's OAuth flow stores each
    team's installation; each request is served by its team's runtime (``workspaces``).

    Bolt checks the team's token with ``auth.test``; the answer is kept per token (cache), so
    steady state costs no call per event. Uninstall events delete the team's data."""
    authorize = InstallationStoreAuthorize(
        installation_store=workspaces.store,
        client_id=oauth_settings.client_id,
        client_secret=oauth_settings.client_secret,
        logger=logging.getLogger("chanctx.bolt"),
        bot_only=True,
        cache_enabled=True,
        client=client,
    )
    app = GuardedApp(
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=signing_secret is not None,
        oauth_settings=oauth_settings,
        installation_store=workspaces.store,
        installation_store_bot_only=True,
        authorize=authorize,
        process_before_response=True,
        ignoring_self_events_enabled=False,
        ignoring_self_assistant_message_events_enabled=False,
        logger=logging.getLogger("chanctx.bolt"),
    )
    register_uninstall(app, workspaces)  # before the catch-all listener
    register(app, workspaces.runtime_for)
    app.quick = QuickIntake(workspaces.running)
    return app
