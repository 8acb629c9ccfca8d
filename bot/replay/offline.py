"""The whole bot wired against loopback fakes: what ``replay`` and the tests run.

The real Bolt App, the real ``slack_sdk.WebClient`` and the real rate limiter and caches; only
Slack itself is replaced, by ``FakeSlackAPI`` on 127.0.0.1. Time is virtual (``ReplayClock``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anthropic
from chanctx.bot.claude.session import ClaudeResponder, SessionSettings
from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.data_flags import DEFAULT_HISTORY_MB
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.recipe_runner import RecipeRunner
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.core.turns import NullResponder, Responder
from chanctx.bot.events.app import build_app
from chanctx.bot.playbooks.channel_playbooks import ChannelPlaybooks
from chanctx.bot.playbooks.curators import (
    DEFAULT_CURATOR_MODEL,
    ClaudeCurator,
    Curator,
    OfflineCurator,
)
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.slack.media import MediaFetcher
from chanctx.bot.slack.media_blocks import FetchedMedia, MediaFailure
from chanctx.bot.slack.slack_api import SlackFetcher
from chanctx.bot.stores.pane_threads.local import LocalPaneThreads
from chanctx.cache import MediaContentCache, RateLimiter, ThreadReplyCache
from chanctx.cache.channel_store import PostgresChannelStore, SqliteChannelStore
from chanctx.context import FileRef, default_counter
from chanctx.context.playbook import Similarity
from chanctx.manifest_store import (
    HARMFUL,
    HELPFUL,
    LocalFeedbackStore,
    LocalPlaybookStore,
    SessionStore,
    TurnJournal,
)
from chanctx.tools import IndexedHistory
from slack_bolt import App, BoltResponse
from slack_bolt.request import BoltRequest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["OfflineBot", "ReplayClock", "ReplayMedia"]

# Never real credentials: the fakes only check their shape.
OFFLINE_BOT_TOKEN = "xoxb-offline-not-a-secret"
OFFLINE_API_KEY = "offline-not-a-key"


@dataclass
class ReplayClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now

    def set(self, seconds: float) -> None:
        self.now = max(self.now, seconds)  # never backwards: TTLs and buckets assume it

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


class OfflineBot:
    def __init__(
        self,
        state: Mapping[str, Any] | None = None,
        *,
        settings: ContextSettings | None = None,
        model: str | None = None,
        overflow: Literal["queue", "degrade"] = "queue",
        responder: Responder | None = None,
        signing_secret: str | None = None,
        start_time: float = 0.0,
        limiter: RateLimiter | None = None,
        runtime_class: type[Runtime] = Runtime,
        claude: bool = False,
        cassette: Sequence[dict[str, Any]] = (),
        data_dir: Path | None = None,
        session_settings: SessionSettings | None = None,
        recipe: RecipeRunner | None = None,
        history_per_channel: int = 5_000,
        history_mb: int = DEFAULT_HISTORY_MB,
        claude_latency_ms: int = 0,
        curator: Literal["off", "offline", "claude"] = "offline",
        curator_model: str = DEFAULT_CURATOR_MODEL,
        stream: bool = True,
        reactions: tuple[frozenset[str], frozenset[str]] = (HELPFUL, HARMFUL),
        similar: Similarity | None = None,
        workspace: tuple[FakeSlackAPI, str, str, ReplayClock] | None = None,
        before: Sequence[Callable[..., Any]] = (),
        channel_store: bool = False,
        database: tuple[str, str] | None = None,
    ) -> None:
        """``claude=True`` answers with a real Claude session against the fake Anthropic API
        (the ``cassette``'s responses, then the offline model); sessions live in ``data_dir``.
        ``workspace``: one team of a multi-workspace replay (its fake, the shared Web API URL,
        its bot token, the shared clock) instead of a fake of its own. ``channel_store``:
        events go through a channel store in ``data_dir`` (a temporary one if none), as in
        ``chanctx run``; ``database``: (url, schema) of a PostgreSQL store instead, as with
        ``--database-url``."""
        self._owns_slack = workspace is None
        if workspace is None:
            self.clock = ReplayClock(start_time)
            self.slack = FakeSlackAPI(state or {}, clock=self.clock)
            api_url, token = self.slack.url, OFFLINE_BOT_TOKEN
        else:
            self.slack, api_url, token, self.clock = workspace
        self.client = WebClient(token=token, base_url=api_url)
        auth = self.client.auth_test()
        self.me = SelfIdentity(
            user_id=str(auth.get("user_id", "")), bot_id=str(auth.get("bot_id", ""))
        )
        self.limiter = limiter or RateLimiter(clock=self.clock)
        self.fetcher = SlackFetcher(
            self.client, limiter=self.limiter, me=self.me, overflow=overflow, sleep=self.clock.sleep
        )
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.data_dir = data_dir
        self.channels: OpenStore | None = None
        if channel_store:
            if data_dir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="chanctx-replay-")
                self.data_dir = Path(self._tmp.name)
            assert self.data_dir is not None
            # NORMAL, not FULL: a replay can simply be run again, so it skips the fsyncs.
            self.channels = OpenStore(
                SqliteChannelStore(self.data_dir, synchronous="NORMAL")
                if database is None
                else PostgresChannelStore(database[0], schema=database[1], erase_interval=None)
            )
        self.engine = ContextEngine(
            me=self.me,
            settings=settings or ContextSettings(),
            counter=default_counter(model),
            slack=self.fetcher,
            threads=ThreadReplyCache(self.fetcher, clock=self.clock),
            history=IndexedHistory(
                max_messages_per_channel=history_per_channel, max_bytes=history_mb * 2**20
            ),
            clock=self.clock,
            record=(
                ChannelRecord(self.channels, str(auth.get("team_id", "")))
                if self.channels is not None
                else None
            ),
        )
        self.anthropic: FakeAnthropicAPI | None = None
        self.claude_client: anthropic.Anthropic | None = None
        # Files are fetched from the fake as the real bot fetches them from Slack's file
        # hosts (Claude's media, the query API's file blocks).
        host = self.slack.root.removeprefix("http://").rstrip("/")
        self.media_fetcher = MediaFetcher(
            token=token, cache=MediaContentCache(), allow_http_for=frozenset({host})
        )
        self.media = ReplayMedia(self.client, self.media_fetcher)
        self.recipe = recipe
        self._curator, self._curator_model, self._similar = curator, curator_model, similar
        self.playbooks: ChannelPlaybooks | None = None
        if claude and responder is None:
            self.anthropic = FakeAnthropicAPI(
                cassette=cassette, clock=self.clock, latency_ms=claude_latency_ms
            )
            if self.data_dir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="chanctx-replay-")
                self.data_dir = Path(self._tmp.name)
            assert self.data_dir is not None
            self.claude_client = anthropic.Anthropic(
                api_key=OFFLINE_API_KEY, base_url=self.anthropic.url, max_retries=2
            )
            self.playbooks = self._playbooks(self.data_dir)
            responder = ClaudeResponder(
                self.claude_client,
                playbooks=self.playbooks,
                media=self.media,
                engine=self.engine,
                store=SessionStore(self.data_dir),
                team=str(auth.get("team_id", "")),
                recipe=recipe,
                settings=session_settings,
                clock=self.clock,
            )
        if self.playbooks is None:
            self.playbooks = self._playbooks(self.data_dir)
        pane = self.data_dir / "assistant_threads.jsonl" if self.data_dir else None
        self.runtime = runtime_class(
            engine=self.engine,
            client=self.client,
            responder=responder or NullResponder(),
            workers=1,
            assistant_threads=LocalPaneThreads(pane),
            turns=TurnJournal(self.data_dir),
            feedback=LocalFeedbackStore(self.data_dir, helpful=reactions[0], harmful=reactions[1]),
            playbooks=self.playbooks,
            post_backoff=0.01,  # retried posts against the fake need not wait
            team_id=str(auth.get("team_id", "")),
            stream=stream,
        )
        # ``before``: middleware ahead of intake (a recorder sees every delivery, as in
        # ``chanctx record``).
        self.app: App = build_app(
            self.runtime, signing_secret=signing_secret, verify_token=False, before=before
        )

    def _playbooks(self, data_dir: Path | None) -> ChannelPlaybooks:
        """The channel playbooks, curated by the deterministic rules (virtual time) unless the
        replay turns curation off; kept in the data dir when there is one."""
        curator: Curator | None = None
        if self._curator == "offline":
            curator = OfflineCurator(self.engine.names)
        elif self._curator == "claude" and self.claude_client is not None:
            curator = ClaudeCurator(
                self.claude_client, names=self.engine.names, model=self._curator_model
            )
        return ChannelPlaybooks(
            LocalPlaybookStore(data_dir, similar=self._similar),
            self.engine,
            curator=curator,
            counter=self.engine.counter,
            clock=self.clock,
        )

    def dispatch(self, envelope: Mapping[str, Any], *, wait: bool = True) -> BoltResponse:
        """Deliver one envelope as Socket Mode does; by default wait for any answer it starts."""
        self.clock.set(float(envelope.get("event_time") or self.clock.now))
        event = envelope.get("event")
        if isinstance(event, dict):
            self.slack.mirror_event(event)
        response = self.app.dispatch(BoltRequest(body=json.dumps(envelope), mode="socket_mode"))
        if wait:
            self.runtime.runner.drain()
        return response

    def close(self) -> None:
        self.runtime.runner.close()
        self.runtime.close_stores()
        if self._owns_slack:
            self.slack.close()
        if self.claude_client is not None:
            self.claude_client.close()  # its connection pool holds loopback sockets
        if self.anthropic is not None:
            self.anthropic.close()
        if self.channels is not None:
            self.channels.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> OfflineBot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplayMedia:
    """Downloads for replay: recorded events name Slack's real file hosts, so each file's URL is
    looked up again with ``files.info`` on the fake, and fetched from there."""

    def __init__(self, client: WebClient, fetcher: MediaFetcher) -> None:
        self._client = client
        self._fetcher = fetcher

    def fetch(self, ref: FileRef) -> FetchedMedia | MediaFailure:
        cache = self._fetcher.cache
        if cache is not None and ref.artifact_id in cache:
            return self._fetcher.fetch(ref)
        try:
            info = self._client.files_info(file=ref.artifact_id)
        except SlackApiError as error:
            reason = str(error.response.get("error", "error"))
            return MediaFailure(ref, "not_found", f"Slack has no file {ref.artifact_id} ({reason})")
        url = (info.get("file") or {}).get("url_private_download")
        return self._fetcher.fetch(ref.model_copy(update={"download_url": url}))
