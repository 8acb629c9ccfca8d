"""Slack's end of Socket Mode on loopback: a WebSocket that hands envelopes to the connected app
and collects its acknowledgements.

The protocol as Slack documents it: the app gets a ``wss://`` URL from ``apps.connections.open``
(the fake Slack Web API hands out this server's ``ws://`` URL), Slack sends ``hello``, then one
JSON envelope per event (``envelope_id``, ``type``, ``payload``, ``retry_attempt``,
``retry_reason``); the app acknowledges each with ``{"envelope_id": ...}``. An envelope not
acknowledged is one Slack would deliver again.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any, Self

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

__all__ = ["FakeSocketMode"]


class FakeSocketMode:
    """A loopback WebSocket server speaking Slack's side of Socket Mode (one app connection)."""

    def __init__(self, port: int = 0) -> None:
        self._cond = threading.Condition()
        self._connection: ServerConnection | None = None
        self._acks: dict[str, Any] = {}  # envelope id -> the ack's payload (None if none)
        self.connections = 0  # how many times an app connected (reconnects included)
        self._server = serve(self._serve, "127.0.0.1", port, compression=None)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-socket-mode", daemon=True
        )
        self._thread.start()
        host, bound = self._server.socket.getsockname()[:2]
        self.url = f"ws://{host}:{bound}/link"

    @property
    def connected(self) -> bool:
        with self._cond:
            return self._connection is not None

    def wait_connected(self, timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._connection is not None, timeout)

    def send(self, payload: Any, *, kind: str = "events_api", retry_attempt: int = 0) -> str:
        """Deliver one envelope to the connected app; its id. ConnectionError if none is."""
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        with self._cond:
            connection = self._connection
        if connection is None:
            raise ConnectionError("no app is connected over Socket Mode")
        connection.send(json.dumps(envelope))
        return envelope_id

    def wait_ack(self, envelope_id: str, timeout: float = 5.0) -> bool:
        """True once the app acknowledged that envelope (False: Slack would retry it)."""
        with self._cond:
            return self._cond.wait_for(lambda: envelope_id in self._acks, timeout)

    def _serve(self, connection: ServerConnection) -> None:
        connection.send(json.dumps({"type": "hello", "num_connections": 1}))
        with self._cond:
            self._connection = connection
            self.connections += 1
            self._cond.notify_all()
        try:
            for raw in connection:
                try:
                    message = json.loads(raw)
                except ValueError:
                    continue  # not an ack; Slack ignores it too
                if isinstance(message, dict) and isinstance(message.get("envelope_id"), str):
                    with self._cond:
                        self._acks[message["envelope_id"]] = message.get("payload")
                        self._cond.notify_all()
        except ConnectionClosed:
            pass
        finally:
            with self._cond:
                if self._connection is connection:
                    self._connection = None
                self._cond.notify_all()

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
