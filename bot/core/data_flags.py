"""Where a command finds the bot's data: ``--data-dir`` (``CHANCTX_DATA_DIR``) and, for the
channel store on PostgreSQL, ``--database-url`` (``CHANCTX_DATABASE_URL``). The operator
commands that read a data dir beside (or instead of) a running bot spell them the same way,
and load a channel within the bot's own memory default (``DEFAULT_HISTORY_MB``), as a replay
does, so each answers as the running bot would."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = [
    "DEFAULT_HISTORY_MB",
    "add_data_dir",
    "add_database_url",
    "data_dir_of",
    "database_url_of",
]

DEFAULT_DATA_DIR = ".chanctx"
# MiB the history and the search indexes may hold (``--history-mb``): RssAnon of a served
# process stays under 400 MB at this size, whatever is stored.
DEFAULT_HISTORY_MB: Final = 256


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=Path, default=None,
        help=f"where the bot keeps its data [env CHANCTX_DATA_DIR; default ./{DEFAULT_DATA_DIR}]",
    )  # fmt: skip


def add_database_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url", default=None,
        help="the PostgreSQL channel store instead of the data dir's "
        "[env CHANCTX_DATABASE_URL; default none]",
    )  # fmt: skip


def data_dir_of(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    given: Path | None = args.data_dir
    return given or Path(env.get("CHANCTX_DATA_DIR") or DEFAULT_DATA_DIR)


def database_url_of(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    given: str | None = args.database_url
    return given or env.get("CHANCTX_DATABASE_URL") or None
