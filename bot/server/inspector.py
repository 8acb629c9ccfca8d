"""The operator's inspector: ``GET /inspector`` (one page, no CDN, no build step) over
``GET /api/turns``, what each recent turn sent to Claude and what it cost.

``/api/turns`` answers with the same keys as the query API and only the turns of channels the
key may read; the page asks for the key once (kept in the tab's session storage) unless the
server runs without keys (``replay --serve``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.turns import TurnResult
from chanctx.bot.playbooks.channel_playbooks import bullets_json
from chanctx.context import render_slack_text
from chanctx.manifest_store import PlaybookStore
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["inspector_page_route", "inspector_routes", "turn_view"]

_OUTPUT_CHARS = 2_000  # a tool output shown in the page, cut beyond this
_CHANNEL_ID = re.compile(r"^[CDG][A-Z0-9]{2,20}$")  # as QueryBody takes them


def turn_view(result: TurnResult, engine: ContextEngine) -> dict[str, Any]:
    """One turn as the inspector shows it: tokens against budgets, cache share, the blocks
    sent, Slack reads, tool calls, reply."""
    built = result.context
    usage = result.usage
    fresh = usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    read = usage.get("cache_read_input_tokens", 0)
    return {
        "channel": result.turn.channel,
        "channel_name": engine.names.channels.get(result.turn.channel, result.turn.channel),
        "thread_ts": result.turn.thread_ts,
        "anchor_ts": result.turn.anchor_ts,
        "question": (
            render_slack_text(
                built.anchor.text, users=engine.names.users, channels=engine.names.channels
            )
            if built is not None
            else None
        ),  # "@Ana", not "<@U0ANA>": as Slack shows it
        "budgets": _budgets(result, engine),
        "blocks": [{"kind": b.kind, "name": b.name, "tokens": b.tokens} for b in result.sent],
        "slack_calls": dict(result.slack_calls),
        "playbook": list(result.playbook_ids),
        "usage": usage,
        "cache_read_share": round(read / (fresh + read), 4) if fresh + read else 0.0,
        "notes": list(built.notes) if built is not None else [],
        "waited_s": built.waited_s if built is not None else 0.0,
        "tool_calls": [
            {
                "name": c.name,
                "input": c.input,
                "output": c.output[:_OUTPUT_CHARS],
                "is_error": c.is_error,
            }
            for c in result.tool_calls
        ],
        "reply": result.reply,
        "error": result.error,
    }


def _budgets(result: TurnResult, engine: ContextEngine) -> dict[str, dict[str, int]]:
    """Tokens used against each budget; a budget of 0 means the turn had none. The snapshot
    and thread are what was built for the question (attached on a session's first turn);
    ``total`` is the first request's estimated input against the compaction point."""
    built, limits, settings = result.context, result.limits, engine.settings
    recipe = sum(b.tokens for b in result.sent if b.kind == "recipe")
    tools = sum(engine.counter.count(c.output) for c in result.tool_calls)
    per_call = limits.get("tool_output", 0)
    return {
        "snapshot": {
            "used": built.snapshot_tokens if built else 0,
            "budget": settings.snapshot_budget,
        },
        "thread": {"used": built.thread_tokens if built else 0, "budget": settings.thread_budget},
        "recipe": {"used": recipe, "budget": limits.get("recipe", 0)},
        "tools": {"used": tools, "budget": per_call * len(result.tool_calls)},
        "total": {"used": result.request_tokens, "budget": limits.get("request", 0)},
    }


def inspector_page_route() -> Route:
    """The page itself: static, the same for every workspace; it reads with the key it asks."""
    page = resources.files("chanctx.bot.server").joinpath("inspector.html").read_text("utf-8")

    async def inspector(request: Request) -> Response:
        return HTMLResponse(page)

    return Route("/inspector", inspector, methods=["GET"])


def inspector_routes(
    engine: ContextEngine,
    turns: Callable[[], Sequence[TurnResult]],
    grant_of: Callable[[Request], list[str] | str | None],
    playbooks: PlaybookStore | None = None,
) -> list[BaseRoute]:
    async def recent(request: Request) -> Response:
        grant = grant_of(request)
        if grant is None:
            return JSONResponse({"error": "an API key is required"}, status_code=401)
        shown = [
            turn_view(result, engine)
            for result in reversed(list(turns()))  # newest first
            if grant == "*" or result.turn.channel in grant
        ]
        return JSONResponse({"turns": shown})

    async def playbook(request: Request) -> Response:
        """``?channel=C..``: that channel's bullets; without it, the channels that have a
        playbook, as far as the key may read them."""
        grant = grant_of(request)
        if grant is None:
            return JSONResponse({"error": "an API key is required"}, status_code=401)
        known = playbooks.channels() if playbooks is not None else []
        channel = request.query_params.get("channel")
        if channel is None:
            shown = [
                c
                for c in known
                if (grant == "*" or c in grant) and playbooks and playbooks.bullets(c)
            ]
            return JSONResponse(
                {"channels": [{"id": c, "name": engine.names.channels.get(c, c)} for c in shown]}
            )
        if not _CHANNEL_ID.match(channel):
            return JSONResponse(
                {"error": "the query is not valid",
                 "fields": [{"field": "channel", "problem": f"{channel[:40]!r} is not a channel id"}]},
                status_code=422,
            )  # fmt: skip
        if grant != "*" and channel not in grant:
            return JSONResponse(
                {"error": f"this key may not read channel {channel}"}, status_code=403
            )
        if playbooks is None or channel not in known:
            return JSONResponse({"channel": channel, "bullets": []})
        return JSONResponse({"channel": channel, "bullets": bullets_json(playbooks, channel)})

    return [
        inspector_page_route(),
        Route("/api/turns", recent, methods=["GET"]),
        Route("/api/playbook", playbook, methods=["GET"]),
    ]
