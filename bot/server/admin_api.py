"""The bot's admin route: ``POST /admin/forget``, what ``chanctx forget`` calls while the bot
runs (the bot holds the channel store's writer lock, so the command cannot open it itself).

Authentication is a bearer token the bot draws at start and writes, with its address, to
``admin.json`` in the data dir, readable by its owner only (``bot/launch/admin_file.py``):
whoever can read the data dir can read every message anyway. No token answers 401, a wrong one
403, a bad body 400; never a 5xx for what a client sends.

The erase pass of a big channel holds the store's writer for seconds (docs/store.md, "Known
limits"), so the request waits at most ``wait`` seconds: past that it answers 202 with the
counts planned and ``pending`` true, and the erasure finishes in the background.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
from collections.abc import Callable
from typing import Final

from chanctx.bot.core.forget_request import ForgetAnswer, ForgetRequest
from chanctx.bot.core.forgetting import Erasure
from chanctx.bot.server.bodies import BodyRefused, bounded_body
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["ADMIN_FORGET", "admin_routes"]

logger = logging.getLogger("chanctx.admin")
ADMIN_FORGET: Final = "/admin/forget"
_MAX_BODY: Final = 4096
_BODY_SECONDS: Final = 10.0


def _refuse(status: int, message: str) -> Response:
    return JSONResponse({"ok": False, "error": message}, status_code=status)


def admin_routes(
    token: str,
    *,
    plan: Callable[[ForgetRequest], Erasure],
    run: Callable[[Erasure], ForgetAnswer],
    wait: float = 10.0,
) -> list[BaseRoute]:
    """``plan`` reads what a request erases; ``run`` erases it (store, caches, files)."""
    expected = f"Bearer {token}".encode()

    async def forget(request: Request) -> Response:
        given = request.headers.get("authorization")
        if not given:
            return _refuse(401, "missing Authorization: Bearer <token from admin.json>")
        if not hmac.compare_digest(given.encode(), expected):
            return _refuse(403, "wrong admin token")
        try:
            body = await bounded_body(request, _MAX_BODY, _BODY_SECONDS)
        except BodyRefused as refused:
            return _refuse(refused.status, refused.reason)
        try:
            asked = ForgetRequest.model_validate(json.loads(body or b"null"))
        except (ValueError, ValidationError) as error:
            return _refuse(400, f"bad forget request: {_reason(error)}")
        job = _Job(asked, plan, run)
        worker = threading.Thread(target=job.work, name="chanctx-forget", daemon=True)
        worker.start()
        await asyncio.to_thread(worker.join, wait)
        return job.response()

    return [Route(ADMIN_FORGET, forget, methods=["POST"])]


class _Job:
    """One forget, planned and run on its own thread: the request waits for it only so long.

    Planning reads what the request covers (every message of a person's channels: minutes in a
    store of millions), the run holds the store's writer for the erase pass; either may outlast
    the request, which then answers 202 with what is known, and the job goes on."""

    def __init__(
        self,
        asked: ForgetRequest,
        plan: Callable[[ForgetRequest], Erasure],
        run: Callable[[Erasure], ForgetAnswer],
    ) -> None:
        self.asked, self._plan, self._run = asked, plan, run
        self.planned: Erasure | None = None
        self.answer: ForgetAnswer | None = None
        self.failed: str | None = None

    def work(self) -> None:
        try:
            self.planned = self._plan(self.asked)
            self.answer = self._run(self.planned)
        except Exception as error:  # the thread's boundary: logged, and answered 503
            self.failed = f"{type(error).__name__}: {error}"
            logger.warning("forget %s failed: %s", self.asked.describe(), self.failed)
            return
        logger.info("forgot %s: %s", self.asked.describe(), self.answer.model_dump_json())

    def response(self) -> Response:
        if self.failed is not None:
            return _refuse(503, f"could not erase: {self.failed}")
        if self.answer is not None:
            return JSONResponse(self.answer.model_dump(), status_code=200)
        answer = self.planned.answer() if self.planned is not None else ForgetAnswer()
        answer.pending = True
        return JSONResponse(answer.model_dump(), status_code=202)


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(error)[:200]
