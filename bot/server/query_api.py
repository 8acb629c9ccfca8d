"""The context query API: what a channel knows about a query, ranked, sized to a token
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
from typing import Any

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
from chanctx.bot.server.inspector import inspector_routes
from chanctx.bot.server.openapi import openapi_routes
from chanctx.bot.server.profile_api import profile_routes
from chanctx.bot.server.queries import QueryBody, completion, run_query
from chanctx.bot.server.query_socket import serve_socket
from chanctx.bot.server.query_sources import QuerySources
from chanctx.bot.stores.profiles import ProfileStore
from chanctx.bot.stores.profiles.local import LocalProfileStore
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

__all__ = ["ApiKeys", "query_routes"]

_MAX_BODY = 64 * 1024


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
        *profile_routes(profiles or LocalProfileStore(None), keys),
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
