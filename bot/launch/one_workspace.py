"""``chanctx run`` / ``chanctx record``: the bot against the real Slack."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chanctx.bot.claude.session import ClaudeResponder
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.embeddings import EmbeddingSimilarity, load_embed
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.recipe_runner import RecipeRunner, load_recipe
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.core.turns import NullResponder, Responder
from chanctx.bot.core.warm_up import BackgroundWarmUps
from chanctx.bot.events.app import build_app
from chanctx.bot.launch.admin import (
    expire_sessions,
    forgetting_for,
    remove_admin_file,
    write_admin_file,
)
from chanctx.bot.launch.allocator import limit_arenas
from chanctx.bot.launch.channel_store import readiness, shared_store
from chanctx.bot.launch.options import Options, SettingsError, context_settings, session_settings
from chanctx.bot.launch.preflight import who_am_i
from chanctx.bot.launch.settings import RunSettings
from chanctx.bot.launch.slack_budget import (
    start_backfill,
    tier_of,
    tiered_limiter,
    tiered_settings,
)
from chanctx.bot.messages_api.sdk import DeferredClient, warm
from chanctx.bot.playbooks.channel_playbooks import ChannelPlaybooks
from chanctx.bot.playbooks.curators import ClaudeCurator, Curator, OfflineCurator
from chanctx.bot.replicas.replicas import Replicas
from chanctx.bot.server import build_asgi_app, run_server
from chanctx.bot.server.admin_api import admin_routes
from chanctx.bot.server.api_access import ApiKeys
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.slack.media import MediaFetcher
from chanctx.bot.slack.slack_api import SlackFetcher
from chanctx.bot.stores.pane_threads.local import LocalPaneThreads
from chanctx.bot.stores.redis_link import RedisLink
from chanctx.cache import MediaContentCache
from chanctx.context import default_counter
from chanctx.manifest_store import LocalFeedbackStore, LocalPlaybookStore, SessionStore, TurnJournal
from chanctx.tools import IndexedHistory
from slack_bolt import App
from slack_sdk import WebClient
from starlette.routing import BaseRoute

__all__ = ["build_runtime", "known_state", "redis_link", "serve"]

logger = logging.getLogger("chanctx.serve")

# Seconds after serving starts when the anthropic SDK is imported if no /readyz came first.
WARM_AFTER = 5.0


def redis_link(options: Options) -> RedisLink | None:
    """The connection replicas share, checked at start: a wrong URL stops start-up."""
    if not options.redis_url:
        return None
    import redis

    try:
        link = RedisLink(options.redis_url)
        link.client.ping()
    except (redis.RedisError, ValueError) as error:
        raise SettingsError(f"--redis-url: cannot reach Redis ({error})") from None
    return link


def shared_state(runtime: Runtime) -> Replicas | None:
    """The replicas' shared state, when this runtime runs on Redis."""
    return runtime.replicas if isinstance(runtime.replicas, Replicas) else None


def build_runtime(
    client: WebClient,
    settings: RunSettings | None = None,
    *,
    data_dir: Path | None = None,
    channels: OpenStore | None = None,
) -> Runtime:
    """Learn who we are (auth.test) and wire the engine to the rate-limited Web API and, with
    an API key, to Claude. The recipe is validated here, so a bad context.yaml stops start-up.
    ``data_dir``: where this runtime keeps its files (a team's own with --oauth);
    ``channels``: the process's channel store (the engine writes every event there first)."""
    options = settings.options if settings is not None else Options()
    if data_dir is None and settings is not None:
        data_dir = settings.data_dir
    auth = who_am_i(client)
    me = SelfIdentity(user_id=str(auth.get("user_id", "")), bot_id=str(auth.get("bot_id", "")))
    team = str(auth.get("team_id", ""))
    link = redis_link(options)
    # The Slack budget: this process's own, or the one all replicas share in Redis.
    limiter = tiered_limiter(options, team, link.client if link else None)
    fetcher = SlackFetcher(
        client, limiter=limiter, me=me, overflow=options.overflow, page_size=tier_of(options).page
    )
    counter = default_counter(options.model)
    # The tokenizer's vocabulary (10-25 MiB, 0.05-0.2 s to load) is read now, not by the first
    # mention, which would wait for it.
    counter.count("chanctx")
    engine = ContextEngine(
        me=me,
        settings=tiered_settings(context_settings(options), options),
        counter=counter,
        slack=fetcher,
        warm_ups=BackgroundWarmUps(),
        history=IndexedHistory(
            max_messages_per_channel=options.history_per_channel,
            max_bytes=options.history_mb * 2**20,
        ),
        record=ChannelRecord(channels, team) if channels is not None else None,
    )
    replicas = (
        Replicas(
            link,
            engine,
            team,
            lease=options.turn_lease,
            retention=options.change_retention,
            reactions=(frozenset(options.helpful_reactions), frozenset(options.harmful_reactions)),
            shared_store=shared_store(channels),
        )
        if link
        else None
    )
    # The SDK is imported off the start path: by ``serve``'s warm-up, or the first answer.
    claude = (
        DeferredClient(api_key=settings.anthropic_api_key, max_retries=3)
        if settings is not None and settings.anthropic_api_key
        else None
    )
    similar = (
        EmbeddingSimilarity(load_embed(options.playbook_embed)) if options.playbook_embed else None
    )
    if replicas is not None:
        replicas.playbooks.similar = similar
    playbooks = ChannelPlaybooks(
        replicas.playbooks if replicas else LocalPlaybookStore(data_dir, similar=similar),
        engine,
        curator=_curator(options, engine, claude),
        counter=engine.counter,
    )
    responder: Responder = NullResponder()
    if settings is not None and claude is not None:
        home = Path(settings.home).resolve()
        responder = ClaudeResponder(
            claude,
            engine=engine,
            playbooks=playbooks,
            store=replicas.sessions
            if replicas
            else SessionStore(Path(data_dir or settings.data_dir)),
            team=team,
            recipe=RecipeRunner(load_recipe(home), home=home, cwd=Path.cwd()),
            # The token goes only to Slack's file hosts over HTTPS (bot/slack/media.py).
            media=MediaFetcher(token=str(client.token or ""), cache=MediaContentCache()),
            settings=session_settings(options),
        )
    return Runtime(
        engine=engine,
        client=client,
        responder=responder,
        assistant_threads=replicas.pane
        if replicas
        else LocalPaneThreads(data_dir / "assistant_threads.jsonl" if data_dir else None),
        turns=replicas.turns if replicas else TurnJournal(data_dir),
        feedback=replicas.feedback
        if replicas
        else LocalFeedbackStore(
            data_dir,
            helpful=frozenset(options.helpful_reactions),
            harmful=frozenset(options.harmful_reactions),
        ),
        playbooks=playbooks,
        keep_results=200,  # memory stays flat however many answers a running bot gives
        # Claude's deadline, then time to fetch context and post: past it a turn is released.
        turn_deadline=2 * options.claude_deadline + 60,
        team_id=team,
        replicas=replicas,
    )


def _curator(
    options: Options, engine: ContextEngine, claude: DeferredClient | None
) -> Curator | None:
    """Who grows the playbooks (``--curator``): off by default in ``run``."""
    if options.curator == "offline":
        return OfflineCurator(engine.names)
    if options.curator == "claude":
        if claude is None:
            raise SettingsError("--curator claude needs ANTHROPIC_API_KEY")
        return ClaudeCurator(claude, names=engine.names, model=options.curator_model)
    return None


def serve(
    settings: RunSettings,
    *,
    runtime: Runtime | None = None,
    first_middleware: Callable[..., Any] | None = None,
) -> App:
    """Start serving (blocks). ``first_middleware`` runs before intake (``record`` uses it)."""
    limit_arenas()  # before the server's and the workers' threads exist
    runtime = runtime or build_runtime(WebClient(token=settings.bot_token), settings)
    app = build_app(
        runtime,
        signing_secret=settings.signing_secret if settings.mode == "http" else None,
        before=[first_middleware] if first_middleware else [],
    )
    # What a previous run acknowledged and never finished is answered now, off the start path;
    # /readyz says so once it is done.
    recovered = threading.Event()
    shared = shared_state(runtime)
    if shared is not None:  # follow the change stream, take turns from the shared queue
        shared.start(runtime.take, runtime.workers)
    channels = runtime.engine.record.opened if runtime.engine.record is not None else None

    answers_with_claude = isinstance(runtime.responder, ClaudeResponder)

    def ready() -> bool:
        stored = channels is None or channels.problem is None
        now = stored and recovered.is_set() and (shared is None or shared.ready())
        if now and answers_with_claude:
            warm()  # the SDK's import, once the start's own work is done (messages_api/sdk.py)
        return now

    def status() -> dict[str, Any]:
        return {
            **readiness(channels),
            "answers": runtime.runner.status(),  # stuck turns show here
            **({"replica": shared.status()} if shared else {}),
        }

    def recover() -> None:
        try:
            runtime.recover()
        finally:
            recovered.set()

    threading.Thread(target=recover, name="chanctx-recover", daemon=True).start()
    forgetting = forgetting_for(runtime, channels, settings.data_dir) if channels else None
    if forgetting is not None:
        expire_sessions(forgetting, settings.options)
    admin = None
    backfill = start_backfill(runtime, settings.options)
    if answers_with_claude:  # a process nobody asks /readyz warms up a little later
        later = threading.Timer(WARM_AFTER, warm)
        later.daemon = True
        later.start()
    try:
        if settings.mode == "http":
            routes = _api_routes(runtime, settings)
            if forgetting is not None:  # `chanctx forget` while the bot runs
                admin = write_admin_file(settings.data_dir, settings.host, settings.port)
                routes += admin_routes(admin.token, plan=forgetting.plan, run=forgetting.run)
            asgi = build_asgi_app(
                app,
                signing_secret=settings.signing_secret,
                ready=ready,
                status=status,
                extra_routes=routes,
            )
            logger.info(
                "serving the Events API at http://%s:%d/slack/events", settings.host, settings.port
            )
            run_server(asgi, settings.host, settings.port)  # returns after SIGTERM / SIGINT
        else:
            from chanctx.bot.events.socket_mode import GuardedSocketModeHandler

            GuardedSocketModeHandler(app, settings.app_token).start()  # type: ignore[no-untyped-call]
    finally:
        if backfill is not None:
            backfill.stop()
        if admin is not None:
            remove_admin_file(settings.data_dir, admin)
        if forgetting is not None:
            forgetting.close()
        if not stop_answering(runtime):
            # Answers still running hold non-daemon threads Python would wait for; their
            # turns are in the journal, so leave now (within 10 s of SIGTERM) and let the next
            # start answer them.
            logger.warning("exiting with answers in flight; the next start finishes them")
            logging.shutdown()
            os._exit(0)
        if channels is not None:
            channels.close()
    return app


def _api_routes(runtime: Runtime, settings: RunSettings) -> list[BaseRoute]:
    """The context query API, on when a keys file says who may read which channel."""
    keys_file = settings.options.api_keys
    if keys_file is None:
        return []
    return api_routes(runtime, settings, load_api_keys(keys_file), settings.data_dir)


def load_api_keys(path: Path) -> ApiKeys:
    try:
        return ApiKeys.load(path)
    except ValueError as error:
        raise SettingsError(f"--api-keys: {error}") from None


def api_routes(
    runtime: Runtime, settings: RunSettings, keys: ApiKeys, data_dir: Path
) -> list[BaseRoute]:
    """The query API's routes over ``runtime`` for ``keys``; agent profiles are kept in
    ``data_dir`` (the team's own with --oauth). Its file blocks are downloaded under the same
    rules as Claude's media; its recipe blocks come from the same context.yaml."""
    from chanctx.bot.server.query_api import query_routes
    from chanctx.bot.server.query_sources import QuerySources
    from chanctx.bot.stores.profiles.local import LocalProfileStore
    from chanctx.bot.stores.profiles.redis import RedisProfileStore

    shared = shared_state(runtime)
    profiles = (
        RedisProfileStore(shared.link.client, shared.team)
        if shared
        else LocalProfileStore(data_dir)
    )
    home = Path(settings.home).resolve()
    sources = QuerySources(
        runtime.engine,
        recipe=RecipeRunner(load_recipe(home), home=home, cwd=Path.cwd()),
        media=MediaFetcher(token=runtime.client.token or "", cache=MediaContentCache()),
        playbooks=runtime.playbooks.store if runtime.playbooks else None,
    )
    return query_routes(
        runtime.engine,
        keys,
        profiles,
        turns=lambda: list(runtime.runner.results),
        sources=sources,
    )


def stop_answering(runtime: Runtime, grace: float = 1.5) -> bool:
    """After the server stopped: True if no answer is still running."""
    shared = shared_state(runtime)
    if shared is not None:
        shared.stop_taking()  # no new turns from the shared queue
    clean = runtime.runner.stop(grace)
    if shared is not None:  # what still runs here is handed to another replica at once
        shared.stop(release=not clean)
    if clean:  # answers still running may yet write to the journal: never close it under them
        runtime.close_stores()
    return clean


def known_state(runtime: Runtime) -> dict[str, Any]:
    """What a recording needs to replay with real names: who we are, who and where people are."""
    names = runtime.engine.names
    return {
        "auth": {"user_id": runtime.engine.me.user_id, "bot_id": runtime.engine.me.bot_id},
        "users": {
            user_id: {"id": user_id, "name": name, "profile": {"display_name": name}}
            for user_id, name in dict(names.users).items()
        },
        "channels": {cid: {"id": cid, "name": name} for cid, name in dict(names.channels).items()},
        "history": {},
    }
