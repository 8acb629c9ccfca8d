"""`chanctx run --http` as a real process against loopback fakes: for process-level tests and
benchmarks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slack_sdk.signature import SignatureVerifier

__all__ = ["BotProcess", "free_port", "post_signed"]

SECRET = "3f9a6c1e0b7d45f2a8c9e1d2b3a4f5e6"  # a made-up signing secret for these tests only


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class BotProcess:
    """One `chanctx run --http` subprocess; ``kill()`` is kill -9, ``start()`` a restart.

    ``socket_mode=True`` runs `chanctx run` in Socket Mode instead (an app-level token, no
    port): the fake Slack must serve Socket Mode, and ``start`` waits for ``connected()``."""

    def __init__(
        self,
        data_dir: Path,
        slack_url: str,
        anthropic_url: str,
        *,
        socket_mode: bool = False,
        connected: Callable[[], bool] | None = None,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.socket_mode = socket_mode
        self.connected = connected
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/slack/events"
        self.env = {
            **os.environ,
            "SLACK_BOT_TOKEN": "xoxb-process-test",
            "SLACK_SIGNING_SECRET": SECRET,
            "ANTHROPIC_API_KEY": "sk-ant-process-test",
            "SLACK_API_URL": slack_url,
            "ANTHROPIC_BASE_URL": anthropic_url,
            "CHANCTX_DATA_DIR": str(data_dir),
            "CHANCTX_LOG_LEVEL": "warning",
        }
        if socket_mode:
            self.env["SLACK_APP_TOKEN"] = "xapp-process-test"
        self.env.update(env or {})  # an empty value removes the variable
        self.env = {k: v for k, v in self.env.items() if v != ""}
        self.extra_args = extra_args
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 30) -> None:
        self.starts += 1
        log = (self.data_dir.parent / f"bot-{self.starts}.log").open("wb")
        command = [sys.executable, "-m", "chanctx.bot.cli", "run"]
        if not self.socket_mode:
            command += ["--http", "--host", "127.0.0.1", "--port", str(self.port)]
        command += list(self.extra_args)
        self.process = subprocess.Popen(command, env=self.env, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the bot exited: {self.log_tail()}")
            if self.connected is not None:
                if self.connected():
                    return
                time.sleep(0.05)
                continue
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"the bot did not listen in {timeout} s: {self.log_tail()}")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()  # SIGKILL: nothing runs after this
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
            self.process = None

    def log_tail(self) -> str:
        logs = sorted(self.data_dir.parent.glob("bot-*.log"))
        return logs[-1].read_text(errors="replace")[-2000:] if logs else ""


def post_signed(
    url: str, envelope: Any, *, retry: int = 0, raw: bytes | None = None, sign: bool = True
) -> int | None:
    """Deliver one envelope (or ``raw`` bytes) as Slack does; the HTTP status, or None if the
    connection failed (refused or reset)."""
    data = raw if raw is not None else json.dumps(envelope).encode()
    stamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp}
    if sign:
        headers["X-Slack-Signature"] = SignatureVerifier(SECRET).generate_signature(
            timestamp=stamp, body=data.decode("utf-8")
        )
    if retry:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
