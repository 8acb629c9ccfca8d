"""Opening the channel store with the bot: one per process, in the data dir, shared by every
workspace of an ``--oauth`` install (each of its keys names the team).

A store that cannot be used (corrupt, written by a newer chanctx, held by another process)
stops the start with the store's own one-line message, which names the file and what to do.
"""

from __future__ import annotations

from pathlib import Path

from chanctx.bot.core.channel_record import OpenStore
from chanctx.bot.core.forgetting import RedactingStore
from chanctx.bot.launch.options import Options
from chanctx.cache.channel_store import SqliteChannelStore

__all__ = ["open_channel_store", "readiness"]

_GB = 1_000_000_000


def open_channel_store(data_dir: Path, options: Options, *, maintain: bool = True) -> OpenStore:
    """The store in ``data_dir`` with ``--retention-days`` and ``--store-gb`` applied; with
    ``maintain``, a purge at start and every ``--purge-interval`` (daily) and an hourly size
    check run in the background. The old text of a deleted or edited message is redacted from
    the data dir's files once the bot wires its writers (``RedactingStore.on_erased``)."""
    store = SqliteChannelStore(data_dir, retention_days=options.retention_days)
    max_bytes = int(options.store_gb * _GB) if options.store_gb is not None else None
    opened = RedactingStore(store, max_bytes=max_bytes)
    if maintain and (options.retention_days is not None or max_bytes is not None):
        opened.start_maintenance(purge_every=options.purge_interval)
    return opened


def readiness(opened: OpenStore | None) -> dict[str, str]:
    """What ``/readyz`` adds about the store: why events are being refused, if they are."""
    problem = opened.problem if opened is not None else None
    return {"channel_store": f"refusing events: {problem}"} if problem else {}
