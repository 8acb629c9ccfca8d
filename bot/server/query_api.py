"""The context query API (seed 001): what a channel knows about a query, ranked, sized to a token
budget and formatted for the caller, on the same port as the events path: ``POST
/api/context/query`` (one JSON answer), ``GET /api/context/stream`` (Server-Sent Events: a
``chunk`` event per block, then ``complete``, or ``timeout``) and ``/api/context/ws`` (a
WebSocket: ``{"type": "query", ...}`` in, ``chunk`` messages and ``complete`` out, several
queries per socket).

Every request carries an API key (``Authorization: Bearer``); the keys file says which channels
each key may read. No key or an unknown one: 401. A channel outside the key's list: 403, and
nothing of that channel in the body. A body that is not what the API takes: 422 naming the field.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal

from chanctx.bot.core.channel_view import EngineView
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.turns import TurnResult
from chanctx.bot.server.api_access import (
    NEED_KEY,
    ApiKeys,
    granted,
    may_read,
    refuse,
    validation_errors,
)
from chanctx.bot.server.asgi import BODY_TIMEOUT
from chanctx.bot.server.bodies import BodyTooLarge, read_body
from chanctx.bot.server.query_sources import QuerySources
from chanctx.bot.stores.profiles.local import ProfileStore
from chanctx.tools import BLOCK_TYPES, query_channel
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

__all__ = ["ApiKeys", "QueryBody", "completion", "query_routes", "run_query"]

_MAX_BODY = 64 * 1024


class QueryBody(BaseModel):
    """The query, as seed 001 lays it out (profiles are not served yet)."""

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


def _from_query_string(request: Request) -> dict[str, Any]:
    """SSE takes the body's fields as query parameters; type_filters may repeat or be
    comma-separated."""
    params = request.query_params
    data: dict[str, Any] = {k: v for k, v in params.items() if k != "type_filters"}
    filters = [f for value in params.getlist("type_filters") for f in value.split(",") if f]
    if filters:
        data["type_filters"] = filters
    return data


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def query_routes(
    engine: ContextEngine,
    keys: ApiKeys | None,
    profiles: ProfileStore | None = None,
    turns: Callable[[], Sequence[TurnResult]] | None = None,
    sources: QuerySources | None = None,
) -> list[BaseRoute]:
    """The API's routes. ``keys`` None opens every channel without a key: only for
    ``replay --serve``, which listens on loopback and holds a recording, never a workspace.
    ``sources`` adds file and recipe blocks to the channel's messages."""
    from chanctx.bot.server.inspector import inspector_routes
    from chanctx.bot.server.openapi import openapi_routes  # it describes this module's models
    from chanctx.bot.server.profile_api import profile_routes
    from chanctx.bot.server.query_socket import serve_socket  # it runs this module's queries

    async def query(request: Request) -> Response:
        grant = granted(keys, request.headers.get("authorization", ""))
        if grant is None:
            return refuse(401, NEED_KEY)
        try:  # the events path's reader: a size limit and a deadline for the whole body
            raw = await asyncio.wait_for(read_body(request, _MAX_BODY), timeout=BODY_TIMEOUT)
        except BodyTooLarge:
            return refuse(413, f"body larger than {_MAX_BODY} bytes")
        except (ValueError, TimeoutError, ClientDisconnect):
            return refuse(400, "the body could not be read in time, or its length is not a number")
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            return refuse(
                422, "the body is not JSON", fields=[{"field": "body", "problem": str(error)}]
            )
        try:
            body = QueryBody.model_validate(data)
        except ValidationError as error:
            return refuse(422, "the query is not valid", fields=validation_errors(error))
        if not may_read(grant, body.channel):
            return refuse(403, f"this key may not read channel {body.channel}")
        return JSONResponse(await run_in_threadpool(run_query, engine, body, profiles, sources))

    async def stream(request: Request) -> Response:
        grant = granted(keys, request.headers.get("authorization", ""))
        if grant is None:
            return refuse(401, NEED_KEY)
        try:
            body = QueryBody.model_validate(_from_query_string(request))
        except ValidationError as error:
            return refuse(422, "the query is not valid", fields=validation_errors(error))
        if not may_read(grant, body.channel):
            return refuse(403, f"this key may not read channel {body.channel}")
        started = time.monotonic()
        answer = await run_in_threadpool(run_query, engine, body, profiles, sources)

        async def events() -> AsyncIterator[str]:
            for chunk in answer["chunks"]:
                yield _sse("chunk", chunk)
            if answer["timed_out"]:
                yield _sse("timeout", answer)
                return
            yield _sse("complete", completion(answer, started))

        return StreamingResponse(events(), media_type="text/event-stream")

    async def socket(websocket: WebSocket) -> None:
        grant = granted(keys, websocket.headers.get("authorization", ""))
        if grant is None:
            await websocket.close(code=4401, reason=NEED_KEY)
            return
        await websocket.accept()
        await serve_socket(websocket, engine, grant, profiles, sources)

    return [
        Route("/api/context/query", query, methods=["POST"]),
        Route("/api/context/stream", stream, methods=["GET"]),
        WebSocketRoute("/api/context/ws", socket),
        *profile_routes(profiles or ProfileStore(None), keys),
        *openapi_routes(),
        *(
            inspector_routes(
                engine,
                turns,
                lambda r: granted(keys, r.headers.get("authorization", "")),
                playbooks=sources.playbook_store if sources is not None else None,
            )
            if turns is not None
            else []
        ),
    ]


def completion(answer: dict[str, Any], started: float) -> dict[str, Any]:
    """Seed 001's StreamCompletion."""
    return {
        "total_chunks": len(answer["chunks"]),
        "total_tokens": answer["total_tokens"],
        "token_budget": answer["token_budget"],
        "truncated_count": answer["truncated_count"],
        "elapsed_ms": round((time.monotonic() - started) * 1000, 3),
    }
