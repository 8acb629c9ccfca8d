"""``chanctx import`` as a process: killed with SIGKILL mid-import, then run again, the store
holds exactly what one whole import gives (nothing missing, nothing twice)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from chanctx.cache.channel_store import SqliteChannelStore, StoreError

CHANCTX = [sys.executable, "-m", "chanctx.bot.cli"]
TEAM = "T0KILLTEST"
# Large enough that the kill lands mid-import: the bulk path stores 12,000 messages before a
# poller sees the first commit, and the kill then found the import already done.
PER_CHANNEL = 60_000
TOTAL = 2 * PER_CHANNEL


def big_export(path: Path, per_channel: int = PER_CHANNEL) -> Path:
    users = [{"id": f"U{i:08d}", "team_id": TEAM, "name": f"user{i}"} for i in range(5)]
    channels = [{"id": "C0KILL0001", "name": "one"}, {"id": "C0KILL0002", "name": "two"}]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("users.json", json.dumps(users))
        archive.writestr("channels.json", json.dumps(channels))
        for channel in channels:
            for day in range(per_channel // 1_000):
                messages = [
                    {"type": "message", "user": users[n % 5]["id"],
                     "ts": f"{1_700_000_000 + day * 86_400 + n}.000100",
                     "text": f"{channel['name']} day {day} message {n} about deploy {n % 97}"}
                    for n in range(1_000)
                ]  # fmt: skip
                stamp = time.strftime("%Y-%m-%d", time.gmtime(1_700_000_000 + day * 86_400))
                archive.writestr(f"{channel['name']}/{stamp}.json", json.dumps(messages))
    return path


def stored(data: Path) -> dict[str, list[str]]:
    store = SqliteChannelStore(data, read_only=True)
    try:
        return {c: [m.ts for m in store.messages(TEAM, c)] for c in ("C0KILL0001", "C0KILL0002")}
    finally:
        store.close()


def workers_of(export: Path) -> list[int]:
    """Processes still reading ``export`` (a parsing process names it in its command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(export).encode() in argv:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("parse_process", ["on", "off"])
def test_an_import_killed_midway_resumes_by_running_it_again(
    tmp_path: Path, parse_process: str
) -> None:
    export = big_export(tmp_path / "export.zip")
    data = tmp_path / "data"
    command = [*CHANCTX, "import", str(export), "--data-dir", str(data)]
    command += ["--parse-process", parse_process]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    held = 0
    while time.monotonic() < deadline and running.poll() is None:
        try:
            held = sum(len(v) for v in stored(data).values())
        except StoreError:  # not created yet, or its schema not yet committed
            held = 0
        if held:
            break
        time.sleep(0.05)
    assert running.poll() is None, "the import finished before it could be killed"
    os.kill(running.pid, signal.SIGKILL)
    running.communicate()
    assert 0 < held < TOTAL
    # A parsing process left behind dies on its next write to the importer's closed pipe.
    gone = time.monotonic() + 30
    while workers_of(export) and time.monotonic() < gone:
        time.sleep(0.1)
    assert workers_of(export) == []
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"of {TOTAL:,} messages" in again.stdout
    resumed = stored(data)
    whole = tmp_path / "whole"
    clean = subprocess.run([*CHANCTX, "import", str(export), "--data-dir", str(whole),
                            "--parse-process", "off"],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert clean.returncode == 0, clean.stderr
    assert resumed == stored(whole)
    assert all(len(v) == len(set(v)) == PER_CHANNEL for v in resumed.values())
