"""Socket Mode with the HTTP path's guarantees: every envelope acknowledged unless storing failed.

Bolt's own handler builds a ``BoltRequest`` from the payload and acknowledges only a 200. A
payload Bolt cannot read (``"authorizations": 5``, a list where an object belongs) raises before
dispatch, and anything else than 200 is logged and left unacknowledged: either way Slack delivers
the same envelope again, and again. Here such an envelope is acknowledged with one warning, as
the HTTP path answers it 200. The one exception is a failure to store the event (the disk: the
journal's fsync): then no ack, so Slack retries what could not be kept.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from chanctx.bot.slack.envelope import STORE_FAILED, malformed
from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.socket_mode.internals import run_bolt_app, send_response
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

__all__ = ["GuardedSocketModeHandler"]

logger = logging.getLogger("chanctx.socket_mode")


class GuardedSocketModeHandler(SocketModeHandler):
    """Bolt's built-in Socket Mode handler, acknowledging what it would leave to be retried."""

    def __init__(self, app: App, app_token: str | None = None, **options: Any) -> None:
        super().__init__(app, app_token, **options)
        # slack_sdk refuses an envelope whose payload is neither an object nor a string before
        # any request listener sees it; its raw-message listeners still do.
        self.client.message_listeners.append(self._unreadable)  # type: ignore[arg-type]

    @staticmethod
    def _unreadable(client: BaseSocketModeClient, message: dict[str, Any], raw: str) -> None:
        envelope_id, payload = message.get("envelope_id"), message.get("payload", {})
        if isinstance(envelope_id, str) and not isinstance(payload, dict | str):
            logger.warning(
                "acknowledged and dropped an envelope whose payload is %s", type(payload).__name__
            )
            client.send_socket_mode_response(SocketModeResponse(envelope_id=envelope_id))

    def handle(self, client: BaseSocketModeClient, req: SocketModeRequest) -> None:
        started = time.time()
        reason = malformed(req.payload)
        if reason is not None:
            logger.warning("acknowledged and dropped a malformed payload: %s", reason)
            _ack(client, req)
            return
        try:
            response = run_bolt_app(self.app, req)
        except OSError:
            logger.exception("could not store an event: left unacknowledged so Slack retries it")
            return
        except Exception as error:  # Bolt could not read the payload, or a listener failed
            logger.warning(
                "acknowledged an envelope that failed (%s: %s)", type(error).__name__, error
            )
            _ack(client, req)
            return
        if response.status == STORE_FAILED:
            return  # logged by the app; unacknowledged, Slack delivers it again
        if response.status != 200:
            # A 404 (no listener) or a failure Bolt turned into a 5xx: logged, not retried.
            logger.warning("acknowledging an envelope Bolt answered %d for", response.status)
            _ack(client, req)
            return
        send_response(client, req, response, started)


def _ack(client: BaseSocketModeClient, req: SocketModeRequest) -> None:
    client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
