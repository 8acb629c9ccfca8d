"""Checks made before the bot claims anything: each failure is one line an operator can act on
(the setting or variable to change), never a traceback and never after "serving ...".

In order of ``chanctx run``: the data dir is usable, the port is free, the API keys file reads,
then the one network call of a start, ``auth.test``, says whether Slack is reachable at the
configured URL and accepts the token.
"""

from __future__ import annotations

import errno
import logging
import socket
import tempfile
from pathlib import Path
from typing import Any

from chanctx.bot.launch.options import SettingsError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["check_data_dir", "check_port", "quiet_token_warning", "who_am_i"]


def check_data_dir(path: Path) -> None:
    """``path`` exists (or can be made) and takes a file: the turn journal is fsynced there."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as error:
        raise SettingsError(
            f"--data-dir {path} cannot be used ({error.strerror or error}); point --data-dir "
            "or CHANCTX_DATA_DIR at a writable directory"
        ) from None


def check_port(host: str, port: int) -> None:
    """Nothing listens on ``host:port`` yet (bound the way the server will bind it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            why = (
                "is already in use"
                if error.errno == errno.EADDRINUSE
                else f"cannot be used ({error.strerror})"
            )
            raise SettingsError(
                f"port {port} on {host} {why}; choose another with --port or CHANCTX_PORT"
            ) from None


def who_am_i(client: WebClient) -> dict[str, Any]:
    """``auth.test``: the bot's identity, or one line naming what to fix."""
    url = client.base_url
    sdk_logger = logging.getLogger("slack_sdk.web.base_client")
    level = sdk_logger.level
    sdk_logger.setLevel(logging.CRITICAL)  # its own "failed to send" lines would say it twice
    try:
        return dict(client.auth_test().data)  # type: ignore[arg-type]
    except SlackApiError as error:
        code = error.response.get("error", "an error") if error.response is not None else "an error"
        raise SettingsError(
            f"Slack at {url} refused the bot token (auth.test: {code}); check SLACK_BOT_TOKEN"
        ) from None
    except OSError as error:  # URLError, refused, DNS, TLS: all OSError
        reason = getattr(error, "reason", None) or error.strerror or error
        raise SettingsError(
            f"Slack is not reachable at {url} ({reason}); check the network, or SLACK_API_URL "
            "if you set it"
        ) from None
    finally:
        sdk_logger.setLevel(level)


class _TokenWarning(logging.Filter):
    """Bolt warns that ``token`` is unused whenever a client is given and SLACK_BOT_TOKEN is in
    the environment; chanctx gives the client on purpose (its retry handlers, its URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def quiet_token_warning(logger: logging.Logger) -> None:
    if not any(isinstance(f, _TokenWarning) for f in logger.filters):
        logger.addFilter(_TokenWarning())
