"""A real PostgreSQL for the tests: Debian's binaries, ``initdb`` into a temporary directory, run
as an unprivileged user on a free loopback port.

PostgreSQL refuses to run as root, and CI runs as root: the cluster belongs to the ``postgres``
system user that Debian's package creates (or ``chanctx-test``, added with ``useradd`` when
neither exists). The package is installed when ``initdb`` is missing; if that fails, the tests
that need PostgreSQL fail with the reason, they are never skipped.

Each test gets a schema of its own (``PostgresChannelStore(url, schema=...)``), which is
instant to create and drop, instead of a database per test.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import TupleRow

__all__ = ["PostgresServer", "pg_schema", "postgres", "postgres_server"]

_USERS = ("postgres", "chanctx-test")


def _bin_dir() -> Path:
    """Debian's PostgreSQL binaries (the newest installed major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    if not found:
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "postgresql"],
        ):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(
                    f"PostgreSQL's initdb is missing and `{' '.join(command)}` failed "
                    f"(install Debian's postgresql package): {result.stderr.strip()[-500:]}"
                )
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
        if not found:
            raise RuntimeError("initdb is still missing after installing Debian's postgresql")
    return Path(found[-1]).parent


def _major(path: str) -> int:
    return int(Path(path).parent.parent.name)


def _unprivileged_user() -> pwd.struct_passwd:
    for name in _USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _USERS[1]],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(_USERS[1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster in ``workdir``; :meth:`stop` / :meth:`start` for fault tests."""

    def __init__(self, workdir: Path, *, fsync: bool = False) -> None:
        self.workdir = workdir
        self.fsync = fsync
        self.data = workdir / "data"
        self.port = _free_port()
        self.bin = _bin_dir()
        self.user = _unprivileged_user() if os.geteuid() == 0 else None
        self.superuser = (
            self.user.pw_name if self.user is not None else pwd.getpwuid(os.geteuid())[0]
        )

    @property
    def url(self) -> str:
        return f"postgresql://{self.superuser}@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(command),
            capture_output=True,
            text=True,
            check=False,
            user=None if self.user is None else self.user.pw_uid,
            group=None if self.user is None else self.user.pw_gid,
            cwd=self.workdir,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"`{' '.join(command)}` failed: {(result.stderr or result.stdout).strip()[-800:]}"
            )
        return result

    def init(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.user is not None:
            os.chown(self.workdir, self.user.pw_uid, self.user.pw_gid)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", self.superuser,
            "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        # fsync off for the suite: it never crashes the machine, only the server (a fast
        # shutdown still writes everything committed); it saves seconds of CHECKPOINT. The
        # benchmark runs with fsync on, as production does.
        sync = "on" if self.fsync else "off"
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.workdir}"
            f" -c fsync={sync} -c full_page_writes={sync} -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.workdir / "log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def admin(self) -> psycopg.Connection[TupleRow]:
        """A superuser connection (autocommit) for what the tests arrange and inspect."""
        return psycopg.connect(self.url, autocommit=True)

    def relation_bytes(self, schema: str) -> bytes:
        """The bytes of every table, TOAST table and index file in ``schema``, after a
        CHECKPOINT (what the server holds in memory is written to them first)."""
        with self.admin() as conn:
            conn.execute("CHECKPOINT")
            paths = conn.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
                "UNION SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.reltoastrelid != 0",
                (schema, schema),
            ).fetchall()
        out = bytearray()
        for (relative,) in paths:
            if relative is None:
                continue
            for part in sorted(glob.glob(str(self.data / relative) + "*")):
                out += Path(part).read_bytes()
        return bytes(out)


def postgres_server(workdir: Path, *, fsync: bool = False) -> PostgresServer:
    server = PostgresServer(workdir, fsync=fsync)
    server.init()
    server.start()
    return server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The suite's own PostgreSQL, stopped (and its directory removed) at the end."""
    workdir = Path(tempfile.mkdtemp(prefix="chanctx-pg-"))
    try:
        server = postgres_server(workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    try:
        yield server
    finally:
        try:
            server.stop("immediate")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def new_schema(server: PostgresServer) -> str:
    return f"t_{secrets.token_hex(6)}"


def drop_schema(server: PostgresServer, schema: str) -> None:
    with server.admin() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_schema(postgres: PostgresServer) -> Iterator[str]:
    """A schema name of the test's own (the store creates it), dropped afterwards."""
    schema = new_schema(postgres)
    yield schema
    deadline = time.monotonic() + 5
    while True:
        try:
            drop_schema(postgres, schema)
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
