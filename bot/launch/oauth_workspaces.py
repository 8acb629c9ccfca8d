"""``chanctx run --http --oauth``: one process serving every workspace that installs the app.

Slack's OAuth v2 flow runs on the same port as the Events API: ``GET /slack/install`` sends the
person to Slack to pick a workspace and approve (state kept in ``<data>/oauth_states``, checked
on the way back), ``GET /slack/oauth_redirect`` exchanges the code for the team's bot token and
stores the installation. Each team is then served by its own runtime (bot/events/workspaces.py).
The installation store is a seam: slack_sdk's file store in ``<data>/installations`` unless one
is given (a Redis store for replicas). With ``--api-keys`` the context query API and the
inspector are served too, each key bound to one workspace (bot/server/team_api.py).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

from chanctx.bot.core.channel_record import OpenStore
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.events.app import build_oauth_app
from chanctx.bot.events.workspaces import Workspaces
from chanctx.bot.launch.admin import (
    expire_sessions,
    forgetting_for_teams,
    remove_admin_file,
    write_admin_file,
)
from chanctx.bot.launch.allocator import limit_arenas
from chanctx.bot.launch.channel_store import open_channel_store, readiness
from chanctx.bot.launch.one_workspace import api_routes, build_runtime, load_api_keys
from chanctx.bot.launch.options import SettingsError
from chanctx.bot.launch.settings import SLACK_API, RunSettings
from chanctx.bot.launch.slack_budget import start_backfill
from chanctx.bot.messages_api.sdk import warm
from chanctx.bot.server import build_asgi_app, run_server
from chanctx.bot.server.admin_api import admin_routes
from chanctx.bot.server.api_access import ApiKeys
from chanctx.bot.server.team_api import TeamApi
from chanctx.bot.slack.scopes import BOT_SCOPES
from chanctx.bot.stores.installations.local import local_installations
from slack_bolt import App, BoltRequest
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_bolt.oauth.oauth_settings import OAuthSettings
from slack_sdk import WebClient
from slack_sdk.oauth.installation_store import InstallationStore
from slack_sdk.oauth.state_store import FileOAuthStateStore
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

__all__ = ["build_workspaces", "oauth_routes", "oauth_settings", "serve_oauth"]

logger = logging.getLogger("chanctx.serve")
_STATE_SECONDS = 600  # an install must come back from Slack within ten minutes


def oauth_settings(settings: RunSettings, store: InstallationStore) -> OAuthSettings:
    assert settings.client_id and settings.client_secret
    authorization_url = None  # Slack's own
    if settings.slack_api_url != SLACK_API:  # loopback fakes: their authorize page
        parts = urlsplit(settings.slack_api_url)
        authorization_url = f"{parts.scheme}://{parts.netloc}/oauth/v2/authorize"
    return OAuthSettings(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        scopes=list(BOT_SCOPES),
        redirect_uri=settings.redirect_uri,
        install_page_rendering_enabled=False,  # straight to Slack
        authorization_url=authorization_url,
        installation_store=store,
        installation_store_bot_only=True,
        state_store=FileOAuthStateStore(
            expiration_seconds=_STATE_SECONDS, base_dir=str(settings.data_dir / "oauth_states")
        ),
    )


def build_workspaces(
    settings: RunSettings,
    store: InstallationStore,
    *,
    recover_in_background: bool = True,
    channels: OpenStore | None = None,
) -> Workspaces:
    """``channels``: the one channel store every team's engine writes to (keyed by team)."""

    def build(team: str, client: WebClient, data_dir: Path) -> Runtime:
        runtime = build_runtime(client, settings, data_dir=data_dir, channels=channels)
        # Each workspace pages its own history, with its own token and Slack budget.
        backfill = start_backfill(runtime, settings.options)
        if backfill is not None:
            runtime.on_close.append(backfill.stop)
        return runtime

    return Workspaces(
        store,
        build,
        data_dir=settings.data_dir,
        api_url=settings.slack_api_url,
        recover_in_background=recover_in_background,
    )


def oauth_routes(app: App) -> list[BaseRoute]:
    """The install and redirect paths, on the Events API's Starlette app."""
    flow = app.oauth_flow
    assert flow is not None

    async def install(request: Request) -> Response:
        bolt_request: BoltRequest = to_bolt_request(request, b"")
        return to_starlette_response(
            await run_in_threadpool(flow.handle_installation, bolt_request)
        )

    async def redirect(request: Request) -> Response:
        bolt_request: BoltRequest = to_bolt_request(request, b"")
        return to_starlette_response(await run_in_threadpool(flow.handle_callback, bolt_request))

    return [
        Route(flow.install_path, install, methods=["GET"]),
        Route(flow.redirect_uri_path, redirect, methods=["GET"]),
    ]


def with_team_api(asgi: ASGIApp, settings: RunSettings, workspaces: Workspaces) -> ASGIApp:
    """``asgi`` with the query API in front when a keys file is given (each key names its
    workspace; a file with a key that names none is refused at start)."""
    if settings.options.api_keys is None:
        return asgi

    def routes_of(team: str, runtime: Runtime, keys: ApiKeys) -> list[BaseRoute]:
        return api_routes(runtime, settings, keys, workspaces.team_dir(team))

    keys = load_api_keys(settings.options.api_keys)
    try:
        return TeamApi(asgi, keys, workspaces.runtime_for, routes_of)
    except ValueError as error:
        raise SettingsError(f"--api-keys: {error}") from None


def _installations(settings: RunSettings) -> InstallationStore:
    """Where installations are kept: Redis when replicas share one (any replica serves any
    workspace), else files in the data dir."""
    if settings.options.redis_url:
        from chanctx.bot.launch.one_workspace import redis_link
        from chanctx.bot.stores.installations.redis import RedisInstallationStore

        link = redis_link(settings.options)
        assert link is not None
        return RedisInstallationStore(link.client)
    assert settings.client_id is not None
    return local_installations(settings.data_dir, settings.client_id)


def serve_oauth(
    settings: RunSettings, *, installation_store: InstallationStore | None = None
) -> App:
    """Serve every installed workspace over HTTP until SIGTERM (blocks)."""
    assert settings.client_id is not None
    limit_arenas()  # before the server's and the workers' threads exist
    store = installation_store or _installations(settings)
    channels = open_channel_store(settings.data_dir, settings.options)
    try:
        return _serve_teams(settings, store, channels)
    finally:
        channels.close()


def _serve_teams(settings: RunSettings, store: InstallationStore, channels: OpenStore) -> App:
    workspaces = build_workspaces(settings, store, channels=channels)
    forgetting = forgetting_for_teams(workspaces, channels, settings.data_dir)
    expire_sessions(forgetting, settings.options)
    admin = write_admin_file(settings.data_dir, settings.host, settings.port)
    app = build_oauth_app(
        workspaces,
        oauth_settings=oauth_settings(settings, store),
        client=WebClient(base_url=settings.slack_api_url),
        signing_secret=settings.signing_secret,
    )
    forget_route = admin_routes(admin.token, plan=forgetting.plan, run=forgetting.run)
    started = threading.Event()
    asgi = with_team_api(  # a bad keys file stops the start here, before any team is resumed
        build_asgi_app(
            app,
            signing_secret=settings.signing_secret,
            ready=lambda: started.is_set() and channels.problem is None,
            status=lambda: readiness(channels),
            extra_routes=[*oauth_routes(app), *forget_route],
        ),
        settings,
        workspaces,
    )

    def start() -> None:
        try:
            logger.info("%d installed workspaces resumed", workspaces.start())
        finally:
            started.set()
        if settings.anthropic_api_key:
            warm()  # the anthropic SDK's import, off the start path (bot/messages_api/sdk.py)

    threading.Thread(target=start, name="chanctx-workspaces", daemon=True).start()
    try:
        logger.info(
            "serving %d workspaces' events at http://%s:%d/slack/events, installs at %s",
            len(workspaces.teams()), settings.host, settings.port, "/slack/install",
        )  # fmt: skip
        run_server(asgi, settings.host, settings.port)
    finally:
        remove_admin_file(settings.data_dir, admin)
        forgetting.close()
        if not workspaces.close():
            logger.warning("exiting with answers in flight; the next start finishes them")
            logging.shutdown()
            os._exit(0)
    return app
