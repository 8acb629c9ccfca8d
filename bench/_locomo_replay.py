"""LoCoMo through the bot, as a user would meet it: the real tool path, no shortcut.

One conversation becomes a Slack channel the bot was in from the start: every turn is a
``message`` event delivered through the real Bolt app (an image's caption as the title of a
shared file), the speakers' names come from ``users.info`` on the fake Slack. Then each
question is asked in the channel as people ask: a top-level message mentioning the bot,
delivered as Slack delivers it (a ``message`` and an ``app_mention``), two minutes after the
previous one. The bot answers it through a real Claude session against the fake Messages API,
whose offline model calls ``channel_context`` with the question (``max_results`` 50) at the
default budgets (snapshot, thread, tool output 4,000 tokens). The bot's answer comes back to it
as Slack sends a bot its own messages, so later questions find the earlier questions and
answers in the channel, as they would be.

What is measured is the tool's real output: its rows, in order, with a match the context
package already holds (``[ts, "in context"]``) counted where it stands, and every row that is
not a conversation turn (an earlier question or answer) taking its place in the ranking.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fixture import users_state
from chanctx.bot.replay.offline import OfflineBot
from chanctx.tools import read_context_output

BOT_USER, BOT_ID, TEAM = "U0CHANCTX0", "B0CHANCTX0", "T0LOCOMO01"
MAX_RESULTS = 50
QUESTION_GAP = 120  # seconds between two questions
FIRST_QUESTION = 86_400  # the first question comes a day after the last turn
READS = ("conversations.history", "conversations.replies")


@dataclass(frozen=True)
class Asked:
    """One question as the bot met it: what channel_context answered, in order."""

    question: str
    rows: list[str]  # the ts of each row, best first (held rows included)
    held: int  # rows that were [ts, "in context"]
    error: str | None


def _envelope(event: dict[str, Any], number: Iterator[int]) -> dict[str, Any]:
    return {
        "type": "event_callback",
        "team_id": TEAM,
        "api_app_id": "A0LOCOMO01",
        "event": event,
        "event_id": f"EvLOCOMO{next(number):07d}",
        "event_time": int(float(event["ts"])),
        "authorizations": [{"is_bot": True, "team_id": TEAM, "user_id": BOT_USER}],
    }


def _state(channel: str, name: str, speakers: dict[str, str]) -> dict[str, Any]:
    return {
        "auth": {"user_id": BOT_USER, "bot_id": BOT_ID, "team_id": TEAM, "team": "LoCoMo"},
        "channels": {channel: {"id": channel, "is_channel": True, "name": name}},
        "users": users_state(
            {uid: (speaker, speaker.lower()) for uid, speaker in speakers.items()},
            bot_user=BOT_USER,
        ),
    }


def ask_all(
    channel: str,
    name: str,
    speakers: dict[str, str],  # user id -> speaker
    turns: list[dict[str, Any]],  # {"ts", "user", "text", "caption"}
    questions: list[str],
    *,
    restart: bool = False,
    index_bytes: int | None = None,
    database_url: str | None = None,
) -> list[Asked]:
    """Replay the conversation, then ask every question; what the tool answered each time.

    ``restart``: the conversation goes into a channel store, then a new bot over the same data
    dir (empty caches, as after a restart) answers the questions: its index is built from the
    store. ``index_bytes`` bounds that index (a budget smaller than the channel keeps the newest
    part and reaches the older one through the store's full-text index). ``database_url``:
    that store is PostgreSQL (a schema of the channel's own) instead of SQLite in the data dir.
    """
    number = itertools.count(1)
    start = float(turns[0]["ts"]) - 60
    at = int(float(turns[-1]["ts"])) + FIRST_QUESTION
    state = _state(channel, name, speakers)
    if not restart:
        with OfflineBot(state, claude=True, start_time=start) as bot:
            for event in _turn_events(channel, turns, number):
                bot.dispatch(_envelope(event, number))
            return _ask(bot, channel, speakers, questions, at, number)
    database = None if database_url is None else (database_url, f"locomo_{channel.lower()}")
    with tempfile.TemporaryDirectory(prefix="chanctx-locomo-") as tmp:
        data = Path(tmp)
        with OfflineBot(
            state, start_time=start, data_dir=data, channel_store=True, database=database
        ) as bot:
            bot.engine.warm_channel(channel)  # the bot loaded the channel once, when it joined
            for event in _turn_events(channel, turns, number):
                bot.dispatch(_envelope(event, number))
        with OfflineBot(
            state, claude=True, start_time=at - 60, data_dir=data, channel_store=True,
            database=database,
        ) as bot:  # fmt: skip
            assert bot.engine.indexes is not None and bot.engine.held(channel) == 0
            if index_bytes is not None:
                bot.engine.indexes.max_bytes = index_bytes
            asked = _ask(bot, channel, speakers, questions, at, number)
            reads = {m: bot.slack.call_counts().get(m, 0) for m in READS}
            assert not any(reads.values()), f"the restarted bot asked Slack: {reads}"
            return asked


def _turn_events(
    channel: str, turns: list[dict[str, Any]], number: Iterator[int]
) -> Iterator[dict[str, Any]]:
    for turn in turns:
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "channel_type": "channel",
            "user": turn["user"],
            "text": turn["text"],
            "ts": turn["ts"],
            "event_ts": turn["ts"],
        }
        if turn.get("caption"):
            event["subtype"] = "file_share"
            event["files"] = [
                {
                    "id": f"F{next(number):09d}",
                    "name": "image.jpg",
                    "title": turn["caption"],
                    "mimetype": "image/jpeg",
                    "mode": "hosted",
                }
            ]
        yield event


def _ask(
    bot: OfflineBot,
    channel: str,
    speakers: dict[str, str],
    questions: list[str],
    at: int,
    number: Iterator[int],
) -> list[Asked]:
    assert bot.anthropic is not None
    bot.anthropic.messages.model.max_results = MAX_RESULTS
    out: list[Asked] = []
    for position, question in enumerate(questions):
        ts = f"{at + QUESTION_GAP * position}.000100"
        asker = list(speakers)[position % len(speakers)]
        text = f"<@{BOT_USER}> {question}"
        said = {"channel": channel, "user": asker, "text": text, "ts": ts, "event_ts": ts}
        before = len(bot.runtime.runner.results)
        posted = len(bot.slack.posted)
        bot.dispatch(_envelope({"type": "message", "channel_type": "channel", **said}, number))
        bot.dispatch(_envelope({"type": "app_mention", **said}, number))
        results = list(bot.runtime.runner.results)[before:]
        out.append(_asked(question, results))
        for answer in bot.slack.posted[posted:]:  # Slack sends the bot its own messages
            event = {
                "type": "message",
                "channel": channel,
                "channel_type": "channel",
                "user": BOT_USER,
                "bot_id": BOT_ID,
                "text": answer.get("text", ""),
                "ts": answer["ts"],
                "event_ts": answer["ts"],
            }
            if answer.get("thread_ts"):
                event["thread_ts"] = answer["thread_ts"]
            bot.dispatch(_envelope(event, number))
    return out


def _asked(question: str, results: list[Any]) -> Asked:
    if len(results) != 1:
        return Asked(question, [], 0, f"{len(results)} turns answered the question")
    (result,) = results
    calls = [c for c in result.tool_calls if c.name == "channel_context"]
    if not calls or calls[0].is_error:
        return Asked(question, [], 0, result.error or "no channel_context call")
    rows = read_context_output(calls[0].output)
    return Asked(
        question,
        [str(row["ts"]) for row in rows],
        sum(1 for row in rows if row["held"]),
        result.error,
    )
