"""A channel with older history only Slack holds (threads included), for backfill tests and
the backfill benchmark: the fake Slack's state, and a comparison of a store with it; a
backfill under the limited tier against the fake, and a loop stepping it."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.core.backfill import Backfill, BackfillGate
from chanctx.bot.core.backfill_plan import BackfillSettings
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.slack.slack_api import SlackFetcher
from chanctx.cache import RateLimiter
from chanctx.cache.channel_store import (
    ChannelNamed,
    ChannelStore,
    SqliteChannelStore,
    StoreEvent,
)
from chanctx.cache.rate_limit import PriorityLimiter, slack_tier
from slack_sdk import WebClient

from tests.support.slack_events import BOT_ID, BOT_USER, CHANNEL, STATE, TEAM

__all__ = [
    "MINUTE",
    "answer_load",
    "backfill_on",
    "backfill_state",
    "limited_fetcher",
    "missing_from_store",
    "run",
    "served",
]

MINUTE = 0.05  # seconds the fake's and the limiter's minute lasts here


def backfill_on(
    data: Path,
    fake: FakeSlackAPI,
    mode: str = "all",
    days: int = 30,
    *,
    first_load: bool = False,
    progress: float = 300.0,
    gate: BackfillGate | None = None,
    share: Callable[[Sequence[StoreEvent]], None] | None = None,
    loads: list[str] | None = None,
) -> tuple[Backfill, OpenStore]:
    """A backfill under the limited tier on a store in ``data``; ``first_load``: with the
    engine's first load (the newest page through the answers' fetcher), each channel it is
    asked for appended to ``loads``."""
    fetcher = limited_fetcher(fake)
    opened = OpenStore(SqliteChannelStore(data, synchronous="NORMAL"))
    record = ChannelRecord(opened, TEAM)
    record.write([ChannelNamed(TEAM, CHANNEL, "general")])  # a channel the bot is in
    page = slack_tier("limited").page
    settings = BackfillSettings(mode=mode, days=days, page=page, idle_seconds=MINUTE)  # type: ignore[arg-type]
    load = None
    if first_load:  # what the engine's first load does: the newest page, no replies

        def load(channel: str) -> None:
            if loads is not None:
                loads.append(channel)
            after = record.gap_after(channel)  # held from an import: what is newer
            page = fetcher.channel_history(channel, limit=15, oldest=after)
            record.warmed(channel, page, limit=15)

    backfill = Backfill(
        record, fetcher, settings, first_load=load, progress_every=progress, gate=gate, share=share
    )
    return backfill, opened


def limited_fetcher(fake: FakeSlackAPI) -> SlackFetcher:
    """A fetcher of ``fake`` under the limited tier, the limiter's minute shortened to MINUTE."""
    tier = slack_tier("limited")
    per_method = tier.per_method()
    limiter = PriorityLimiter(
        RateLimiter(
            calls_per_minute=tier.workspace_per_minute, per_method=per_method, minute=MINUTE
        ),
        per_method,
        minute=MINUTE,
    )
    return SlackFetcher(
        WebClient(token="xoxb-test", base_url=fake.url),
        limiter=limiter.background,
        me=SelfIdentity(user_id=BOT_USER, bot_id=BOT_ID),
        overflow="degrade",
        page_size=tier.page,
        max_retries=2,
    )


def answer_load(opened: OpenStore, fake: FakeSlackAPI, channel: str = CHANNEL) -> None:
    """What an answer's first load of ``channel`` stores: its newest page, no replies."""
    record = ChannelRecord(opened, TEAM)
    page = limited_fetcher(fake).channel_history(channel, limit=15)
    record.warmed(channel, page, limit=15)


def served(fake: FakeSlackAPI, method: str) -> int:
    """Calls of ``method`` the fake answered (not the ones it refused with a 429)."""
    refused = sum(1 for f in fake.failures if f[0] == method and f[1] == 429)
    return fake.call_counts().get(method, 0) - refused


def run(backfill: Backfill, *, pages: int | None = None, limit: float = 60.0) -> None:
    """Step until nothing is pending (or ``pages`` pages are stored)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        wait = backfill.step()
        if pages is not None and backfill.pages >= pages:
            return
        if not backfill.pending:
            return
        time.sleep(min(wait, MINUTE))
    raise AssertionError("the backfill did not finish")


def backfill_state(
    messages: int,
    *,
    channel: str = CHANNEL,
    threads: int = 0,
    replies: int = 0,
    spacing: float = 60.0,
    newest: float | None = None,
) -> dict[str, Any]:
    """The fake Slack's state: ``messages`` top-level messages ``spacing`` s apart, ending
    ``newest`` (default: a minute ago); the first ``threads`` of every tenth carry ``replies``
    replies each (counted in ``reply_count``, as Slack serves them)."""
    state = copy.deepcopy(STATE)
    state["auth"] = {**state.get("auth", {}), "user_id": BOT_USER, "bot_id": BOT_ID}
    # The bot is in this channel alone (what users.conversations lists, so what is backfilled).
    state["channels"] = {channel: state["channels"].get(channel, {"id": channel, "name": channel})}
    end = (time.time() - 60.0) if newest is None else newest
    start = end - messages * spacing
    history: list[dict[str, Any]] = []
    roots = {n * 10 for n in range(threads)}
    for n in range(messages):
        at = start + n * spacing
        ts = f"{at:.6f}"
        item: dict[str, Any] = {
            "type": "message",
            "ts": ts,
            "user": "U1" if n % 2 else "U2",
            "text": f"backfilled message {n}: queue depth {n % 23}",
        }
        if n in roots and replies:
            reply_ts = [f"{at + 1 + r * 0.5:.6f}" for r in range(replies)]
            item.update(
                thread_ts=ts, reply_count=replies, latest_reply=reply_ts[-1], reply_users=["U1"]
            )
            for r, reply in enumerate(reply_ts):
                history.append(
                    {
                        "type": "message",
                        "ts": reply,
                        "thread_ts": ts,
                        "user": "U1",
                        "text": f"reply {r} in thread of message {n}",
                    }
                )
        history.append(item)
    state.setdefault("history", {})[channel] = history
    return state


def missing_from_store(
    store: ChannelStore, state: dict[str, Any], *, channel: str = CHANNEL, oldest: float = 0.0
) -> tuple[set[str], set[str]]:
    """(in Slack but not stored, stored but not in Slack): both empty when the store holds the
    channel exactly (messages at or after ``oldest``)."""
    wanted = {m["ts"] for m in state["history"][channel] if float(m["ts"]) >= oldest}
    stored = [m.ts for m in store.messages(TEAM, channel)]
    held = {ts for ts in stored if float(ts) >= oldest}
    return wanted - held, held - wanted
