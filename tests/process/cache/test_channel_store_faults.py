"""The channel store's faults: corrupt, truncated, foreign and newer files stop the start with
one line naming the file and the check command; a second process on the data dir stops with one
line; a full store refuses the batch and keeps what it had; kill -9 during a burst loses no
batch that was reported committed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from chanctx.cache.channel_store import (
    DB_NAME,
    MessagePosted,
    SqliteChannelStore,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreTooNew,
)
from chanctx.cache.channel_store.__main__ import main as store_command
from chanctx.context import Message

T = "T1"
CHECK = "python -m chanctx.cache.channel_store check"


def msg(second: int, text: str) -> Message:
    return Message(channel="C1", ts=f"{1_700_000_000 + second}.000000", user_id="U1", text=text)


def filled(data_dir: Path, count: int = 2_000) -> Path:
    store = SqliteChannelStore(data_dir)
    store.write([MessagePosted(T, msg(s, f"message number {s} " * 8)) for s in range(count)])
    store.close()
    return data_dir / DB_NAME


def one_line_naming(error: StoreError, path: Path) -> str:
    text = str(error)
    assert "\n" not in text and str(path) in text
    return text


def test_a_file_that_is_not_a_database_stops_the_start_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    path.write_bytes(b"this is no database, just text that happens to be here\n" * 100)
    with pytest.raises(StoreCorrupt) as caught:
        SqliteChannelStore(tmp_path)
    text = one_line_naming(caught.value, path)
    assert "no SQLite header" in text and f"{CHECK} {tmp_path}" in text
    assert path.read_bytes().startswith(b"this is no database")  # never silently replaced


def test_a_truncated_file_stops_the_start_with_one_line(tmp_path: Path) -> None:
    path = filled(tmp_path)
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(size // 2)
    for read_only in (False, True):
        with pytest.raises(StoreCorrupt) as caught:
            SqliteChannelStore(tmp_path, read_only=read_only)
        assert "truncated" in one_line_naming(caught.value, path)


def test_damaged_pages_give_the_one_line_error_not_a_traceback(tmp_path: Path) -> None:
    path = filled(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[4096 * 2 : 4096 * 6] = b"\xff" * (4096 * 4)  # scribble over pages 3 to 6
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreCorrupt) as caught:
        store = SqliteChannelStore(tmp_path)
        try:
            store.messages(T, "C1")
            store.write([MessagePosted(T, msg(99_999, "after the damage"))])
        finally:
            store.close()
    one_line_naming(caught.value, path)


def test_another_applications_database_and_a_newer_version_are_refused(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    foreign = sqlite3.connect(path)
    foreign.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    foreign.commit()
    foreign.close()
    with pytest.raises(StoreCorrupt) as caught:
        SqliteChannelStore(tmp_path)
    assert "another application's database" in one_line_naming(caught.value, path)

    newer = tmp_path / "newer"
    filled(newer, 10)
    db = sqlite3.connect(newer / DB_NAME)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    with pytest.raises(StoreTooNew) as too_new:
        SqliteChannelStore(newer)
    text = one_line_naming(too_new.value, newer / DB_NAME)
    assert "schema version 99 is newer than this chanctx reads (3)" in text


def test_a_version_no_migration_starts_from_is_refused_with_one_line(tmp_path: Path) -> None:
    path = filled(tmp_path, 10)
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 0")  # ours (application id), but older than any we wrote
    db.commit()
    db.close()
    with pytest.raises(StoreCorrupt) as caught:
        SqliteChannelStore(tmp_path)
    assert "schema version 0, which no migration starts from" in one_line_naming(caught.value, path)


def test_the_check_command_passes_a_whole_store_and_names_a_broken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    filled(tmp_path / "good", 50)
    assert store_command(["check", str(tmp_path / "good")]) == 0
    assert "0 problem(s)" in capsys.readouterr().out
    assert store_command(["rebuild-index", str(tmp_path / "good")]) == 0
    assert store_command(["check", str(tmp_path / "good")]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / DB_NAME).write_bytes(b"garbage" * 50)
    assert store_command(["check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and str(bad / DB_NAME) in out
    assert store_command(["nonsense"]) == 2


def test_a_second_process_on_the_data_dir_stops_with_one_line(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path)
    with pytest.raises(StoreLocked) as caught:
        SqliteChannelStore(tmp_path)
    assert f"pid {os.getpid()}" in one_line_naming(caught.value, tmp_path / "channels.lock")
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from chanctx.cache.channel_store import SqliteChannelStore, StoreError
        try:
            SqliteChannelStore(Path({str(tmp_path)!r}))
        except StoreError as error:
            print(error, file=sys.stderr)
            sys.exit(3)
        """
    )
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert second.returncode == 3
    assert second.stderr.count("\n") == 1 and "another chanctx process" in second.stderr
    reader = SqliteChannelStore(tmp_path, read_only=True)  # `store stats` beside the bot
    assert reader.messages(T, "C1") == []
    reader.close()
    store.close()
    SqliteChannelStore(tmp_path).close()  # released on close


def test_a_full_store_refuses_the_batch_and_keeps_what_it_had(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, page_limit=40)
    store.write([MessagePosted(T, msg(1, "stored before the disk filled"))])
    big = [MessagePosted(T, msg(s, "x" * 2_000)) for s in range(10, 200)]
    with pytest.raises(StoreFull) as caught:
        store.write(big)
    assert isinstance(caught.value, OSError) and "the events were not stored" in str(caught.value)
    assert [m.text for m in store.messages(T, "C1")] == ["stored before the disk filled"]
    store.write([MessagePosted(T, msg(2, "a small one still fits"))])
    store.close()


WRITER = """
import sys
from pathlib import Path
from chanctx.cache.channel_store import MessagePosted, SqliteChannelStore
from chanctx.context import Message

store = SqliteChannelStore(Path(sys.argv[1]))
batch = 0
while True:
    events = [
        MessagePosted("T1", Message(channel=f"C{i % 3}", ts=f"{1_700_000_000 + batch}.{i:06d}",
                                    user_id="U1", text=f"batch {batch} event {i}"))
        for i in range(50)
    ]
    store.write(events)
    print(batch, flush=True)  # the ack: only after the commit returned
    batch += 1
"""


def test_kill_9_during_a_burst_loses_no_batch_reported_committed(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    acked = [int(writer.stdout.readline()) for _ in range(40)]
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    acked += [int(line) for line in writer.stdout.read().split()]  # printed before the kill
    writer.stdout.close()
    store = SqliteChannelStore(tmp_path)  # the lock died with the process
    held = {m.ts for c in ("C0", "C1", "C2") for m in store.messages(T, c)}
    for batch in acked:
        for i in range(50):
            assert f"{1_700_000_000 + batch}.{i:06d}" in held, f"batch {batch} lost"
    assert len(held) % 50 == 0  # batches are all or nothing
    store.close()


ERASE_LATER = """
import os
import sys
from pathlib import Path
from chanctx.cache.channel_store import MessageDeleted, MessagePosted, SqliteChannelStore
from chanctx.context import Message

store = SqliteChannelStore(Path(sys.argv[1]), erase_interval=1e9)
store.write([MessagePosted("T1", Message(channel="C1", ts="1700000001.000000", text="ok"))])
store.write([MessagePosted("T1", Message(channel="C1", ts="1700000002.000000",
                                         text="the word quokkavelvet must go"))])
store.write([MessageDeleted("T1", "C1", "1700000002.000000")])  # its erase pass postponed
os._exit(0)  # gone before close() could run the pass
"""


def test_an_erase_pass_a_crash_cut_off_runs_at_the_next_start(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", ERASE_LATER, str(tmp_path)], check=True)
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"quokkavelvet" in raw  # the crash left it in the index (or the log)
    store = SqliteChannelStore(tmp_path)
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"quokkavelvet" not in raw  # before anything else was written or closed
    assert [m.text for m in store.messages("T1", "C1")] == ["ok"]
    store.close()
