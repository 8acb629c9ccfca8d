"""``chanctx query CHANNEL QUERY``: the context query API's answer, from the data dir's channel
store, without a running bot (and beside one: the store is opened read-only, which never
blocks the bot's writer).

The channel's search index is built from the store exactly as a running bot builds it
(``bot/core/store_index.py``): every stored message, within ``--history-mb``. No Slack call is made: threads are what the store
holds, names are the names the bot learned.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chanctx.bot.core.data_flags import add_data_dir, add_database_url, data_dir_of, database_url_of
from chanctx.bot.launch.options import Options, SettingsError

if TYPE_CHECKING:
    from chanctx.bot.core.store_index import StoreIndexes
    from chanctx.cache.channel_store import ChannelStore

__all__ = ["add_query_parser", "run_query_command"]

_BUILD_WAIT = 24 * 3600.0  # an answer's wait budget: no Slack here, nothing to give up on
_TELL_EVERY = 5.0  # seconds between the progress lines of a long index build (on stderr)
_CHANNEL = re.compile(r"^[CDG][A-Z0-9]{2,20}$")


def add_query_parser(commands: Any) -> None:
    command = commands.add_parser(
        "query",
        help="Answer a context query from the channel store in the data dir (no bot needed).",
        description=(
            "Print the context query API's answer for CHANNEL, ranked over every message the "
            "channel store in the data dir holds. Works while the bot runs. Example: chanctx "
            'query C0INCIDENTS "why did checkout fail?" --format text'
        ),
    )
    command.add_argument("channel", help="the channel id, e.g. C0INCIDENTS")
    command.add_argument("query", help="what to look for, in words")
    command.add_argument("--budget", type=int, default=2_000, help="tokens of the answer")
    command.add_argument(
        "--format", choices=("json", "markdown", "text"), default="markdown",
        help="markdown or text: the rendered answer; json: the API's whole response",
    )  # fmt: skip
    command.add_argument("--team", default=None, help="the workspace, when several hold CHANNEL")
    add_data_dir(command)
    command.add_argument(
        "--history-mb", type=int, default=Options.model_fields["history_mb"].default,
        help="memory the loaded channel may take (MiB); the bot's default, so the answer is the "
        "one the running bot would give",
    )  # fmt: skip
    add_database_url(command)


def run_query_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    # Imported here, not at the top: `chanctx --help` loads none of this.
    from chanctx.bot.core.built_context import ContextSettings
    from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
    from chanctx.bot.core.engine import ContextEngine
    from chanctx.bot.launch.channel_store import open_store
    from chanctx.bot.server.queries import QueryBody, run_query
    from chanctx.bot.slack.intake import SelfIdentity
    from chanctx.context import default_counter
    from chanctx.tools import IndexedHistory
    from pydantic import ValidationError

    if not _CHANNEL.match(args.channel):
        raise SettingsError(f"{args.channel!r} is not a channel id (like C0INCIDENTS)")
    if args.history_mb <= 0:
        raise SettingsError(f"--history-mb must be a positive whole number, got {args.history_mb}")
    try:
        body = QueryBody(
            query=args.query, channel=args.channel, token_budget=args.budget, format=args.format
        )
    except ValidationError as error:
        raise SettingsError(f"query: {error.errors()[0]['msg']}") from None
    data_dir = data_dir_of(args, env)
    database_url = database_url_of(args, env)
    store = open_store(data_dir, database_url, read_only=True)
    opened = OpenStore(store)
    try:
        team = _team_of(store, args.channel, args.team, data_dir)
        record = ChannelRecord(opened, team)
        engine = ContextEngine(
            me=SelfIdentity(),
            counter=default_counter(),
            history=IndexedHistory(max_bytes=args.history_mb * 2**20),
            record=record,
            settings=ContextSettings(max_wait_seconds=_BUILD_WAIT),  # no Slack to wait for
        )
        # The engine builds the channel's search index from the store (all of it, within
        # --history-mb), as the running bot does on a channel's first search, and the answer
        # waits for it: a running bot answers from its built index once the build is done.
        engine.learn_warm(args.channel, [])
        if engine.indexes is not None:
            _wait_for_index(engine.indexes, args.channel)
        answer = run_query(engine, body)
    finally:
        opened.close()
    print(json.dumps(answer, indent=2) if args.format == "json" else answer["rendered"])
    return 0


def _wait_for_index(indexes: StoreIndexes, channel: str) -> None:
    """Wait for the channel's index, telling a long build's progress on stderr."""
    started = time.monotonic()
    ready, read = indexes.wait_built(channel, _TELL_EVERY)
    while not ready:
        print(
            f"building the search index of {channel} from the channel store: {read:,} messages "
            f"read in {time.monotonic() - started:.0f} s",
            file=sys.stderr,
        )
        ready, read = indexes.wait_built(channel, _TELL_EVERY)


def _team_of(store: ChannelStore, channel: str, team: str | None, data_dir: Path) -> str:
    teams = sorted({key.team for key in store.channels(team) if key.channel == channel})
    if not teams:
        where = f" of team {team}" if team else ""
        raise SettingsError(f"{channel}{where} is not in the channel store in {data_dir}")
    if len(teams) > 1:
        raise SettingsError(f"{channel} is stored for several teams ({', '.join(teams)}): --team")
    return teams[0]
