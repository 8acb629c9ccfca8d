"""The query API over a WebSocket (``/api/context/ws``): ``{"type": "query", ...}`` in, ``chunk``
messages and ``complete`` (or ``timeout``, or one ``error``) out, several queries per socket,
answered in order. A reader task keeps listening while a query runs, so a dropped connection
is seen at once and its query stops at the next block or file download.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.server.api_access import may_read, validation_errors
from chanctx.bot.server.queries import QueryBody, completion, run_query
from chanctx.bot.server.query_sources import QuerySources
from chanctx.bot.stores.profiles import ProfileStore
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.websockets import WebSocket, WebSocketDisconnect

__all__ = ["serve_socket"]


async def serve_socket(
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
    flat = "options" not in data
    fields, clash = _fields(data)
    if clash is not None:
        await websocket.send_json({"type": "error", "id": query_id, "status": 422, "error": clash})
        return
    try:
        body = QueryBody.model_validate(fields)
    except ValidationError as error:
        await websocket.send_json(
            {"type": "error", "id": query_id, "status": 422, "fields": validation_errors(error)}
        )
        return
    if not may_read(grant, body.channel):
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
        await websocket.send_json(
            _reply("chunk", query_id, chunk, flat=flat, legacy={"chunk": chunk})
        )
    if answer["timed_out"]:
        await websocket.send_json(_reply("timeout", query_id, answer, flat=flat, legacy=answer))
        return
    done = completion(answer, started)
    await websocket.send_json(_reply("complete", query_id, done, flat=flat, legacy=done))


def _fields(data: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The query's fields from either form: seed 001's ``{"query", "options": {...}}`` or the
    flat one with every field beside ``query``. A field given in both places is refused rather
    than one silently winning."""
    options = data.pop("options", None)
    if options is None:
        return data, None
    if not isinstance(options, dict):
        return data, f"options must be an object, not {type(options).__name__}"
    both = sorted(set(options) & set(data))
    if both:
        return data, f"{', '.join(both)} given both in options and beside it; give it once"
    return {**data, **options}, None


def _reply(
    kind: str, query_id: Any, data: dict[str, Any], *, flat: bool, legacy: dict[str, Any]
) -> dict[str, Any]:
    """A server message: ``{"type", "id", "data"}`` as seed 001 has it; a query sent in the flat
    form also gets the keys it was answered with before ``data`` existed."""
    message: dict[str, Any] = {"type": kind, "id": query_id, "data": data}
    if flat:
        message.update(legacy)
    return message


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
