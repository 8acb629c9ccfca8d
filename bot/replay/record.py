"""``chanctx record``: write what the bot receives as a fixture, with every secret redacted."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

__all__ = ["Progress", "Recorder", "redact"]

REDACTED = "REDACTED"
# Slack tokens (bot, user, app-level, refresh, config) wherever they appear in text.
_TOKEN = re.compile(r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]+")
_SECRET_KEYS = {
    "token",
    "bot_token",
    "app_token",
    "access_token",
    "signing_secret",
    "api_key",
    "client_secret",
}


def redact(value: Any) -> Any:
    """A deep copy of ``value`` with secret fields and token-shaped strings replaced."""
    if isinstance(value, dict):
        return {k: REDACTED if k in _SECRET_KEYS and v else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return _TOKEN.sub(REDACTED, value)
    return value


class Progress:
    """How many events are recorded so far: a live counter on a terminal; elsewhere (a log
    file, a service) one plain line every ``every`` events and one when recording ends."""

    def __init__(self, stream: TextIO | None = None, every: int = 1_000) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self._bar = (
            tqdm(desc="recorded", unit=" events", file=self.stream, leave=False)
            if self.stream.isatty()
            else None
        )

    def recorded(self, count: int) -> None:
        if self._bar is not None:
            self._bar.update(1)
        elif count % self.every == 0:
            print(f"recorded {count:,} events so far", file=self.stream, flush=True)

    def done(self, count: int, where: Path) -> None:
        if self._bar is not None:
            self._bar.close()
        print(f"recorded {count:,} events into {where}", file=self.stream, flush=True)


class Recorder:
    """Appends each Events API envelope to ``OUT/events.jsonl`` (flushed and fsynced)."""

    def __init__(self, out_dir: str | Path, progress: Progress | None = None) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self._events = (self.out / "events.jsonl").open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.count = 0
        self.progress = progress if progress is not None else Progress()

    def write_state(self, state: dict[str, Any]) -> None:
        path = self.out / "slack_api.json"
        path.write_text(
            json.dumps(redact(state), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )

    def middleware(self, body: dict[str, Any], next: Callable[[], None]) -> None:
        if body.get("type") == "event_callback":
            line = json.dumps(redact(body), sort_keys=True) + "\n"
            with self._lock:
                self._events.write(line)
                self._events.flush()
                os.fsync(self._events.fileno())
                self.count += 1
                self.progress.recorded(self.count)
        next()

    def close(self) -> None:
        with self._lock:
            if self._events.closed:
                return
            self._events.close()
            self.progress.done(self.count, self.out / "events.jsonl")
