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
from chanctx.bot.stores.redis_link import RedisLink

from tests.support.debian import ensure_debian_binary

__all__ = ["RedisServer", "client", "ensure_redis_server", "redis_server", "server"]


def ensure_redis_server() -> str:
    return ensure_debian_binary("redis-server", "redis-server")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _PortTaken(Exception):
    """redis-server could not bind its port: someone took it between the pick and the start."""


class RedisServer:
    """One redis-server process in ``workdir``; ``appendonly`` as production runs it."""

    def __init__(self, workdir: Path, *, appendonly: bool = False) -> None:
        self.workdir = workdir
        self.appendonly = appendonly
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._served = False  # once it has served, a restart keeps its port (clients hold the URL)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it and wait until it answers. The port was free when it was picked, but another
        xdist worker may bind it first: a first start then moves to a new free port."""
        for _ in range(5):
            try:
                self._start_once()
                self._served = True
                return
            except _PortTaken:
                if self._served:
                    raise RuntimeError(f"redis-server lost its port {self.port}") from None
                self.port = _free_port()
        raise RuntimeError("redis-server found no free port in 5 tries")

    def _start_once(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = self.workdir / "redis.log"
        log.unlink(missing_ok=True)
        command = [
            ensure_redis_server(),
            "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
            "--save", "", "--appendonly", "yes" if self.appendonly else "no",
            "--protected-mode", "yes", "--daemonize", "no", "--logfile", str(log),
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        try:
            while True:
                try:
                    # Another worker's redis-server on the port would answer too: only ours counts.
                    if int(client.info("server")["process_id"]) == self.process.pid:
                        return
                    self.stop(kill=True)
                    raise _PortTaken(f"port {self.port} is another redis-server's")
                except redis.ConnectionError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        process = self.process
                        process.kill()  # nothing to do if it has exited; unblocks the read if not
                        process.wait(timeout=10)
                        err = process.stderr.read().decode() if process.stderr else ""
                        err += log.read_text() if log.exists() else ""
                        self.stop(kill=True)
                        if "Address already in use" in err:
                            raise _PortTaken(err) from None
                        raise RuntimeError(f"redis-server did not start: {err[-500:]}") from None
                    time.sleep(0.02)
        finally:
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


@pytest.fixture
def link(server: RedisServer) -> Iterator[RedisLink]:
    """The bot's own connection to it (what replicas share), on an emptied database."""
    redis.Redis.from_url(server.url).flushdb()
    connection = RedisLink(server.url)
    assert connection.check()
    yield connection
    connection.close()
