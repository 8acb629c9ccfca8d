"""Same context either way: a channel imported from an export and the same channel heard as
live events (signed events through the bot's app and engine) give the same store, the same
snapshot for the same mention and the same ``channel_context`` results."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.core.channel_view import EngineView
from chanctx.bot.export.importer import import_export
from chanctx.bot.replay.offline import OfflineBot
from chanctx.cache.channel_store import SqliteChannelStore
from chanctx.tools import ChannelTools

from tests.support.slack_events import (
    CHANNEL,
    STATE,
    TEAM,
    edit,
    envelope,
    mention_pair,
    message,
    reaction,
    ts,
)
from tests.support.slack_exports import write_folder

ROOT, FIRST, SECOND, VAULT, POOL = ts(1), ts(2), ts(3), ts(4), ts(5)
TEXTS = {
    ROOT: "checkout-api returns 502 after deploy v41",
    FIRST: "rolled back v41 — ça marche 🎉",
    SECOND: "confirmed, checkout latency is normal again",
    VAULT: "the vault code moved to the old store",
    POOL: "postgres pool exhausted again on checkout",
}
MOVED = "the vault code moved to the Zürich store"
EDITED_AT = ts(6)


def live_events() -> list[dict[str, Any]]:
    """The channel as the bot hears it: posts, two thread replies, an edit, a reaction."""
    vault = message(VAULT, TEXTS[VAULT], user="U2")
    return [
        envelope(message(ROOT, TEXTS[ROOT])),
        envelope(message(FIRST, TEXTS[FIRST], user="U2", thread_ts=ROOT)),
        envelope(message(SECOND, TEXTS[SECOND], thread_ts=ROOT)),
        envelope(vault),
        envelope(edit(EDITED_AT, vault, MOVED)),
        envelope(message(POOL, TEXTS[POOL])),
        envelope(reaction(ts(7), POOL, "eyes", user="U2")),
    ]


def exported_channel() -> dict[str, bytes]:
    """The same channel as Slack's export writes it once all that happened."""
    day = [
        {"type": "message", "user": "U1", "text": TEXTS[ROOT], "ts": ROOT, "thread_ts": ROOT,
         "reply_count": 2, "reply_users": ["U2", "U1"], "latest_reply": SECOND,
         "replies": [{"user": "U2", "ts": FIRST}, {"user": "U1", "ts": SECOND}]},
        {"type": "message", "user": "U2", "text": TEXTS[FIRST], "ts": FIRST, "thread_ts": ROOT,
         "parent_user_id": "U1"},
        {"type": "message", "user": "U1", "text": TEXTS[SECOND], "ts": SECOND,
         "thread_ts": ROOT, "parent_user_id": "U1"},
        {"type": "message", "user": "U2", "text": MOVED, "ts": VAULT,
         "edited": {"user": "U2", "ts": EDITED_AT}},
        {"type": "message", "user": "U1", "text": TEXTS[POOL], "ts": POOL,
         "reactions": [{"name": "eyes", "users": ["U2"], "count": 1}]},
    ]  # fmt: skip
    users = [dict(u, team_id=TEAM) for u in STATE["users"].values()]
    channels = [{"id": CHANNEL, "name": "general", "members": ["U1", "U2"]}]
    return {
        "users.json": dump(users),
        "channels.json": dump(channels),
        f"general/{'2026-06-09'}.json": dump(day),
    }


def dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=4).encode()


def bot_on(data: Path) -> OfflineBot:
    return OfflineBot(copy.deepcopy(STATE), data_dir=data, channel_store=True)


def first_run(data: Path, events: list[dict[str, Any]]) -> None:
    """The bot's first run in the data dir: a mention (the channel's one
    ``conversations.history``, after which the store answers for the channel), then
    ``events``. (The fake Slack's history holds what was dispatched but not its reactions, so
    a history read after the reaction would store the copy without it.)"""
    with bot_on(data) as bot:
        for event in mention_pair(ts(10), "hello"):
            bot.dispatch(event)
        for event in events:
            bot.dispatch(event)


def context_after_restart(data: Path) -> tuple[Any, list[str]]:
    """The snapshot of one mention and the ``channel_context`` results, after a restart."""
    with bot_on(data) as bot:
        for event in mention_pair(ts(20), "where did the vault code move?"):
            bot.dispatch(event)
        (result,) = bot.runtime.runner.results
        tools = ChannelTools(EngineView(bot.engine, CHANNEL), names=bot.engine.names)
        found = [
            tools.call("channel_context", {"intent": query}).content
            for query in ("vault code", "checkout 502", "postgres pool", "ça marche")
        ]
        return result.context, found


def stored(data: Path) -> dict[str, Any]:
    store = SqliteChannelStore(data, read_only=True)
    try:
        return {
            "messages": store.messages(TEAM, CHANNEL),
            "replies": store.replies(TEAM, CHANNEL, ROOT),
            "names": (store.channel_names(TEAM), store.user_names(TEAM)),
            "search": store.search_candidates(TEAM, CHANNEL, ["vault", "checkout"], 10),
        }
    finally:
        store.close()


@pytest.mark.slow
def test_an_imported_channel_gives_the_context_the_live_channel_gives(tmp_path: Path) -> None:
    live, imported = tmp_path / "live", tmp_path / "imported"
    first_run(live, live_events())
    with SqliteChannelStore(imported) as store:
        summary = import_export(write_folder(exported_channel(), tmp_path / "export"), store)
    assert (summary.imported, summary.refused) == (5, 0)
    first_run(imported, [])

    live_store, imported_store = stored(live), stored(imported)
    assert [m.text for m in live_store["messages"]][:5] == [
        TEXTS[ROOT], TEXTS[FIRST], TEXTS[SECOND], MOVED, TEXTS[POOL]
    ]  # fmt: skip
    # The export's root carries its thread's counters, which no live event delivers (Slack
    # sends the replies, not a new copy of the root): more known, the same thread.
    root = imported_store["messages"][0]
    assert (root.reply_count, root.latest_reply, root.reply_users) == (2, SECOND, ("U2", "U1"))
    imported_store["messages"][0] = live_store["messages"][0]
    # users.json names everyone; the live bot asked Slack only for whom it met.
    live_names, imported_names = live_store.pop("names"), imported_store.pop("names")
    assert live_names[0] == imported_names[0]
    assert live_names[1].items() <= imported_names[1].items()
    assert imported_store == live_store

    live_context, live_found = context_after_restart(live)
    imported_context, imported_found = context_after_restart(imported)
    assert "Zürich" in live_found[0] and "ça marche" in live_found[3]
    assert imported_found == live_found
    shown = repr(live_context.snapshot)
    assert MOVED in shown and "reply_count=2" in shown and ":eyes: 1" in shown
    assert imported_context == live_context
