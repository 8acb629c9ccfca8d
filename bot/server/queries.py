"""One context query: its body (what the caller asks), running it over what the engine holds
(a profile filling the fields the body leaves out), and the summary a stream ends with. The
HTTP routes (``query_api``), the WebSocket (``query_socket``) and the OpenAPI description
(``openapi``) all use it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from chanctx.bot.core.channel_view import EngineView
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.server.query_sources import QuerySources
from chanctx.bot.stores.profiles import ProfileStore
from chanctx.tools import BLOCK_TYPES, query_channel
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["QueryBody", "completion", "run_query", "with_profile"]


class QueryBody(BaseModel):
    """What a caller asks: the query text, the channel, a token budget, the format, the block
    types wanted, an optional profile and a time limit; unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2_000)
    channel: str = Field(pattern=r"^[CDG][A-Z0-9]{2,20}$")
    token_budget: int = Field(default=2_000, ge=16, le=200_000)
    format: Literal["json", "markdown", "text"] = "markdown"
    type_filters: list[Literal["message", "thread", "file", "recipe", "playbook"]] = Field(
        default_factory=list
    )
    profile: str | None = Field(default=None, max_length=100)
    timeout_ms: int | None = Field(default=None, ge=1, le=60_000)


def with_profile(body: QueryBody, profiles: ProfileStore | None) -> tuple[QueryBody, bool]:
    """``body`` with its profile's budget, format and filters for the fields it omits, and
    whether it named a profile that does not exist (then the defaults stand)."""
    if body.profile is None:
        return body, False
    profile = profiles.get(body.profile) if profiles is not None else None
    if profile is None:
        return body, True
    given = body.model_fields_set
    taken: dict[str, Any] = {}
    if "token_budget" not in given:
        taken["token_budget"] = profile.token_budget
    if "format" not in given:
        taken["format"] = profile.preferred_format
    if "type_filters" not in given:
        taken["type_filters"] = list(profile.type_filters)
    return body.model_copy(update=taken), False


def run_query(
    engine: ContextEngine,
    body: QueryBody,
    profiles: ProfileStore | None = None,
    sources: QuerySources | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """The ContextResponse for ``body`` over what the engine holds (no Slack call but the
    channel's one-time cold start, and a shared file's first download). ``should_stop`` ends
    the work early (the socket that asked is gone): the answer is then partial."""
    body, fallback = with_profile(body, profiles)
    channel = body.channel
    scope = EngineView(engine, channel).search_index()
    deadline = time.monotonic() + body.timeout_ms / 1000 if body.timeout_ms else None

    def stop() -> bool:
        return should_stop() or (deadline is not None and time.monotonic() > deadline)

    wanted: set[str] = set(body.type_filters or BLOCK_TYPES)
    extra = sources.blocks(channel, wanted, stop) if sources is not None else []

    result = query_channel(
        scope,
        body.query,
        channel_label="#" + engine.names.channels.get(channel, channel),
        names=engine.names,
        counter=engine.counter,
        token_budget=body.token_budget,
        fmt=body.format,
        type_filters=body.type_filters,
        thread_of=lambda root_ts: engine.cached_thread(channel, root_ts),
        pinned=engine.pinned(channel),
        extra=extra,
        should_stop=stop,
    )
    return {
        "chunks": [chunk.__dict__ for chunk in result.chunks],
        "total_tokens": result.total_tokens,
        "token_budget": body.token_budget,
        "truncated_count": result.truncated_count,
        "query": body.query,
        "format": body.format,
        "timed_out": result.timed_out,
        "rendered": result.rendered,
        "channel": channel,
        "profile_fallback": fallback,
    }


def completion(answer: dict[str, Any], started: float) -> dict[str, Any]:
    """The summary a stream ends with: how many chunks, how many tokens of which budget, how
    many were cut, and how long it took."""
    return {
        "total_chunks": len(answer["chunks"]),
        "total_tokens": answer["total_tokens"],
        "token_budget": answer["token_budget"],
        "truncated_count": answer["truncated_count"],
        "elapsed_ms": round((time.monotonic() - started) * 1000, 3),
    }
