"""``chanctx store stats|check``: what the data dir's channel store holds, read beside a running
bot (a read-only connection never blocks its writer)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from chanctx.bot.core.data_flags import add_data_dir, add_database_url, data_dir_of, database_url_of
from chanctx.bot.launch.channel_store import open_store
from chanctx.cache import ts_key
from chanctx.cache.channel_store import (
    DB_NAME,
    BackfillCursor,
    ChannelStore,
    StoreError,
    StoreStats,
)
from chanctx.cache.channel_store.__main__ import check

__all__ = ["add_store_parser", "run_store"]


def add_store_parser(commands: Any) -> None:
    command = commands.add_parser(
        "store",
        help="Show what the channel store holds (stats) or check that it is whole (check).",
        description=(
            "Read the data dir's channel store, also while the bot runs. stats: channels, "
            "messages, threads, tombstones, bytes on disk, and how far back each channel "
            "reaches; check: SQLite's integrity check and every channel's index. Examples: "
            "chanctx store stats; chanctx store stats --json; chanctx store check"
        ),
    )
    command.add_argument("action", choices=["stats", "check"])
    command.add_argument("--json", action="store_true", help="stats as one JSON object")
    add_data_dir(command)
    add_database_url(command)


def run_store(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    data_dir = data_dir_of(args, env)
    database_url = database_url_of(args, env)
    if database_url is not None:
        if args.action == "check":
            print(
                "chanctx store: check reads the SQLite file; PostgreSQL checks its own pages "
                "(amcheck, pg_dump)",
                file=sys.stderr,
            )
            return 2
        return _stats(open_store(data_dir, database_url), as_json=args.json)
    if not (data_dir / DB_NAME).exists():
        print(
            f"chanctx store: no channel store in {data_dir} yet ({DB_NAME} is made by the "
            "bot's first start or an import); --data-dir / CHANCTX_DATA_DIR names another",
            file=sys.stderr,
        )
        return 2
    if args.action == "check":
        return check(data_dir)
    try:
        store = open_store(data_dir, None, read_only=True)
    except StoreError as error:
        print(f"chanctx store: {error}", file=sys.stderr)
        return 2
    return _stats(store, as_json=args.json)


def _stats(store: ChannelStore, *, as_json: bool) -> int:
    try:
        stats = store.stats()
    finally:
        store.close()
    print(stats.model_dump_json(indent=2) if as_json else shown(stats))
    return 0


def shown(stats: StoreStats) -> str:
    lines = [
        f"{stats.path} (schema {stats.schema_version}): {stats.channels:,} channels, "
        f"{stats.messages:,} messages, {stats.threads:,} threads, {stats.tombstones:,} "
        f"tombstones, {stats.bytes_on_disk / 2**20:,.1f} MiB on disk"
    ]
    for channel in stats.per_channel:
        name = f"#{channel.name}" if channel.name else channel.channel
        reach = (
            f"{_day(channel.oldest_ts)} to {_day(channel.newest_ts)}"
            if channel.oldest_ts and channel.newest_ts
            else "no messages"
        )
        pending = "; " + _backfill_state(channel.backfill)
        lines.append(
            f"  {channel.team} {channel.channel} {name}: {channel.messages:,} messages, "
            f"{channel.threads:,} threads, {channel.tombstones:,} tombstones, {reach}{pending}"
        )
    return "\n".join(lines)


def _backfill_state(cursor: BackfillCursor | None) -> str:
    """How far back the history read from Slack reaches, and what the backfill still wants."""
    if cursor is None:
        return "history from Slack: not read yet (backfill pending)"
    if cursor.complete:
        return "history from Slack: whole (backfill complete)"
    reach = f"back to {_day(cursor.oldest_ts)}" if cursor.oldest_ts else "none"
    if cursor.newest_ts is not None:  # an import: Slack's messages since it are still to read
        reach += f", up to {_day(cursor.newest_ts)} (newer pending)"
    if cursor.goal_ts is None:
        return f"history from Slack: {reach} (backfill pending)"
    if cursor.oldest_ts is not None and ts_key(cursor.oldest_ts) <= ts_key(cursor.goal_ts):
        return f"history from Slack: {reach} (backfill done to {_day(cursor.goal_ts)})"
    return f"history from Slack: {reach} (backfill pending, to {_day(cursor.goal_ts)})"


def _day(ts: str) -> str:
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d")
