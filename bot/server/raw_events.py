"""Slack's events path on the bare ASGI messages: the request's head read from the scope, its
body from ``receive``, the answer written with ``send``.

Every event Slack sends comes this way, and Starlette's request and response objects around
it (a header multidict built per request, a body stream, a response that renders its own
headers) cost the event loop more than the signature check and the JSON parse together. Here
the few headers the path reads are picked out of the scope in one pass, and the answers are
prebuilt messages. The limits are the same as ``bodies.bounded_body``'s: 413 too large (said or
sent), 400 a Content-Length that is not a number or a client gone, 408 too slow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from chanctx.bot.server.bodies import BodyRefused, before_deadline
from starlette.types import Receive, Scope, Send

__all__ = ["Head", "read_head", "receive_body", "send_answer"]

_EMPTY: Final[list[tuple[bytes, bytes]]] = [(b"content-length", b"0")]
_BODY_END: Final[dict[str, Any]] = {"type": "http.response.body", "body": b""}


@dataclass(slots=True)
class Head:
    """What the events path reads of a request's headers (the first of each, as Starlette's
    ``headers.get`` gives it), and their total size."""

    size: int = 0
    content_type: str = ""
    content_length: str | None = None
    timestamp: str | None = None
    signature: str | None = None


_WANTED: Final = frozenset(
    {b"content-type", b"content-length", b"x-slack-request-timestamp", b"x-slack-signature"}
)


def read_head(scope: Scope) -> Head:
    size = 0
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        size += len(name) + len(value)
        if name in _WANTED and name not in found:
            found[name] = value.decode("latin-1")
    return Head(
        size,
        found.get(b"content-type", ""),
        found.get(b"content-length"),
        found.get(b"x-slack-request-timestamp"),
        found.get(b"x-slack-signature"),
    )


async def receive_body(receive: Receive, head: Head, limit: int, timeout: float) -> bytes:
    """The whole body within ``limit`` bytes and ``timeout`` seconds, or ``BodyRefused``.

    The deadline is ``bodies.before_deadline``'s, as for every other body."""
    declared = head.content_length
    if declared is not None:
        if not declared.isdigit():
            raise BodyRefused(400, f"Content-Length is not a number: {declared}")
        if int(declared) > limit:
            raise BodyRefused(413, f"body larger than {limit} bytes")
    return await before_deadline(_read(receive, limit), timeout)


async def _read(receive: Receive, limit: int) -> bytes:
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        body: bytes = message.get("body", b"")  # the whole body at once: the usual case
        if len(body) > limit:
            raise BodyRefused(413, f"body larger than {limit} bytes")
        return body
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] != "http.request":  # http.disconnect
            raise BodyRefused(400, "client disconnected")
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyRefused(413, f"body larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()


async def send_answer(send: Send, status: int, error: str | None = None) -> None:
    """An empty answer with ``status``, or, with ``error``, the JSON every refusal carries
    (``{"ok": false, "error": ...}``, as ``JSONResponse`` renders it)."""
    if error is None:
        await send({"type": "http.response.start", "status": status, "headers": _EMPTY})
        await send(_BODY_END)
        return
    body = json.dumps({"ok": False, "error": error}, ensure_ascii=False, separators=(",", ":"))
    data = body.encode("utf-8")
    headers = [(b"content-length", str(len(data)).encode()), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
