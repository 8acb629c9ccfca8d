"""Ingest over HTTP with durability on: signed Events API ``message`` events from concurrent
keep-alive senders into a real ``chanctx run --http``, each acknowledged only after the group
commit holding it.

    python -m bench ingest                       # 100,000 events a run
    python -m bench.ingest --events 20000 --no-write

Runs, one after another on the same bodies, each on a fresh data dir:

- *now, on disk*: this checkout, ``synchronous=FULL`` (every group commit fsynced), from
  ``--senders`` connections and again from ``--many`` (Slack delivers a busy workspace's
  events concurrently; more requests waiting make larger group commits);
- *previous*: the intake one change back (``--previous``, a commit; its ``bot/``,
  ``cache/``, ... extracted with ``git archive`` and put first on ``PYTHONPATH``), on disk,
  from both sender counts;
- *before*: the intake as it was before the quick path (``--before``, extracted the same way),
  without httptools and uvloop, on disk;
- *in memory*: the last commit before the channel store was wired into the bot (``--memory``,
  extracted the same way), without httptools and uvloop as it shipped: the in-memory intake
  the durable one is measured against (nothing stored, so nothing to count afterwards);
- *now, tmpfs*: this checkout with the data dir on /dev/shm (the commits, no disk);
- with ``--plain``, *now, plain uvicorn*: uvicorn on its pure-Python parser and asyncio's
  loop (how chanctx ran before it asked for httptools and uvloop), on disk.

Each run sends once the server's start is done (its CPU idle for half a second: the anthropic
SDK's background import would otherwise count as intake). For each: events a second (wall
clock, from the first send to the last acknowledgement), the
server process's own CPU seconds per 1,000 events (user + system from ``/proc/<pid>/stat``:
the senders share the machine's cores, so the rate alone says little on a loaded machine), the
load average while it ran, and how many messages the store held afterwards (every event
acknowledged must be there). chanctx has no store-less intake to compare with; "before" is
the same product one change earlier.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess
from bench._results import write_section
from bench._served_process import (
    ingest_bodies,
    send_events,
    slack_state,
    start_bot,
    stored_after,
)
from bench.store import channel_id

ROOT = Path(__file__).resolve().parents[1]
# The intake before the quick path (the parent of the commit that added it).
BEFORE = "e4fc8da"
# The intake one change back: every group commit wrote its messages' FTS5 words (a segment a
# commit) before the events were acknowledged.
PREVIOUS = "dadb958"
# What each "previous" commit measured so far was, for the table's notes.
PREVIOUS_MEANS = {
    "dadb958": "each group commit indexed its messages' words in FTS5 before the ack, a segment "
    "a commit",
    "c45cada": "the intake thread queued each batch for the store's writer thread, an event a "
    "Future, and decided the next batch while it committed",
    "ca03546": "the intake thread handed each batch to the store's writer thread and waited for "
    "its commit before taking the next",
}
# The last commit before the channel store was wired into the bot: what the issue calls
# "today's in-memory intake" (history in memory only, nothing durable, every event through
# Bolt's dispatch), as it shipped.
MEMORY = "8b5bfa8"
PACKAGES = ("bot", "cache", "context", "tools", "manifest_store", "fixtures")
TARGET = 2_000  # events a second, durable (the bar)


@dataclass(frozen=True)
class Run:
    label: str
    senders: int
    rate: float  # events a second
    cpu_per_1000: float  # server CPU seconds per 1,000 events
    load: float  # 1-minute load average at the end
    stored: int  # -1: the intake had no store to count in
    events: int


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plain_uvicorn(root: Path) -> Path:
    """A directory that, first on ``PYTHONPATH``, hides httptools and uvloop (their import
    fails), so uvicorn runs as it does without them."""
    shadow = root / "plain-uvicorn"
    for name in ("httptools", "uvloop"):
        (shadow / name).mkdir(parents=True, exist_ok=True)
        (shadow / name / "__init__.py").write_text(f"raise ImportError('{name} hidden')\n")
    return shadow


def checkout(commit: str, root: Path) -> Path:
    """The packages of ``commit`` as an importable ``chanctx`` under ``root``."""
    target = root / commit / "chanctx"
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", commit, *PACKAGES], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    (target / "__init__.py").write_text("")
    return target.parent


def settled(pid: int, *, quiet: float = 0.02, every: float = 0.5, limit: float = 60.0) -> None:
    """Wait until process ``pid`` spends under ``quiet`` CPU seconds in ``every`` seconds (its
    start's background work, the anthropic SDK's import, done), at most ``limit`` seconds: the
    run measures the intake, not the tail of the start."""
    deadline = time.monotonic() + limit
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(every)
        now = cpu_seconds(pid)
        if now - last < quiet:
            return
        last = now


def run_one(
    label: str,
    data_root: Path,
    bodies: Sequence[bytes],
    senders: int,
    path: Sequence[Path],
    *,
    durable: bool = True,
) -> Run:
    channels = [channel_id(900_000 + n) for n in range(1_000)]
    data = data_root / "data"
    data.mkdir(parents=True)
    env = {"PYTHONPATH": os.pathsep.join(str(p) for p in path)} if path else {}
    with FakeSlackAPI(slack_state(channels)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url, env=env)
        start_bot(bot, bot.url.removesuffix("/slack/events"))
        assert bot.process is not None
        pid = bot.process.pid
        waited = time.monotonic()
        settled(pid)
        waited = time.monotonic() - waited
        print(f"{label}: sending {len(bodies):,} events ({waited:.1f} s for the start)", flush=True)
        try:
            cpu_before = cpu_seconds(pid)
            took, refused = send_events(bot.port, bodies, senders)
            cpu = cpu_seconds(pid) - cpu_before
            load = os.getloadavg()[0]
        finally:
            bot.stop()
    if durable:
        stored = stored_after(data, refused, label)
    elif refused:
        raise RuntimeError(f"{len(refused)} events refused ({refused[:5]}) on {label}")
    else:
        stored = -1
    rate, per_1000 = len(bodies) / took, cpu / len(bodies) * 1000
    done = Run(label, senders, rate, per_1000, load, stored, len(bodies))
    print(
        f"{label} ({senders} senders): {done.rate:,.0f} events/s, "
        f"{done.cpu_per_1000:.2f} CPU s per 1,000, "
        f"load {load:.1f}, {stored:,} stored"
        if durable
        else f"load {load:.1f}, no store",
        flush=True,
    )
    return done


def report(args: argparse.Namespace, runs: list[Run]) -> str:
    by = {(run.label, run.senders): run for run in runs}
    now = by[("now, on disk", args.senders)]
    many = by.get(("now, on disk", args.many))
    previous = by.get(("previous, on disk", args.senders))
    previous_many = by.get(("previous, on disk", args.many))
    before = by.get(("before, on disk", args.senders))
    memory = by.get(("in memory, no store", args.senders))
    previous_means = PREVIOUS_MEANS.get(args.previous, "the quick path one change back")
    lines = [
        f"`python -m bench.ingest --events {args.events} --senders {args.senders} "
        f"--many {args.many}`: {args.events:,} signed `message` events (100 channels, chat-like "
        "text of 6-20 words, one in ten a thread reply) from keep-alive senders (each waits for "
        "its ack before its next event) into a real `chanctx run --http` on a fresh data dir, "
        "each acknowledged only after the group commit holding it; the runs one after another "
        "in one process of this bench, the senders (raw sockets, each request signed as it is "
        "sent) on the same 2 cores as the server.",
        "",
        "| intake | data dir | senders | events/s | server CPU s per 1,000 events "
        "| load (1 min) | stored |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        intake, _, where = run.label.rpartition(", ")
        lines.append(
            f"| {intake} | {where} | {run.senders} | {run.rate:,.0f} | {run.cpu_per_1000:.2f} | "
            f"{run.load:.1f} | {f'{run.stored:,}' if run.stored >= 0 else 'no store'} |"
        )
    lines += [
        "",
        "*now*: this commit (events no listener answers recorded on the quick path, in "
        "batches, `bot/events/quick_intake.py`; the events path on bare ASGI messages, "
        "`bot/server/raw_events.py`; the intake thread commits each batch itself and waits for "
        "it; the messages' FTS5 words indexed after the commit, many commits in one batch, "
        "`--index-after` 0.5 s), with httptools and uvloop; each run starts sending once the "
        "server's start is done (its CPU idle); *previous*: commit "
        f"`{args.previous}` ({previous_means}); "
        f"*before*: commit `{args.before}` (every event through Bolt's dispatch on a worker "
        "thread each) without httptools and uvloop, as it shipped; *plain uvicorn*: this "
        "commit with both hidden. "
        f"*in memory*: commit `{args.memory}`, the last before the channel store was wired in "
        "(every event through Bolt's dispatch into the in-memory history, nothing durable), "
        "without httptools and uvloop, as it shipped. *on disk*: `synchronous=FULL`, every group commit fsynced; "
        "*tmpfs*: /dev/shm.",
        "",
    ]
    summary = (
        f"Durable now: **{now.rate:,.0f} events/s** from {now.senders} senders at "
        f"{now.cpu_per_1000:.2f} CPU s per 1,000"
    )
    if many is not None:
        summary += f", **{many.rate:,.0f} events/s** from {many.senders} at {many.cpu_per_1000:.2f}"
    for name, other in (("previous", previous), ("before", before)):
        if other is not None:
            summary += (
                f"; {name}: {other.rate:,.0f} events/s at {other.cpu_per_1000:.2f} "
                f"({other.cpu_per_1000 / now.cpu_per_1000:.2f}x the CPU per event, now "
                f"{now.rate / other.rate:.2f}x the rate)"
            )
    if memory is not None:
        summary += (
            f"; in memory before the store: {memory.rate:,.0f} events/s at "
            f"{memory.cpu_per_1000:.2f} (durable now {now.rate / memory.rate:.2f}x its rate)"
        )
    if previous_many is not None and many is not None:
        summary += (
            f"; previous from {many.senders}: {previous_many.rate:,.0f} events/s at "
            f"{previous_many.cpu_per_1000:.2f} (now {many.rate / previous_many.rate:.2f}x the rate)"
        )
    shm = by.get(("now, tmpfs", args.senders))
    if shm is not None:
        summary += f"; tmpfs / disk {shm.rate / now.rate:.2f}x"
    best = min(run.cpu_per_1000 for run in (now, many) if run is not None)
    summary += (
        f". The server's CPU per event puts its ceiling at about {1000 / best:,.0f} events/s "
        f"with a whole core to itself (target {TARGET:,} durable)."
    )
    lines.append(summary)
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest")
    parser.add_argument("--events", type=int, default=100_000, help="signed events a run")
    parser.add_argument("--senders", type=int, default=8, help="keep-alive connections")
    parser.add_argument("--many", type=int, default=32, help="connections of the second run")
    parser.add_argument("--before", default=BEFORE, help="the intake before the quick path")
    parser.add_argument("--previous", default=PREVIOUS, help="the quick path one change back")
    parser.add_argument("--memory", default=MEMORY, help="the in-memory intake, before the store")
    parser.add_argument("--no-before", action="store_true", help="skip the --before runs")
    parser.add_argument("--no-memory", action="store_true", help="skip the --memory run")
    parser.add_argument("--no-previous", action="store_true", help="skip the --previous runs")
    parser.add_argument("--no-tmpfs", action="store_true", help="skip the run on /dev/shm")
    parser.add_argument("--plain", action="store_true", help="add a run without httptools")
    parser.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="chanctx-bench-ingest-"))
    shm = Path(tempfile.mkdtemp(prefix="chanctx-bench-ingest-", dir="/dev/shm"))
    senders = args.senders
    try:
        bodies = ingest_bodies(args.events, channels=100)
        plain = plain_uvicorn(root)
        runs = [run_one("now, on disk", root / "now", bodies, senders, ())]
        runs.append(run_one("now, on disk", root / "many", bodies, args.many, ()))
        if not args.no_previous:
            previous = checkout(args.previous, root)
            runs.append(run_one("previous, on disk", root / "prev", bodies, senders, (previous,)))
            runs.append(
                run_one("previous, on disk", root / "prev-many", bodies, args.many, (previous,))
            )
        if not args.no_before:
            old = checkout(args.before, root)
            runs.append(run_one("before, on disk", root / "old", bodies, senders, (plain, old)))
        if not args.no_memory:
            kept = checkout(args.memory, root)
            runs.append(
                run_one(
                    "in memory, no store",
                    root / "memory",
                    bodies,
                    senders,
                    (plain, kept),
                    durable=False,
                )
            )
        if not args.no_tmpfs:
            runs.append(run_one("now, tmpfs", shm / "now", bodies, senders, ()))
        if args.plain:
            runs.append(
                run_one("now, plain uvicorn, on disk", root / "plain", bodies, senders, (plain,))
            )
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    body = report(args, runs)
    print(body)
    if not args.no_write:
        write_section("Ingest over HTTP", body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
