"""A channel with older history only Slack holds (threads included), for backfill tests and
the backfill benchmark: the fake Slack's state, and a comparison of a store with it."""

from __future__ import annotations

import copy
import time
from typing import Any

from chanctx.cache.channel_store import ChannelStore

from tests.support.slack_events import BOT_ID, BOT_USER, CHANNEL, STATE, TEAM

__all__ = ["backfill_state", "missing_from_store"]


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
