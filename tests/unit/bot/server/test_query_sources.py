"""The query API's blocks beyond channel messages, over real HTTP on the channel_knowledge
fixture: shared text files (downloaded once, under the media rules), the recipe's sources (a
pinned one first), pins made before the bot started (pins.list) and since (events); a query
whose socket drops stops its work, and a timeout gives the partial answer."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from chanctx.bot.core.recipe_runner import RecipeRunner, load_recipe
from chanctx.bot.replay.fake_slack import FILE_DOWNLOAD
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OFFLINE_BOT_TOKEN, OfflineBot, ReplayMedia
from chanctx.bot.server import BackgroundServer, build_asgi_app
from chanctx.bot.server.query_api import query_routes
from chanctx.bot.server.query_sources import QuerySources
from chanctx.bot.slack.media import MediaFetcher
from chanctx.cache import MediaContentCache
from chanctx.context import default_counter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.paths import ROOT

KNOWLEDGE = ROOT / "fixtures" / "channel_knowledge"
PLATFORM = "C0PLATFORM"
COUNT = default_counter().count


class Served:
    """The replayed fixture, query sources with their own file cache, and a server."""

    def __init__(self, bot: OfflineBot, *, cold: bool = False) -> None:
        self.bot = bot
        media = bot.media
        if cold:  # a downloader with an empty cache of its own, as after a restart
            host = bot.slack.root.removeprefix("http://").rstrip("/")
            fetcher = MediaFetcher(
                token=OFFLINE_BOT_TOKEN, cache=MediaContentCache(), allow_http_for=frozenset({host})
            )
            media = ReplayMedia(bot.client, fetcher)
        self.sources = QuerySources(bot.engine, recipe=bot.recipe, media=media)
        self.app = build_asgi_app(
            bot.app, extra_routes=query_routes(bot.engine, None, sources=self.sources)
        )
        self.server = BackgroundServer(self.app)

    def query(self, **body: Any) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.server.origin}/api/context/query",
            data=json.dumps({"channel": PLATFORM, **body}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.loads(response.read()))

    def downloads(self) -> int:
        return sum(1 for call in self.bot.slack.calls if call.method == FILE_DOWNLOAD)


@pytest.fixture(scope="module")
def bot() -> Iterator[OfflineBot]:
    fixture = load_fixture(KNOWLEDGE)
    recipe = RecipeRunner(load_recipe(KNOWLEDGE), home=KNOWLEDGE, cwd=KNOWLEDGE)
    start = float(fixture.envelopes[0].get("event_time") or 0)
    with OfflineBot(fixture.slack_api, start_time=start, recipe=recipe) as bot:
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
        yield bot


@pytest.fixture(scope="module")
def served(bot: OfflineBot) -> Iterator[Served]:
    ready = Served(bot)
    with ready.server:
        yield ready


@pytest.fixture
def fresh(bot: OfflineBot) -> Iterator[Served]:
    """A server whose file caches are empty: its first query downloads the files again."""
    ready = Served(bot, cold=True)
    with ready.server:
        yield ready


def test_a_shared_text_file_answers_a_question_about_it(served: Served) -> None:
    body = served.query(query="drain the settlement queue before the DNS flip", token_budget=3000)
    files = [c for c in body["chunks"] if c["block_type"] == "file"]
    assert files and files[0]["block_id"] == f"file:{PLATFORM}:F0RUNBOOK1"
    assert "payctl drain --region eu-west" in files[0]["text"]
    assert "payments-failover.md" in files[0]["source"] and "shared by Dev" in files[0]["source"]
    # The runbook matches better than any message: it leads the unpinned blocks.
    unpinned = [c for c in body["chunks"] if not c["pinned"]]
    assert unpinned[0]["block_type"] == "file" and unpinned[0]["relevance"] == 1.0
    assert body["total_tokens"] == COUNT(body["rendered"]) <= 3000


def test_a_file_is_downloaded_once_however_many_queries_read_it(served: Served) -> None:
    served.query(query="who is on call in June", type_filters=["file"])
    before = served.downloads()
    for _ in range(5):
        body = served.query(query="who is on call the week of June 15", type_filters=["file"])
        assert any("Kim Park" in c["text"] for c in body["chunks"])
    assert served.downloads() == before  # the texts (and the missing file's 404) are cached
    missing = [c for c in served.bot.slack.calls if c.params.get("file") == "F0GONE0001"]
    assert len([c for c in missing if c.method == FILE_DOWNLOAD]) <= 1


def test_the_pinned_recipe_source_is_among_the_pinned_blocks_of_every_answer(
    served: Served,
) -> None:
    for query in ("lunch order", "flaky test", "nothing here matches zzzz"):
        body = served.query(query=query)
        pinned = [c["pinned"] for c in body["chunks"]]
        assert pinned == sorted(pinned, reverse=True)  # every pinned block before the rest
        guide = [c for c in body["chunks"] if c["block_id"] == "recipe:team_guide"]
        assert guide and guide[0]["pinned"] is True and guide[0]["block_type"] == "recipe"
        assert "Escalate anything" in guide[0]["text"]
    # A recipe source that is not pinned would need the query to match it; this one does not
    # match "lunch order" and is still there.
    assert served.query(query="lunch order")["chunks"][0]["pinned"] is True


def test_pins_from_before_the_start_and_from_events_lead_and_an_unpin_drops_one(
    served: Served,
) -> None:
    body = served.query(query="flaky test", type_filters=["message"])
    pinned = [c["text"] for c in body["chunks"] if c["pinned"]]
    # test_checkout_timeout was pinned in the stream; the Friday rule was pinned before the
    # bot started (one pins.list, on the first query) and unpinned in the stream.
    assert any("test_checkout_timeout" in text for text in pinned)
    assert not any("read-only on Fridays after 14:00" in text for text in pinned)
    assert served.bot.slack.call_counts().get("pins.list") == 1


def test_type_filters_keep_only_those_blocks(served: Served) -> None:
    for kinds in (["file"], ["recipe"], ["file", "recipe"], ["message", "thread"]):
        body = served.query(query="payments failover DNS", type_filters=kinds)
        assert body["chunks"] and {c["block_type"] for c in body["chunks"]} <= set(kinds)


@pytest.mark.slow
def test_a_query_past_its_timeout_streams_the_partial_answer(fresh: Served) -> None:
    served = fresh
    served.bot.slack.slow_next(FILE_DOWNLOAD, 2, seconds=1.0)
    url = (
        f"{served.server.origin}/api/context/stream?channel={PLATFORM}"
        "&query=payments+failover&timeout_ms=300&type_filters=file,recipe"
    )
    with urllib.request.urlopen(url, timeout=30) as response:
        events = response.read().decode().split("\n\n")
    kinds = [e.split("\n")[0].removeprefix("event: ") for e in events if e]
    assert kinds[-1] == "timeout" and "complete" not in kinds
    partial = json.loads(events[len(kinds) - 1].split("data: ", 1)[1])
    assert partial["timed_out"] is True
    # At most the first (slow) file made it; the recipe block came before the downloads.
    assert sum(1 for c in partial["chunks"] if c["block_type"] == "file") <= 1


@pytest.mark.slow
def test_a_dropped_socket_stops_its_query(fresh: Served) -> None:
    served = fresh
    served.bot.slack.slow_next(FILE_DOWNLOAD, 2, seconds=1.0)
    before = served.downloads()
    state = served.app.state

    async def drop_mid_query() -> None:
        uri = served.server.origin.replace("http", "ws") + "/api/context/ws"
        async with websockets.connect(uri) as socket:
            query = {"type": "query", "id": 1, "query": "failover", "channel": PLATFORM}
            await socket.send(json.dumps({**query, "type_filters": ["file"]}))
            while served.downloads() == before:  # until the first download is under way
                await asyncio.sleep(0.02)

    asyncio.run(drop_mid_query())
    deadline = time.monotonic() + 20
    while getattr(state, "socket_queries", 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state.socket_queries == 0  # nothing left running for the closed socket
    # Two slow files were there to read (the third is gone from Slack); the query stopped
    # after the one in flight.
    assert served.downloads() - before == 1


WORDS = ["payments", "failover", "drain", "queue", "dns", "on-call", "june", "flaky",
         "staging", "friday", "lunch", "escalate", "us-east", "settlement"]  # fmt: skip
KINDS = ["message", "thread", "file", "recipe"]


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    budget=st.integers(min_value=16, max_value=2_500),
    fmt=st.sampled_from(["json", "markdown", "text"]),
    filters=st.lists(st.sampled_from(KINDS), max_size=3, unique=True),
)
def test_seed_001_properties_hold_with_files_recipes_and_pins(
    served: Served, words: list[str], budget: int, fmt: str, filters: list[str]
) -> None:
    body = served.query(
        query=" ".join(words), token_budget=budget, format=fmt, type_filters=filters
    )
    chunks = body["chunks"]
    assert body["total_tokens"] == COUNT(body["rendered"]) <= budget
    # Pinned first, then relevance descending within each group.
    keys = [(not c["pinned"], -c["relevance"]) for c in chunks]
    assert keys == sorted(keys)
    assert all(not c["truncated"] for c in chunks[:-1])  # only the last block may be cut
    assert all(c["block_type"] in (filters or KINDS) for c in chunks)
    assert len({c["block_id"] for c in chunks}) == len(chunks)  # a pin is not listed twice
    if fmt == "markdown":
        assert all(f"## {c['block_type']}: {c['source']}" in body["rendered"] for c in chunks)
