"""Replay a fixture through the real Bolt app against loopback fakes, deterministically.

Time comes from the events: the virtual clock is set to each envelope's ``event_time`` and
every wait (rate limits, retries) advances it instead of sleeping, so the same fixture gives
the same report byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chanctx.bot.claude.answers import Responder, TurnResult
from chanctx.bot.claude.recipe_runner import RecipeRunner
from chanctx.bot.claude.session import SessionSettings
from chanctx.bot.engine import ContextSettings
from chanctx.bot.replay.fake_anthropic import RecordedRequest
from chanctx.bot.replay.fixture import Fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.runtime import turn_id

__all__ = ["ReplayOptions", "replay"]


@dataclass(frozen=True)
class ReplayOptions:
    settings: ContextSettings = field(default_factory=ContextSettings)
    model: str | None = None
    overflow: Literal["queue", "degrade"] = "queue"
    claude: bool = True  # False: context only, nothing answered (``--no-claude``)
    session: SessionSettings | None = None
    data_dir: Path | None = None  # keep the session logs here (default: a temporary directory)
    recipe: RecipeRunner | None = None
    history_per_channel: int = 5_000  # messages kept per channel (the search window)
    history_mb: int = 1024  # memory all channels' history may hold
    requests_out: Path | None = None  # write each Messages API request body here (JSONL)


def turn_report(result: TurnResult) -> dict[str, Any]:
    built = result.context
    context = None
    if built is not None:
        context = {
            "snapshot": built.snapshot.model_dump(mode="json"),
            "thread": built.thread.model_dump(mode="json") if built.thread else None,
            "tokens": {
                "snapshot": built.snapshot_tokens,
                "thread": built.thread_tokens,
                "total_input": built.snapshot_tokens + built.thread_tokens,
            },
            "notes": list(built.notes),
        }
    return {
        "channel": result.turn.channel,
        "thread_ts": result.turn.thread_ts,
        "anchor_ts": result.turn.anchor_ts,
        "context": context,
        "tool_calls": [
            {"name": c.name, "input": c.input, "output": c.output, "is_error": c.is_error}
            for c in result.tool_calls
        ],
        "reply": result.reply,
        "error": result.error,
        # Rate-limit seconds the turn waited for Slack (virtual time in replay).
        "waited_s": round(built.waited_s, 3) if built is not None else 0.0,
    }


def replay(
    fixture: Fixture,
    *,
    options: ReplayOptions | None = None,
    responder: Responder | None = None,
    then: Callable[[OfflineBot, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run every envelope of ``fixture`` through the app; the report's keys are in fixtures/README.md.

    ``then(bot, report)`` runs before the bot is closed, over the replayed state
    (``replay --serve`` serves the query API from it until interrupted)."""
    options = options or ReplayOptions()
    start = float(fixture.envelopes[0].get("event_time") or 0) if fixture.envelopes else 0.0
    with OfflineBot(
        fixture.slack_api,
        settings=options.settings,
        model=options.model,
        overflow=options.overflow,
        responder=responder,
        start_time=start,
        claude=options.claude,
        cassette=fixture.cassette,
        data_dir=options.data_dir,
        session_settings=options.session,
        recipe=options.recipe,
        history_per_channel=options.history_per_channel,
        history_mb=options.history_mb,
    ) as bot:
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
        results = sorted(bot.runtime.runner.results, key=lambda r: float(r.turn.anchor_ts))
        claude = _claude_totals(results)
        if bot.anthropic is not None:
            # Requests the fake refused for breaking the API's rules: 0 unless we have a bug.
            claude["rejected"] = len(bot.anthropic.rejected)
            if options.requests_out is not None:
                _write_requests(bot.anthropic.requests, options.requests_out)
        report = {
            "fixture": str(fixture.path),
            "events": len(fixture.envelopes),
            "turns": [
                {
                    **turn_report(result),
                    "posted": _posted(bot, result),
                    "feedback": _votes(bot, result),
                }
                for result in results
            ],
            "slack_api_calls": dict(sorted(bot.slack.call_counts().items())),
            "claude": claude,
        }
        if then is not None:
            then(bot, report)
        return report


def _posted(bot: OfflineBot, result: TurnResult) -> list[dict[str, Any]]:
    """What the bot posted for the turn, as Slack stored it: what the user saw (answer parts
    and any failure notice; each carries the turn id in its message metadata)."""
    key = turn_id(result.turn)
    return [
        {
            "method": "chat.postMessage",
            "ts": p["ts"],
            "text": p.get("text"),
            "markdown_text": p.get("markdown_text"),
        }
        for p in bot.slack.posted
        if ((p.get("metadata") or {}).get("event_payload") or {}).get("turn") == key
    ]


def _votes(bot: OfflineBot, result: TurnResult) -> dict[str, int]:
    """People's :+1: / :-1: (and kin) on the turn's answer, as the fixture's events gave them."""
    if bot.runtime.feedback is None:
        return {"helpful": 0, "harmful": 0}
    tally = bot.runtime.feedback.tally(turn_id(result.turn))
    return {"helpful": tally["helpful"], "harmful": tally["harmful"]}


def _write_requests(requests: list[RecordedRequest], path: Path) -> None:
    """What Claude was given, exactly: one request body a line, in the order sent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for request in requests:
            if request.method == "POST" and request.path.split("?")[0] == "/v1/messages":
                out.write(json.dumps(request.body, sort_keys=True, ensure_ascii=False) + "\n")


def _claude_totals(results: list[TurnResult]) -> dict[str, int]:
    names = (
        "requests",
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    )
    return {name: sum(r.usage.get(name, 0) for r in results) for name in names}
