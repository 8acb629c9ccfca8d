"""An import whose day files are parsed in a second process stores exactly what the
one-process import stores, counts and refuses the same, and leaves no process behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.export.importer import import_export
from chanctx.bot.export.parse_process import parse_in_worker
from chanctx.bot.export.parsing import ParsingStopped
from chanctx.cache.channel_store import SqliteChannelStore

from tests.support.paths import DATA, ROOT
from tests.support.slack_exports import TEAM, workspace_export, write_folder, write_zip

REAL = DATA / "slack_export" / "hfaran-slack-export-viewer-testarchive.zip"


def imported(export: Path, data: Path, *, parallel: bool) -> tuple[Any, dict[str, Any], list[str]]:
    problems: list[str] = []
    with SqliteChannelStore(data) as store:
        summary = import_export(export, store, on_problem=problems.append, parallel=parallel)
        teams = {TEAM, "T0BMHLSRH"}
        held = {
            (key.team, key.channel): (
                store.messages(key.team, key.channel),
                store.cursor(key.team, key.channel, "history"),
            )
            for team in teams
            for key in store.channels(team)
        }
        names = [(store.channel_names(t), store.user_names(t)) for t in sorted(teams)]
    counts = (summary.read, summary.imported, summary.known, summary.ignored, summary.refused)
    return counts, {"held": _without_time(held), "names": names}, problems


def _without_time(held: dict[Any, Any]) -> dict[Any, Any]:
    """The cursors' ``updated`` is the time of writing: everything else must match."""
    out = {}
    for key, (messages, cursor) in held.items():
        out[key] = (messages, None if cursor is None else cursor.model_copy(update={"updated": 0}))
    return out


def hostile() -> dict[str, bytes]:
    files = workspace_export()
    files["general/2024-05-03.json"] = b"[{not json"
    files["general/2024-05-04.json"] = json.dumps(
        [{"type": "message", "user": "U1", "text": "no ts"}, 7,
         {"type": "message", "user": "U1", "ts": "1714723200.000100", "text": "kept"}]
    ).encode()  # fmt: skip
    return files


@pytest.mark.slow
def test_the_second_process_imports_what_one_process_imports(tmp_path: Path) -> None:
    for n, export in enumerate(
        [REAL, write_zip(hostile(), tmp_path / "h.zip"), write_folder(hostile(), tmp_path / "f")]
    ):
        one = imported(export, tmp_path / f"one{n}", parallel=False)
        two = imported(export, tmp_path / f"two{n}", parallel=True)
        assert two == one
    assert one[0][4] == 3 and len(one[2]) == 3  # a day file not JSON, two items refused
    assert multiprocessing.active_children() == []


def test_a_parsing_process_that_fails_is_reported_as_one_line(tmp_path: Path) -> None:
    items = parse_in_worker(tmp_path / "gone.zip", None)
    with pytest.raises(ParsingStopped, match=r"NotAnExport: .*gone\.zip: no such file"):
        next(items)


def long_export(path: Path, messages: int = 80_000) -> Path:
    """One channel of short messages: more rows than the pipes hold, so the worker is still
    there (writing, or waiting for room) while a test looks at it."""
    users = [{"id": "U0LONG0001", "team_id": TEAM, "name": "long"}]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("users.json", json.dumps(users))
        archive.writestr("channels.json", json.dumps([{"id": "C0LONG0001", "name": "long"}]))
        for day in range(messages // 1_000):
            archive.writestr(
                f"long/{time.strftime('%Y-%m-%d', time.gmtime(1_700_000_000 + day * 86_400))}.json",
                json.dumps([
                    {"type": "message", "user": "U0LONG0001",
                     "ts": f"{1_700_000_000 + day * 86_400 + n}.000100",
                     "text": f"day {day} message {n} about the deploy"}
                    for n in range(1_000)
                ]),
            )  # fmt: skip
    return path


def running_worker(export: Path) -> tuple[list[str], set[str]]:
    """Start a parsing process on ``export`` and take its first item; then (the worker's
    command line, the files it holds open), read from /proc while it runs."""
    items = parse_in_worker(export, None)
    try:
        next(items)
        me = os.getpid()
        (pid,) = map(int, Path(f"/proc/{me}/task/{me}/children").read_text().split())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        held = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        return argv, held
    finally:
        items.close()


@contextmanager
def another_thread() -> Iterator[None]:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        yield
    finally:
        stop.set()
        other.join()


# Run alone, in a process with one thread (``chanctx import``'s case): pytest's own process may
# run threads (xdist's workers do), and with another thread the importer never forks.
_FORKED = """
import json, sys
from pathlib import Path
from tests.unit.bot.export import test_parallel_import as t
tmp = Path(sys.argv[1])
export = t.long_export(tmp / "long.zip")
with t.SqliteChannelStore(tmp / "data"):  # the store's lock and database are open here
    argv, held = t.running_worker(export)
one = t.imported(t.REAL, tmp / "one", parallel=False)
two = t.imported(t.REAL, tmp / "two", parallel=True)
me = Path("/proc/self/cmdline").read_bytes().decode().split(chr(0))
print(json.dumps({"argv": argv, "me": me, "held": sorted(held), "same": one == two}))
"""


@pytest.mark.slow
def test_the_worker_is_forked_without_the_importers_files_or_else_started_fresh(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", _FORKED, str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2_000:]
    alone = json.loads(run.stdout.strip().splitlines()[-1])
    assert alone["argv"] == alone["me"]  # forked: the child runs the parent's command line
    assert alone["held"] and not [n for n in alone["held"] if str(tmp_path / "data") in n]
    assert alone["same"]  # and the forked worker imports what one process imports
    export = long_export(tmp_path / "long2.zip")
    with another_thread():  # a fork would copy its locks: a fresh interpreter instead
        fresh, _ = running_worker(export)
    assert "from chanctx.bot.export.parse_process import main" in fresh[2]
    one = imported(REAL, tmp_path / "one", parallel=False)
    with another_thread():
        assert imported(REAL, tmp_path / "two", parallel=True) == one
