"""Reading a request body within limits: a size cap (declared or streamed) and a deadline for
the whole body (``bounded_body``), so a slow or huge client holds nothing for long. The events
path and the query API read every body this way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from starlette.requests import ClientDisconnect, Request

__all__ = ["BodyRefused", "BodyTooLarge", "before_deadline", "bounded_body", "read_body"]


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


class BodyRefused(Exception):
    """A body not read: the HTTP status to answer and one line saying why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def before_deadline(reading: Awaitable[bytes], timeout: float) -> bytes:
    """What ``reading`` returns, or ``BodyRefused`` 408 once ``timeout`` seconds have passed.

    The deadline is one timer that cancels this task (``asyncio.timeout`` does the same with
    more bookkeeping, measured at two to three times the cost: every event pays it)."""
    task = asyncio.current_task()
    expired: list[bool] = []

    def expire() -> None:
        expired.append(True)
        if task is not None:
            task.cancel()

    timer = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        return await reading
    except asyncio.CancelledError:
        if not expired or task is None:
            raise  # cancelled by someone else: not ours to swallow
        task.uncancel()
        raise BodyRefused(408, f"body not received within {timeout:g} s") from None
    finally:
        timer.cancel()


async def bounded_body(request: Request, limit: int, timeout: float) -> bytes:
    """The whole body within ``limit`` bytes and ``timeout`` seconds, or ``BodyRefused``: 413
    too large, 400 a Content-Length that is not a number or a client gone, 408 too slow."""
    try:
        return await before_deadline(read_body(request, limit), timeout)
    except BodyTooLarge:
        raise BodyRefused(413, f"body larger than {limit} bytes") from None
    except ValueError as error:
        raise BodyRefused(400, f"Content-Length is not a number: {error}") from None
    except ClientDisconnect:
        raise BodyRefused(400, "client disconnected") from None
