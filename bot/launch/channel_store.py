"""Opening the channel store with the bot: one per process, shared by every workspace of an
``--oauth`` install (each of its keys names the team). The SQLite file in the data dir by
default; with ``--database-url`` the PostgreSQL store every replica shares.

A store that cannot be used (corrupt, written by a newer chanctx, held by another process, a
database that does not answer) stops the start with one line, which names the file or the
setting and what to do. A database URL is never shown with its password.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from chanctx.bot.core.channel_record import OpenStore
from chanctx.bot.core.forgetting import RedactingStore
from chanctx.bot.launch.option_values import redacted_url
from chanctx.bot.launch.options import Options, SettingsError
from chanctx.cache.channel_store import ChannelStore, PostgresChannelStore, SqliteChannelStore

__all__ = ["open_channel_store", "open_store", "readiness", "shared_store"]

logger = logging.getLogger("chanctx.channel_store")
_GB = 1_000_000_000
_DATABASE = "--database-url / CHANCTX_DATABASE_URL"
_STATEMENT_SECONDS = 5.0  # the longest one statement may run; less when --max-wait is less
_ERASE_EVERY = 60.0  # the PostgreSQL erase pass (VACUUM FULL) runs on its own thread this often
_RECHECK_EVERY = 1.0  # how often the database is asked whether it answers
_UNAVAILABLE = "database is unavailable"  # StoreUnavailable's words (DatabaseFull's differ)


def open_store(
    data_dir: Path, database_url: str | None, *, retention_days: int | None = None,
    max_wait: float | None = None, read_only: bool = False, index_after: float | None = None,
) -> ChannelStore:  # fmt: skip
    """The SQLite store in ``data_dir``, or the PostgreSQL store at ``database_url`` (whose
    statements are bounded by ``max_wait``). A bad URL or a database that does not answer is a
    SettingsError naming the setting, the password starred out."""
    if database_url is None:
        return SqliteChannelStore(
            data_dir, read_only=read_only, retention_days=retention_days, index_after=index_after
        )
    timeout = min(_STATEMENT_SECONDS, max_wait) if max_wait else _STATEMENT_SECONDS
    # The pool warns of every failed connection attempt, over several lines; the store says
    # it once (a refused event, /readyz, the probe's one line when the database goes).
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        return PostgresChannelStore(
            database_url,
            retention_days=retention_days,
            statement_timeout=timeout,
            connect_timeout=timeout,
            erase_interval=None,  # never on the acknowledging path: see _erase_loop
        )
    except ValueError:
        raise SettingsError(
            f"{_DATABASE} must be a postgresql:// URL, got {redacted_url(database_url)!r}"
        ) from None
    except OSError as error:
        raise SettingsError(
            f"{_DATABASE} ({redacted_url(database_url)}): {redacted_url(str(error))}"
        ) from None


def shared_store(opened: OpenStore | None) -> bool:
    """True when every replica writes one store (PostgreSQL): an event is then written once,
    by the replica that received it, and the change stream only feeds the others' caches."""
    return opened is not None and isinstance(opened.store, PostgresChannelStore)


def open_channel_store(data_dir: Path, options: Options, *, maintain: bool = True) -> OpenStore:
    """The process's store with ``--retention-days`` and ``--store-gb`` applied; with
    ``maintain``, a purge at start and every ``--purge-interval`` (daily) and an hourly size
    check run in the background (and, on PostgreSQL, the erase pass and the check that clears a
    refusal once the database is back). The old text of a deleted or edited message is redacted
    from the data dir's files once the bot wires its writers (``RedactingStore.on_erased``)."""
    store = open_store(
        data_dir, options.database_url, retention_days=options.retention_days,
        max_wait=options.max_wait, index_after=options.index_after,
    )  # fmt: skip
    max_bytes = int(options.store_gb * _GB) if options.store_gb is not None else None
    opened = RedactingStore(store, max_bytes=max_bytes)
    if maintain and (options.retention_days is not None or max_bytes is not None):
        opened.start_maintenance(purge_every=options.purge_interval)
    if maintain and isinstance(store, PostgresChannelStore):
        threading.Thread(
            target=_database_loop, args=(opened, store), name="channel-store-db", daemon=True
        ).start()
    return opened


def _database_loop(opened: OpenStore, store: PostgresChannelStore) -> None:
    """Off the acknowledging path: a probe every second, so ``/readyz`` says the database is
    gone before an event is refused and ready again as soon as it answers (a load balancer
    that heeds ``/readyz`` would otherwise send no event to succeed on), and the erase pass
    when a batch removed text."""
    last_erase = 0.0
    waited = 0.0
    while not opened.closed:
        time.sleep(_RECHECK_EVERY)
        waited += _RECHECK_EVERY
        try:
            store.ping()
        except OSError as error:
            if opened.closed:  # the pool closed under the probe: shutting down
                return
            if opened.problem is None:
                logger.error("channel store: %s", error)
            opened.health(str(error))
            continue
        problem = opened.problem
        if problem is not None and _UNAVAILABLE in problem:  # not a full disk: a write says
            logger.info("channel store: the database answers again")
            opened.health(None)
        if waited - last_erase >= _ERASE_EVERY:
            last_erase = waited
            try:
                store.erase_if_pending()
            except OSError as error:
                logger.warning("channel store erase pass postponed: %s", error)


def readiness(opened: OpenStore | None) -> dict[str, str]:
    """What ``/readyz`` adds about the store: why events are being refused, if they are."""
    problem = opened.problem if opened is not None else None
    return {"channel_store": f"refusing events: {problem}"} if problem else {}
