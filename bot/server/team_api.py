"""The context query API and inspector when one process serves many workspaces (``--oauth``).

Each API key names the one workspace it reads (``{team: T..., channels: [...]}`` in the keys
file). A request's key picks that workspace's runtime, and the request goes, unchanged, to the
query routes built over that runtime alone with only that workspace's keys: another
workspace's channels are not in reach of any argument, as with the channel-bound tools.

    no key, or an unknown one         401
    the key's workspace not installed 404 (it may be installed later; nothing is created)
    otherwise                         what the single-workspace API answers

``/inspector`` (the page) and ``/openapi.json`` hold no workspace data and need no key.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from chanctx.bot.server.api_access import NEED_KEY, ApiKeys, bearer
from chanctx.bot.server.inspector import inspector_page_route
from chanctx.bot.server.openapi import openapi_routes
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["TeamApi"]

# What a team's routes answer; anything else goes on to the events app.
_PREFIXES = ("/api/",)
_OPEN_PATHS = frozenset({"/inspector", "/openapi.json"})

R = TypeVar("R")


class TeamApi(Generic[R]):
    """ASGI middleware: the API paths go to the key's workspace; the rest to ``app``.

    ``runtime_for(team)``: the team's runtime (None: not installed here); ``routes_of(team,
    runtime, keys)``: the query routes over it, built once per runtime (a reinstalled team
    gets routes over its new one)."""

    def __init__(
        self,
        app: ASGIApp,
        keys: ApiKeys,
        runtime_for: Callable[[str], R | None],
        routes_of: Callable[[str, R, ApiKeys], list[BaseRoute]],
    ) -> None:
        unbound = keys.unbound()
        if unbound:
            raise ValueError(
                "with --oauth each API key names its workspace, {team: T..., channels: [...]}"
                f" (keys {', '.join(unbound)} do not)"
            )
        self._app = app
        self._keys = keys
        self._runtime_for = runtime_for
        self._routes_of = routes_of
        self._open = Starlette(routes=[inspector_page_route(), *openapi_routes()])
        self._lock = threading.Lock()
        self._apps: dict[str, tuple[R, Starlette]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
        elif path in _OPEN_PATHS:
            await self._open(scope, receive, send)
        elif not path.startswith(_PREFIXES):
            await self._app(scope, receive, send)
        else:
            await self._to_team(scope, receive, send)

    async def _to_team(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        presented = bearer(headers.get("authorization", ""))
        team = self._keys.team(presented) if presented else None
        if team is None:
            await _refuse(scope, send, 401, NEED_KEY)
            return
        app = await run_in_threadpool(self._team_app, team)  # may start the team's runtime
        if app is None:
            await _refuse(scope, send, 404, f"workspace {team} is not installed here")
            return
        await app(scope, receive, send)

    def _team_app(self, team: str) -> Starlette | None:
        runtime = self._runtime_for(team)
        if runtime is None:  # uninstalled: let go of routes that hold its old runtime's caches
            with self._lock:
                self._apps.pop(team, None)
            return None
        with self._lock:
            held = self._apps.get(team)
            if held is None or held[0] is not runtime:
                routes = self._routes_of(team, runtime, self._keys.of_team(team))
                held = self._apps[team] = (runtime, Starlette(routes=routes))
            return held[1]


async def _refuse(scope: Scope, send: Send, status: int, message: str) -> None:
    if scope["type"] == "websocket":  # closing before accepting refuses the handshake
        await send({"type": "websocket.close", "code": 4000 + status, "reason": message})
        return
    body = json.dumps({"error": message}).encode()
    headers: list[Any] = [(b"content-type", b"application/json"),
                          (b"content-length", str(len(body)).encode())]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
