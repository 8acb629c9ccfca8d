"""The bot's store on PostgreSQL (``open_store`` with ``--database-url``) against a real server:
every statement is bounded by ``--max-wait`` (at most 5 s), so a database that holds a read (a
lock, a slow disk) refuses it in time instead of holding the answer; and ``chanctx store
stats --database-url`` reads the same store."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from chanctx.bot.cli import main
from chanctx.bot.launch.channel_store import open_store
from chanctx.cache.channel_store import MessagePosted, PostgresChannelStore, StoreUnavailable
from chanctx.context import Message

from tests.support.postgres_server import PostgresServer, postgres
from tests.support.replica_store import database
from tests.support.slack_exports import workspace_export, write_zip

__all__ = ["postgres"]

TEAM = "T0OPENSTORE"


def test_a_held_read_is_refused_within_the_statement_timeout(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = database(postgres)
    default = open_store(tmp_path, url)
    assert isinstance(default, PostgresChannelStore) and default.statement_timeout == 5.0
    default.close()
    store = open_store(tmp_path, url, max_wait=1.0)
    assert isinstance(store, PostgresChannelStore)
    assert store.statement_timeout == 1.0  # --max-wait under the 5 s bound
    store.write([MessagePosted(TEAM, Message(channel="C1", ts="1700000000.000100", text="hi"))])
    outcome: list[BaseException | int] = []
    with psycopg.connect(url, autocommit=True) as admin:  # the superuser, in that database
        admin.execute("BEGIN")
        admin.execute("LOCK TABLE chanctx.messages IN ACCESS EXCLUSIVE MODE")

        def read() -> None:
            try:
                outcome.append(len(store.messages(TEAM, "C1")))
            except BaseException as error:  # the outcome under test
                outcome.append(error)

        reader = threading.Thread(target=read)
        reader.start()
        reader.join(60)  # the lock is held for as long as this test wants
        admin.execute("ROLLBACK")
    reader.join(10)
    assert outcome and isinstance(outcome[0], StoreUnavailable), outcome
    assert "unavailable" in str(outcome[0])
    assert store.messages(TEAM, "C1")[0].text == "hi"  # the lock gone, the same store reads
    store.close()


def test_store_stats_reads_the_database(
    postgres: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = database(postgres)
    store = open_store(tmp_path, url)
    store.write([MessagePosted(TEAM, Message(channel="C1", ts="1700000000.000100", text="hi"))])
    store.close()
    assert main(["store", "stats", "--json", "--database-url", url], env={}) == 0
    out = capsys.readouterr().out
    assert '"messages": 1' in out and "postgresql" in out


def test_import_writes_into_the_database(
    postgres: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = database(postgres)
    export = write_zip(workspace_export(), tmp_path / "export.zip")
    assert main(["import", str(export), "--database-url", url], env={}) == 0
    capsys.readouterr()
    store = PostgresChannelStore(url)
    try:
        imported = store.stats().messages
    finally:
        store.close()
    assert imported > 0
    again = main(["import", str(export)], env={"CHANCTX_DATABASE_URL": url})
    assert again == 0 and "imported 0 of" in capsys.readouterr().out  # known: skipped
