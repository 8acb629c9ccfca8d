"""The one way chanctx's fakes serve: a threaded HTTP server on 127.0.0.1, a free port."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """Base for the fake APIs: call ``_listen(handler, name=...)`` from ``__init__``."""

    _server: ThreadingHTTPServer
    _thread: threading.Thread
    origin: str  # "http://127.0.0.1:PORT"

    def _listen(self, handler: type[BaseHTTPRequestHandler], *, name: str, port: int = 0) -> None:
        # Loopback only: these servers are for tests, replay and `chanctx fakes`, never
        # reachable from outside. Port 0: a free one.
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one interval
            name=name,
            daemon=True,
        )
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.origin = f"http://{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
