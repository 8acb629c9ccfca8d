"""The operator's inspector: ``GET /inspector`` (one page, no CDN, no build step) over
``GET /api/turns``, what each recent turn sent to Claude and what it cost.

``/api/turns`` answers with the same keys as the query API and only the turns of channels the
key may read; the page asks for the key once (kept in the tab's session storage) unless the
server runs without keys (``replay --serve``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

from chanctx.bot.claude.answers import TurnResult
from chanctx.bot.engine import ContextEngine
from chanctx.context import render_slack_text
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["inspector_routes", "turn_view"]

_OUTPUT_CHARS = 2_000  # a tool output shown in the page, cut beyond this


def turn_view(result: TurnResult, engine: ContextEngine) -> dict[str, Any]:
    """One turn as the inspector shows it: tokens against budgets, cache share, calls, reply."""
    built = result.context
    usage = result.usage
    fresh = usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    read = usage.get("cache_read_input_tokens", 0)
    settings = engine.settings
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
        "budgets": {
            "snapshot": {
                "used": built.snapshot_tokens if built else 0,
                "budget": settings.snapshot_budget,
            },
            "thread": {
                "used": built.thread_tokens if built else 0,
                "budget": settings.thread_budget,
            },
        },
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


def inspector_routes(
    engine: ContextEngine,
    turns: Callable[[], Sequence[TurnResult]],
    grant_of: Callable[[Request], list[str] | str | None],
) -> list[BaseRoute]:
    page = resources.files("chanctx.bot.server").joinpath("inspector.html").read_text("utf-8")

    async def inspector(request: Request) -> Response:
        return HTMLResponse(page)

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

    return [
        Route("/inspector", inspector, methods=["GET"]),
        Route("/api/turns", recent, methods=["GET"]),
    ]
