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
import contextlib
import hmac
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from chanctx.bot.channel_view import EngineView
from chanctx.bot.claude.answers import TurnResult
from chanctx.bot.engine import ContextEngine
from chanctx.bot.server.asgi import BODY_TIMEOUT
from chanctx.bot.server.bodies import BodyTooLarge, read_body
from chanctx.bot.server.profiles import AgentProfile, ProfileFields, ProfileStore
from chanctx.bot.server.query_sources import QuerySources
from chanctx.tools import BLOCK_TYPES, query_channel
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

__all__ = ["ApiKeys", "QueryBody", "query_routes"]

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


class ApiKeys:
    """Which channels each API key may read: ``{"<key>": ["C123", ...] | "*"}`` (JSON or YAML)."""

    def __init__(self, grants: Mapping[str, list[str] | str]) -> None:
        self._grants = dict(grants)

    @classmethod
    def load(cls, path: Path) -> ApiKeys:
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"{path}: cannot read the API keys file ({error})") from None
        if not isinstance(raw, dict) or not raw:
            raise ValueError(f'{path}: expected a mapping of API key to channel ids or "*"')
        for key, channels in raw.items():
            ok = channels == "*" or (
                isinstance(channels, list) and all(isinstance(c, str) for c in channels)
            )
            if not isinstance(key, str) or len(key) < 16 or not ok:
                raise ValueError(
                    f"{path}: each key must be a string of 16+ characters mapped to a list of "
                    f'channel ids or "*" (entry {str(key)[:4]}... is not)'
                )
        return cls(raw)

    def grant(self, presented: str) -> list[str] | str | None:
        """The channels of ``presented``, compared in constant time against every key."""
        found: list[str] | str | None = None
        for key, channels in self._grants.items():
            if hmac.compare_digest(key.encode(), presented.encode()):
                found = channels
        return found


def _error(status: int, message: str, **extra: Any) -> Response:
    return JSONResponse({"error": message, **extra}, status_code=status)


def _validation_errors(error: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(p) for p in item["loc"]) or "body", "problem": item["msg"]}
        for item in error.errors()
    ]


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
        timeout_ms=body.timeout_ms,
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


def _granted(keys: ApiKeys | None, authorization: str) -> list[str] | str | None:
    """The channels the request's key may read ("*": all); None without a known key."""
    if keys is None:
        return "*"
    presented = authorization[7:].strip() if authorization[:7].lower() == "bearer " else ""
    return keys.grant(presented) if presented else None


def _may_read(grant: list[str] | str, channel: str) -> bool:
    return grant == "*" or channel in grant


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

    async def query(request: Request) -> Response:
        grant = _granted(keys, request.headers.get("authorization", ""))
        if grant is None:
            return _error(401, _NEED_KEY)
        try:  # the events path's reader: a size limit and a deadline for the whole body
            raw = await asyncio.wait_for(read_body(request, _MAX_BODY), timeout=BODY_TIMEOUT)
        except BodyTooLarge:
            return _error(413, f"body larger than {_MAX_BODY} bytes")
        except (ValueError, TimeoutError, ClientDisconnect):
            return _error(400, "the body could not be read in time, or its length is not a number")
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            return _error(
                422, "the body is not JSON", fields=[{"field": "body", "problem": str(error)}]
            )
        try:
            body = QueryBody.model_validate(data)
        except ValidationError as error:
            return _error(422, "the query is not valid", fields=_validation_errors(error))
        if not _may_read(grant, body.channel):
            return _error(403, f"this key may not read channel {body.channel}")
        return JSONResponse(await run_in_threadpool(run_query, engine, body, profiles, sources))

    async def stream(request: Request) -> Response:
        grant = _granted(keys, request.headers.get("authorization", ""))
        if grant is None:
            return _error(401, _NEED_KEY)
        try:
            body = QueryBody.model_validate(_from_query_string(request))
        except ValidationError as error:
            return _error(422, "the query is not valid", fields=_validation_errors(error))
        if not _may_read(grant, body.channel):
            return _error(403, f"this key may not read channel {body.channel}")
        started = time.monotonic()
        answer = await run_in_threadpool(run_query, engine, body, profiles, sources)

        async def events() -> AsyncIterator[str]:
            for chunk in answer["chunks"]:
                yield _sse("chunk", chunk)
            if answer["timed_out"]:
                yield _sse("timeout", answer)
                return
            yield _sse("complete", _completion(answer, started))

        return StreamingResponse(events(), media_type="text/event-stream")

    async def socket(websocket: WebSocket) -> None:
        grant = _granted(keys, websocket.headers.get("authorization", ""))
        if grant is None:
            await websocket.close(code=4401, reason=_NEED_KEY)
            return
        await websocket.accept()
        await _serve_socket(websocket, engine, grant, profiles, sources)

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
                lambda r: _granted(keys, r.headers.get("authorization", "")),
                playbooks=sources.playbook_store if sources is not None else None,
            )
            if turns is not None
            else []
        ),
    ]


_NEED_KEY = "an API key is required: Authorization: Bearer <key>"


def _completion(answer: dict[str, Any], started: float) -> dict[str, Any]:
    """Seed 001's StreamCompletion."""
    return {
        "total_chunks": len(answer["chunks"]),
        "total_tokens": answer["total_tokens"],
        "token_budget": answer["token_budget"],
        "truncated_count": answer["truncated_count"],
        "elapsed_ms": round((time.monotonic() - started) * 1000, 3),
    }


async def _serve_socket(
    websocket: WebSocket,
    engine: ContextEngine,
    grant: list[str] | str,
    profiles: ProfileStore | None,
    sources: QuerySources | None,
) -> None:
    """Queries in, answers out, in order. A reader task keeps listening while a query runs,
    so a dropped connection is seen at once: the running query stops at its next block (or
    file download) and nothing is kept for the socket."""
    gone = threading.Event()
    inbox: asyncio.Queue[str | None] = asyncio.Queue(maxsize=_SOCKET_QUEUE)

    async def read() -> None:
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:  # a binary frame: the protocol is JSON text
                    text = (message.get("bytes") or b"").decode("utf-8", "replace")
                await inbox.put(text)
        finally:
            gone.set()
            with contextlib.suppress(asyncio.QueueFull):
                inbox.put_nowait(None)

    reader = asyncio.create_task(read())
    try:
        while not gone.is_set() or not inbox.empty():
            message = await inbox.get()
            if message is None or gone.is_set():
                break
            await _answer_on_socket(websocket, engine, grant, message, profiles, sources, gone)
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass  # the client went away while we were sending
    finally:
        gone.set()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError):
            await reader


async def _answer_on_socket(
    websocket: WebSocket,
    engine: ContextEngine,
    grant: list[str] | str,
    message: str,
    profiles: ProfileStore | None,
    sources: QuerySources | None,
    gone: threading.Event,
) -> None:
    """One ``query`` message in; ``chunk``... then ``complete`` out (or one ``error``)."""
    started = time.monotonic()
    try:
        data = json.loads(message)
    except ValueError as error:
        await websocket.send_json({"type": "error", "status": 422, "error": f"not JSON: {error}"})
        return
    if not isinstance(data, dict) or data.get("type") != "query":
        await websocket.send_json(
            {"type": "error", "status": 422, "error": 'send {"type": "query", ...}'}
        )
        return
    query_id = data.pop("id", None)
    data.pop("type")
    try:
        body = QueryBody.model_validate(data)
    except ValidationError as error:
        await websocket.send_json(
            {"type": "error", "id": query_id, "status": 422, "fields": _validation_errors(error)}
        )
        return
    if not _may_read(grant, body.channel):
        await websocket.send_json(
            {"type": "error", "id": query_id, "status": 403,
             "error": f"this key may not read channel {body.channel}"}
        )  # fmt: skip
        return
    with _counted(websocket):
        answer = await run_in_threadpool(run_query, engine, body, profiles, sources, gone.is_set)
    if gone.is_set():
        return  # nobody to tell
    for chunk in answer["chunks"]:
        await websocket.send_json({"type": "chunk", "id": query_id, "chunk": chunk})
    if answer["timed_out"]:
        await websocket.send_json({"type": "timeout", "id": query_id, **answer})
        return
    await websocket.send_json({"type": "complete", "id": query_id, **_completion(answer, started)})


@contextlib.contextmanager
def _counted(websocket: WebSocket) -> Iterator[None]:
    """Socket queries running now, per app (``app.state.socket_queries``): what a dropped
    connection must bring back to zero."""
    state = websocket.app.state
    with _COUNT_LOCK:
        state.socket_queries = getattr(state, "socket_queries", 0) + 1
    try:
        yield
    finally:
        with _COUNT_LOCK:
            state.socket_queries -= 1


_SOCKET_QUEUE = 16  # queries a socket may have waiting; beyond that its reader waits
_COUNT_LOCK = threading.Lock()


def profile_routes(profiles: ProfileStore, keys: ApiKeys | None) -> list[BaseRoute]:
    """``/api/profiles`` (GET list, POST create) and ``/api/profiles/{name}`` (GET, PUT to
    create or replace, DELETE). Any known key may manage profiles: they hold no channel data."""

    async def parsed(request: Request, name: str | None) -> AgentProfile | Response:
        """The profile in the body; for PUT its name comes from the path (``name``)."""
        if _granted(keys, request.headers.get("authorization", "")) is None:
            return _error(401, _NEED_KEY)
        try:
            raw = await asyncio.wait_for(read_body(request, _MAX_BODY), timeout=BODY_TIMEOUT)
            data = json.loads(raw)
            if name is None:
                return AgentProfile.model_validate(data)
            fields = ProfileFields.model_validate(data)
            return AgentProfile.model_validate({**fields.model_dump(), "name": name})
        except ValidationError as error:
            return _error(422, "the profile is not valid", fields=_validation_errors(error))
        except (BodyTooLarge, ValueError, TimeoutError, ClientDisconnect, UnicodeDecodeError):
            return _error(422, "the body is not a JSON profile", fields=[{"field": "body",
                          "problem": "not JSON, too large or too slow"}])  # fmt: skip

    async def collection(request: Request) -> Response:
        if request.method == "GET":
            if _granted(keys, request.headers.get("authorization", "")) is None:
                return _error(401, _NEED_KEY)
            return JSONResponse([p.model_dump() for p in profiles.all()])
        profile = await parsed(request, None)
        if isinstance(profile, Response):
            return profile
        if profiles.get(profile.name) is not None:
            return _error(409, f"profile {profile.name!r} exists: PUT /api/profiles/{profile.name}")
        return await _stored(profiles, profile, created_status=201)

    async def one(request: Request) -> Response:
        name = str(request.path_params["name"])
        if request.method == "PUT":
            profile = await parsed(request, name)
            if isinstance(profile, Response):
                return profile
            return await _stored(profiles, profile, created_status=201)
        if _granted(keys, request.headers.get("authorization", "")) is None:
            return _error(401, _NEED_KEY)
        if request.method == "DELETE":
            removed = await run_in_threadpool(profiles.delete, name)
            return Response(status_code=204) if removed else _error(404, f"no profile {name!r}")
        found = profiles.get(name)
        return JSONResponse(found.model_dump()) if found else _error(404, f"no profile {name!r}")

    return [
        Route("/api/profiles", collection, methods=["GET", "POST"]),
        Route("/api/profiles/{name}", one, methods=["GET", "PUT", "DELETE"]),
    ]


async def _stored(
    profiles: ProfileStore, profile: AgentProfile, *, created_status: int
) -> Response:
    try:
        replaced = await run_in_threadpool(profiles.put, profile)
    except ValueError as error:
        return _error(409, str(error))
    return JSONResponse(profile.model_dump(), status_code=200 if replaced else created_status)
