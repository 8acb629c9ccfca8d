"""Running the ASGI app on uvicorn: in the foreground for ``chanctx run --http`` (graceful on
SIGTERM), or on a background thread for tests and benchmarks."""

from __future__ import annotations

import signal
import socket
import threading
import time
from types import TracebackType
from typing import Final, Self

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

__all__ = ["BackgroundServer", "run_server", "server_config"]

BACKLOG: Final = 2048  # pending connections the kernel holds while every worker is busy
KEEP_ALIVE: Final = 5  # seconds an idle connection is kept
GRACEFUL: Final = 8  # seconds in-flight requests get after SIGTERM (exit within 10 s)
MAX_CONNECTIONS: Final = 1000  # beyond this, 503 at once instead of queueing without bound


def server_config(app: ASGIApp, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE,
        timeout_graceful_shutdown=GRACEFUL,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=64 * 1024,  # headers larger than this: 400
        lifespan="off",
        access_log=False,
        log_config=None,  # our logging setup, not uvicorn's
        server_header=False,
    )


def run_server(app: ASGIApp, host: str, port: int) -> None:
    """Serve until SIGTERM / SIGINT; uvicorn stops accepting and finishes in-flight requests.

    uvicorn hands the signal back to the handler it found once it has stopped; a quiet one here
    lets the caller finish (leave in-flight answers to the journal) and exit with status 0."""
    if threading.current_thread() is threading.main_thread():
        for caught in (signal.SIGTERM, signal.SIGINT):
            signal.signal(caught, lambda number, frame: None)
    uvicorn.Server(server_config(app, host, port)).run()


class BackgroundServer:
    """The same server on a thread, on a free loopback port unless one is given."""

    def __init__(self, app: Starlette, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if port == 0:
            with socket.socket() as probe:
                probe.bind((host, 0))
                port = int(probe.getsockname()[1])
        self.host, self.port = host, port
        self._server = uvicorn.Server(server_config(app, host, port))
        self._thread = threading.Thread(target=self._server.run, name="chanctx-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the HTTP server did not start on {host}:{port}")
            time.sleep(0.01)

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/slack/events"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
