"""Serving the Events API over HTTP: a threaded server in front of ``App.dispatch``.

Bolt verifies the request signature and timestamp (its request-verification middleware);
this module only moves bytes. Each request gets its own thread, so a slow client never holds
up another delivery, and Bolt acks before any answer work starts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from slack_bolt import App
from slack_bolt.request import BoltRequest

__all__ = ["EventsServer"]

logger = logging.getLogger("chanctx.http")
_MAX_BODY = 1 << 20  # Slack's event payloads are far smaller; refuse anything huge


class EventsServer:
    def __init__(
        self, app: App, *, host: str = "127.0.0.1", port: int = 0, path: str = "/slack/events"
    ) -> None:
        self.app = app
        self.path = path
        handler = self._handler()
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.path}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path.split("?", 1)[0] != server.path:
                    self._reply(404, b"not found")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > _MAX_BODY:
                    self._reply(413, b"payload too large")
                    return
                body = self.rfile.read(length).decode("utf-8", errors="replace")
                headers: dict[str, str | Sequence[str]] = {
                    k.lower(): v for k, v in self.headers.items()
                }
                response = server.app.dispatch(BoltRequest(body=body, headers=headers, mode="http"))
                self._reply(response.status, response.body.encode("utf-8"), response.headers)

            def _reply(
                self, status: int, body: bytes, headers: Mapping[str, Sequence[str]] | None = None
            ) -> None:
                self.send_response(status)
                for name, values in (headers or {}).items():
                    if name.lower() != "content-length":
                        for value in values:
                            self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                logger.debug("%s %s", self.address_string(), format % args)

        return Handler

    def start(self) -> EventsServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="chanctx-http", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> EventsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
