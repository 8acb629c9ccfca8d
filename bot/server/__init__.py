"""HTTP serving: one ASGI app (Starlette) on uvicorn for the Events API and health checks, with
room for more routes on the same port (the context query API and the inspector)."""

from __future__ import annotations

from chanctx.bot.server.asgi import build_asgi_app
from chanctx.bot.server.uvicorn_server import BackgroundServer, run_server

__all__ = ["BackgroundServer", "build_asgi_app", "run_server"]
