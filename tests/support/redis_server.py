"""A real redis-server for the tests, started on a free loopback port.

Debian's package is installed when the binary is missing (CI runs as root on a clean machine);
if that fails the tests that need Redis fail with the reason, they are never skipped.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from tests.support.debian import ensure_debian_binary

__all__ = ["RedisServer", "client", "ensure_redis_server", "redis_server", "server"]


def ensure_redis_server() -> str:
    return ensure_debian_binary("redis-server", "redis-server")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One redis-server process in ``workdir``; ``appendonly`` as production runs it."""

    def __init__(self, workdir: Path, *, appendonly: bool = False) -> None:
        self.workdir = workdir
        self.appendonly = appendonly
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [
            ensure_redis_server(),
            "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
            "--save", "", "--appendonly", "yes" if self.appendonly else "no",
            "--protected-mode", "yes", "--daemonize", "no",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    err = self.process.stderr.read().decode() if self.process.stderr else ""
                    self.stop(kill=True)
                    raise RuntimeError(f"redis-server did not start: {err[-500:]}") from None
                time.sleep(0.02)
        client.close()

    def stop(self, *, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.wait(timeout=10)
        if self.process.stderr:
            self.process.stderr.close()
        self.process = None


@contextmanager
def redis_server(workdir: Path, *, appendonly: bool = False) -> Iterator[RedisServer]:
    server = RedisServer(workdir, appendonly=appendonly)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# Fixtures a test module takes by importing them (``from .redis_server import client, server``).


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server of the module's own, on a free port."""
    with redis_server(tmp_path_factory.mktemp("redis")) as running:
        yield running


@pytest.fixture
def client(server: RedisServer) -> Iterator[redis.Redis]:
    """A client of it, on an emptied database."""
    connection = redis.Redis.from_url(server.url)
    connection.flushdb()
    yield connection
    connection.close()
