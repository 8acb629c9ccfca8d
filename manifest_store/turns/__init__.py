"""The turn store: every acknowledged question answered exactly once, queue and outbox in one.

``TurnStore`` (``base.py``) is what the runtime needs of it; each backend is a module beside it:

* ``local.py``: :class:`TurnJournal`, one fsynced JSONL file in the data dir (one process);
* ``redis.py``: :class:`RedisTurnStore`, a stream and hashes in Redis, shared by replicas.
"""

from __future__ import annotations

from chanctx.manifest_store.turns.base import OutboxEntry, PendingTurn, TurnStore
from chanctx.manifest_store.turns.local import TurnJournal
from chanctx.manifest_store.turns.redis import GROUP, QueuedTurn, RedisTurnStore

__all__ = [
    "GROUP",
    "OutboxEntry",
    "PendingTurn",
    "QueuedTurn",
    "RedisTurnStore",
    "TurnJournal",
    "TurnStore",
]
