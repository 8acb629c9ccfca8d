"""Replay a fixture through the real Bolt app against loopback fakes, deterministically.

Time comes from the events: the virtual clock is set to each envelope's ``event_time`` and
every wait (rate limits, retries) advances it instead of sleeping, so the same fixture gives
the same report byte for byte.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chanctx.bot.claude.session import SessionSettings
from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.data_flags import DEFAULT_HISTORY_MB
from chanctx.bot.core.recipe_runner import RecipeRunner
from chanctx.bot.core.turns import Responder, TurnResult, turn_id
from chanctx.bot.playbooks.channel_playbooks import bullets_json
from chanctx.bot.replay.fake_anthropic import RecordedRequest
from chanctx.bot.replay.fixture import Fixture, interaction_kind
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.replay.offline_teams import OfflineWorkspaces
from chanctx.context.playbook import Similarity
from chanctx.manifest_store import HARMFUL, HELPFUL, PlaybookStore
from tqdm import tqdm

__all__ = ["ReplayOptions", "replay"]


@dataclass(frozen=True)
class ReplayOptions:
    settings: ContextSettings = field(default_factory=ContextSettings)
    model: str | None = None
    overflow: Literal["queue", "degrade"] = "queue"
    claude: bool = True  # False: context only, nothing answered (``--no-claude``)
    session: SessionSettings | None = None
    data_dir: Path | None = None  # keep the session logs here (default: a temporary directory)
    # Go on from what ``data_dir`` holds (its turn journal): mentions it answered are skipped
    # and counted. Without it, a data dir that holds a previous run's state is refused.
    continued: bool = False
    recipe: RecipeRunner | None = None
    history_per_channel: int = 5_000  # newest kept per channel (search: all stored)
    history_mb: int = DEFAULT_HISTORY_MB  # memory the history and indexes may hold (--history-mb)
    requests_out: Path | None = None  # write each Messages API request body here (JSONL)
    curator: Literal["off", "offline", "claude"] = "offline"  # who grows the playbooks
    curator_model: str = "claude-haiku-4-5"
    # The reaction names that say an answer helped, and that it did not.
    reactions: tuple[frozenset[str], frozenset[str]] = (HELPFUL, HARMFUL)
    similar: Similarity | None = None  # an embedding model for merging bullets
    channel_store: bool = True  # events go through a channel store, as in ``chanctx run``


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
        # The playbook bullets the turn's session held (attached when its context was).
        "playbook": list(result.playbook_ids),
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
    if "workspaces" in fixture.slack_api:
        return _replay_workspaces(fixture, options, start)
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
        curator=options.curator,
        curator_model=options.curator_model,
        reactions=options.reactions,
        similar=options.similar,
        channel_store=options.channel_store,
    ) as bot:
        interactions: list[dict[str, Any]] = []
        skipped: list[dict[str, str]] = []
        for envelope in _shown_progress(fixture.envelopes):
            if options.continued:
                skipped += _answered_before(bot, envelope)
            response = bot.dispatch(envelope)
            kind = interaction_kind(envelope)
            if kind is not None:
                interactions.append(_interaction(kind, envelope, response.body))
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
            "playbook": playbook_report(bot.playbooks.store) if bot.playbooks else {},
        }
        report["answers_from"] = _answers_from(fixture, options)
        if interactions:
            report["interactions"] = interactions
        if skipped:
            report["skipped_mentions"] = skipped
        if then is not None:
            then(bot, report)
        return report


def _answers_from(fixture: Fixture, options: ReplayOptions) -> str:
    if not options.claude:
        return "none (--no-claude: context only)"
    if fixture.cassette:
        return "the fixture's cassette (claude.jsonl)"
    return "chanctx's offline model"


def _answered_before(bot: OfflineBot, envelope: Mapping[str, Any]) -> list[dict[str, str]]:
    """A mention whose delivery the data dir's turn journal already holds (answered by an
    earlier replay or run into it): it will not be answered again, and the report says so."""
    event = envelope.get("event")
    event_id = envelope.get("event_id")
    if not isinstance(event, Mapping) or not isinstance(event_id, str):
        return []
    is_mention = event.get("type") == "app_mention" or (
        event.get("type") == "message"
        and event.get("channel_type") == "im"
        and not event.get("subtype")
    )
    if not is_mention or not bot.runtime.turns.seen_event(event_id):
        return []
    return [{
        "channel": str(event.get("channel", "")),
        "ts": str(event.get("ts", "")),
        "why": "answered before into this --data-dir (its turn journal holds it)",
    }]  # fmt: skip


def playbook_report(store: PlaybookStore) -> dict[str, list[dict[str, Any]]]:
    """Every channel's playbook after the replay, superseded and quarantined bullets too."""
    found = {channel: bullets_json(store, channel) for channel in store.channels()}
    return {channel: bullets for channel, bullets in found.items() if bullets}


def _replay_workspaces(fixture: Fixture, options: ReplayOptions, start: float) -> dict[str, Any]:
    """Several workspaces in one fixture, served as ``run --http --oauth`` serves them: the
    report's turns name their ``team``; ``workspaces`` gives each team's own Slack calls."""
    with OfflineWorkspaces(
        fixture.slack_api["workspaces"],
        start_time=start,
        data_dir=options.data_dir,
        claude=options.claude,
        cassette=fixture.cassette,
        settings=options.settings,
        model=options.model,
        overflow=options.overflow,
        session_settings=options.session,
        recipe=options.recipe,
        history_per_channel=options.history_per_channel,
        history_mb=options.history_mb,
    ) as teams:
        for envelope in _shown_progress(fixture.envelopes):
            teams.dispatch(envelope)
        turns: list[tuple[str, TurnResult, OfflineBot]] = [
            (team, result, bot)
            for team, bot in sorted(teams.bots.items())
            for result in bot.runtime.runner.results
        ]
        turns.sort(key=lambda item: float(item[1].turn.anchor_ts))
        results = [result for _, result, _ in turns]
        claude = _claude_totals(results)
        claude["rejected"] = sum(
            len(b.anthropic.rejected) for b in teams.bots.values() if b.anthropic is not None
        )
        per_team = {team: dict(sorted(fake.call_counts().items()))
                    for team, fake in sorted(teams.fakes.teams.items())}  # fmt: skip
        totals: dict[str, int] = {}
        for counts in per_team.values():
            for method, n in counts.items():
                totals[method] = totals.get(method, 0) + n
        return {
            "fixture": str(fixture.path),
            "events": len(fixture.envelopes),
            "turns": [
                {
                    "team": team,
                    **turn_report(result),
                    "posted": _posted(bot, result),
                    "feedback": _votes(bot, result),
                }
                for team, result, bot in turns
            ],
            "slack_api_calls": dict(sorted(totals.items())),
            "workspaces": {team: {"slack_api_calls": calls} for team, calls in per_team.items()},
            "claude": claude,
            "answers_from": _answers_from(fixture, options),
            "playbook": {
                channel: bullets
                for bot in teams.bots.values()
                if bot.playbooks is not None
                for channel, bullets in playbook_report(bot.playbooks.store).items()
            },
        }


def _posted(bot: OfflineBot, result: TurnResult) -> list[dict[str, Any]]:
    """Every call that put the turn's answer in front of the user, in order: posts, stream
    calls (each with the text it added and the message's text after it) and updates. The
    messages are found by the turn id their metadata carries once finished."""
    key, channel = turn_id(result.turn), result.turn.channel
    mine = {
        m["ts"]
        for m in bot.slack.messages(channel)
        if ((m.get("metadata") or {}).get("event_payload") or {}).get("turn") == key
    }
    return [
        {k: call[k] for k in ("method", "ts", "text", "markdown_text")}
        for call in bot.slack.sent
        if call["channel"] == channel and call["ts"] in mine
    ]


def _interaction(kind: str, payload: dict[str, Any], answer: str) -> dict[str, Any]:
    """A slash command or a button click, and what the person saw back (the command's answer,
    shown only to them; a click is acknowledged with nothing)."""
    if kind == "slash_command":
        return {
            "kind": kind,
            "user": payload.get("user_id"),
            "channel": payload.get("channel_id"),
            "input": f"{payload.get('command')} {payload.get('text') or ''}".strip(),
            "response": answer or None,
        }
    action = (payload.get("actions") or [{}])[0]
    container = payload.get("container") or {}
    return {
        "kind": kind,
        "user": (payload.get("user") or {}).get("id"),
        "channel": container.get("channel_id"),
        "input": f"{action.get('action_id')}={action.get('value')} on {container.get('message_ts')}",
        "response": answer or None,
    }


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


# A fixture this long takes seconds to replay: a terminal gets a progress bar (on stderr, so the
# report on stdout stays the same byte for byte); a pipe or a log gets nothing.
_PROGRESS_FROM = 1_000


def _shown_progress(envelopes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    shown = sys.stderr.isatty() and len(envelopes) >= _PROGRESS_FROM
    yield from tqdm(
        envelopes, desc="replaying", unit=" events", disable=not shown, file=sys.stderr, leave=False
    )
