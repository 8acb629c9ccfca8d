"""``chanctx playbook CHANNEL``: read a channel's playbook from the data dir, export it for
review, import a reviewed one.

The export is a JSON list of bullets (every field, states included); the import takes the same
list back after an operator edited it (a wrong bullet removed, a fact corrected, a section
moved), checks every bullet and says which one is wrong, and replaces the channel's playbook only
when all are valid. A running bot reads the store when a session starts, so an import reaches
the next thread session; stop the bot first when it runs on the same data dir, since each
process keeps its own copy in memory.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chanctx.bot.core.data_flags import add_data_dir, data_dir_of
from chanctx.context import ChanctxError
from chanctx.context.playbook import Bullet, render_playbook
from chanctx.manifest_store import LocalPlaybookStore
from pydantic import ValidationError

__all__ = ["add_playbook_parser", "run_playbook"]

_ID = re.compile(r"^[a-z]+-\d{5}$")
_CHANNEL = re.compile(r"^[A-Z0-9]{2,32}$")


class PlaybookFileError(ChanctxError):
    """An import file that is not a valid playbook; the message names the bullet and field."""


def add_playbook_parser(commands: Any) -> None:
    command = commands.add_parser(
        "playbook",
        help="Print a channel's playbook; export it for review or import a reviewed one.",
        description=(
            "Print what a channel has learned (its playbook, from the data dir), every bullet "
            "with its counters and state. Examples: chanctx playbook C0PLATFORM; chanctx "
            "playbook C0PLATFORM --export pb.json; chanctx playbook C0PLATFORM --import pb.json"
        ),
    )
    command.add_argument("channel", help="the channel id, e.g. C0PLATFORM")
    command.add_argument("--json", action="store_true", help="print the bullets as JSON")
    command.add_argument("--export", metavar="FILE", type=Path, help="write the bullets to FILE")
    command.add_argument(
        "--import", dest="import_file", metavar="FILE", type=Path,
        help="replace the channel's playbook with the bullets in FILE (checked first)",
    )  # fmt: skip
    add_data_dir(command)


def run_playbook(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if not _CHANNEL.match(args.channel):
        raise PlaybookFileError(f"{args.channel!r} is not a channel id (like C0PLATFORM)")
    data_dir = data_dir_of(args, env)
    if not data_dir.is_dir():
        raise PlaybookFileError(f"--data-dir {data_dir} is not a directory")
    store = LocalPlaybookStore(data_dir)
    try:
        if args.import_file is not None:
            bullets = _read(args.import_file)
            store.replace(args.channel, bullets)
            print(f"imported {len(bullets)} bullets into the playbook of {args.channel}")
            return 0
        bullets = store.bullets(args.channel)
        if args.export is not None:
            args.export.write_text(_dumped(bullets) + "\n", encoding="utf-8")
            print(f"wrote {len(bullets)} bullets to {args.export}")
            return 0
        print(_dumped(bullets) if args.json else _shown(args.channel, bullets))
        return 0
    finally:
        store.close()


def _dumped(bullets: list[Bullet]) -> str:
    return json.dumps([b.model_dump(mode="json") for b in bullets], indent=2, ensure_ascii=False)


def _shown(channel: str, bullets: list[Bullet]) -> str:
    if not bullets:
        return f"The playbook of {channel} is empty."
    active = [b for b in bullets if b.active]
    lines = [f"Playbook of {channel}: {len(active)} bullets sent, {len(bullets)} kept", ""]
    lines.append(render_playbook(active))
    for state in ("superseded", "quarantined"):
        kept = [b for b in bullets if b.state == state]
        if kept:
            lines += ["", f"Not sent ({state}):"]
            lines += [f"  [{b.id}] helpful={b.helpful} harmful={b.harmful} :: {b.content}"
                      for b in kept]  # fmt: skip
    return "\n".join(lines)


def _read(path: Path) -> list[Bullet]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PlaybookFileError(f"{path}: not a JSON playbook ({error})") from None
    if not isinstance(raw, list):
        raise PlaybookFileError(f"{path}: expected a list of bullets, got {type(raw).__name__}")
    bullets: list[Bullet] = []
    for index, item in enumerate(raw):
        try:
            bullet = Bullet.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise PlaybookFileError(f"{path}: bullet {index}: {where}: {first['msg']}") from None
        if not _ID.match(bullet.id) or not bullet.id.startswith(bullet.section + "-"):
            raise PlaybookFileError(
                f"{path}: bullet {index}: id {bullet.id!r} must be '{bullet.section}-' and 5 digits"
            )
        if any(b.id == bullet.id for b in bullets):
            raise PlaybookFileError(f"{path}: bullet {index}: id {bullet.id!r} appears twice")
        bullets.append(bullet)
    return bullets
