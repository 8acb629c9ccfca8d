"""``chanctx import EXPORT``: a Slack export (ZIP or folder) into the data dir's channel store.

Exit status: 0 when everything was imported, 1 when some files or messages were refused (each
named on stderr, the rest imported), 2 when nothing could be read (not an export, no workspace,
the store unusable). A progress bar on a terminal; one summary line either way.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chanctx.bot.core.data_flags import add_data_dir, add_database_url, data_dir_of, database_url_of
from chanctx.bot.export.importer import ImportRefused, import_export
from chanctx.bot.export.parsing import ParsingStopped
from chanctx.cache.channel_store import PostgresChannelStore, SqliteChannelStore
from chanctx.context import ChanctxError
from tqdm import tqdm

__all__ = ["add_import_parser", "run_import"]

_TEAM = re.compile(r"^[TE][A-Z0-9]{2,30}$")


def add_import_parser(commands: Any) -> None:
    command = commands.add_parser(
        "import",
        help="Import a Slack export (its ZIP or unpacked folder) into the channel store.",
        description=(
            "Read a Slack workspace export into the data dir's channel store, so the bot knows "
            "what channels said before it arrived. Safe to repeat: what is known is skipped, a "
            "message deleted since is not brought back, and a stopped import resumes by running "
            "it again. Examples: chanctx import export.zip; chanctx import export/ --channels "
            "general,C0123ABCD"
        ),
    )
    command.add_argument("export", type=Path, help="the export's ZIP file or unpacked folder")
    command.add_argument(
        "--team", default=None, help="the workspace id (T...), when users.json does not name it"
    )
    command.add_argument(
        "--channels", default=None, help="only these conversations (ids or names, comma-separated)"
    )
    command.add_argument(
        "--parse-process",
        choices=("auto", "on", "off"),
        default="auto",
        help="parse the day files in a second process while this one writes: auto (when they "
        "pass 16 MB and a core is idle), on or off",
    )
    add_data_dir(command)
    add_database_url(command)


def run_import(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if args.team is not None and not _TEAM.match(args.team):
        raise ImportRefused(f"--team {args.team!r} is not a workspace id (like T0123ABCD)")
    only = {c.strip() for c in args.channels.split(",") if c.strip()} if args.channels else None
    data_dir = data_dir_of(args, env)
    url = database_url_of(args, env)
    try:
        # NORMAL, not FULL: an import is re-runnable (what a power cut loses, running it again
        # brings back), so it skips the fsync a commit; close() checkpoints the log at the end.
        store = (
            PostgresChannelStore(url) if url else SqliteChannelStore(data_dir, synchronous="NORMAL")
        )
    except (ChanctxError, ValueError, OSError) as error:  # the URL's password is starred out
        print(f"chanctx import: {error}", file=sys.stderr)
        return 2
    try:
        with _quiet_intake(), _progress() as progress:
            summary = import_export(
                args.export,
                store,
                team=args.team,
                only=only,
                on_problem=lambda line: progress.write(f"refused: {line}", file=sys.stderr),
                progress=lambda messages, channels: _advance(progress, messages, channels),
                parallel={"on": True, "off": False}.get(args.parse_process),
            )
    except ImportRefused as error:
        print(f"chanctx import: {error}", file=sys.stderr)
        return 2
    except ParsingStopped as error:  # what was written stays: running it again resumes
        print(f"chanctx import: {error}; run it again to go on", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(summary.line())
    return summary.exit_status


@contextmanager
def _progress() -> Iterator[tqdm[Any]]:
    """A bar on a terminal (messages, their rate, conversations); nothing otherwise. Without
    tqdm's monitor thread: the import updates the bar itself, and a second thread would keep
    the parsing process from being forked (``parse_process``)."""
    tqdm.monitor_interval = 0
    bar: tqdm[Any] = tqdm(
        unit=" msg", desc="importing", disable=not sys.stderr.isatty(), file=sys.stderr
    )
    try:
        yield bar
    finally:
        bar.close()


def _advance(bar: tqdm[Any], messages: int, channels: int) -> None:
    bar.update(messages - bar.n)
    bar.set_postfix(conversations=channels, refresh=False)


@contextmanager
def _quiet_intake() -> Iterator[None]:
    """Intake warns once per malformed live event; an import names each one itself."""
    logger = logging.getLogger("chanctx.intake")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
