"""Reading a request body within limits: a size cap (declared or streamed) and, through the
caller's ``asyncio.wait_for``, a deadline for the whole body, so a slow or huge client holds
nothing for long. The events path and the query API read every body this way."""

from __future__ import annotations

from starlette.requests import Request

__all__ = ["BodyTooLarge", "read_body"]


class BodyTooLarge(Exception):
    """The body is (or says it is) larger than the limit."""


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body; ``BodyTooLarge`` past ``limit`` bytes, ``ValueError`` for a
    Content-Length that is not a number."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge if declared.isdigit() else ValueError(declared)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)
