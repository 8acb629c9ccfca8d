"""The demo fixture replayed and the query API served over it, on real loopback HTTP: what the
query API, profile, OpenAPI and inspector tests share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from chanctx.bot.server.query_api import ApiKeys, query_routes
from chanctx.bot.server.query_sources import QuerySources
from chanctx.bot.stores.profiles import ProfileStore

from tests.support.paths import ROOT

__all__ = ["DEMO", "api_server", "demo_replayed"]

DEMO = ROOT / "fixtures" / "demo"


@contextmanager
def demo_replayed(*, claude: bool = False) -> Iterator[OfflineBot]:
    """A bot holding the demo channel's state after its events (answers too with ``claude``)."""
    fixture = load_fixture(DEMO)
    start = float(fixture.envelopes[0].get("event_time") or 0)
    with OfflineBot(
        fixture.slack_api, claude=claude, cassette=fixture.cassette, start_time=start
    ) as bot:
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
        yield bot


def api_server(
    bot: OfflineBot, keys: ApiKeys | None, profiles: ProfileStore | None = None
) -> BackgroundServer:
    """The events path, the query API and the inspector over ``bot``, on a free port (file
    and recipe blocks included, as ``replay --serve`` serves them)."""
    routes = query_routes(
        bot.engine,
        keys,
        profiles,
        turns=lambda: list(bot.runtime.runner.results),
        sources=QuerySources(
            bot.engine,
            recipe=bot.recipe,
            media=bot.media,
            playbooks=bot.playbooks.store if bot.playbooks else None,
        ),
    )
    return BackgroundServer(build_asgi_app(bot.app, extra_routes=routes))
