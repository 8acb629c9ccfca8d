"""Log lines for operators: timestamp, level and logger on every line; JSON on request."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

__all__ = ["JsonFormatter", "configure_logging"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log every HTTP request at INFO: their lines drown ours unless debugging.
CHATTY = ("httpx", "httpx2", "httpcore", "httpcore2", "urllib3", "slack_bolt", "slack_sdk")


class _UtcFormatter(logging.Formatter):
    """ISO 8601 UTC timestamps with milliseconds: comparable across hosts and time zones."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        moment = datetime.fromtimestamp(record.created, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(_UtcFormatter):
    """One JSON object per line (``--log-format json``), for log shippers."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(
    level: Literal["debug", "info", "warning", "error"], log_format: Literal["text", "json"]
) -> None:
    """Replace the root handler: logs go to stderr, so stdout stays the command's output."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else _UtcFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in CHATTY:
        logging.getLogger(name).setLevel("DEBUG" if level == "debug" else "WARNING")
