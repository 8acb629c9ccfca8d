"""The channels' playbooks, stored: ``PlaybookStore`` (``base.py``) and its backends beside it.

* ``local.py``: :class:`LocalPlaybookStore`, one fsynced JSONL file per channel in the data dir
  (in memory only without one);
* ``redis.py``: :class:`RedisPlaybookStore`, one list per channel in Redis, for replicas.
"""

from __future__ import annotations

from chanctx.manifest_store.playbook.base import PlaybookStore
from chanctx.manifest_store.playbook.local import PLAYBOOK_DIR, LocalPlaybookStore
from chanctx.manifest_store.playbook.redis import RedisPlaybookStore

__all__ = ["PLAYBOOK_DIR", "LocalPlaybookStore", "PlaybookStore", "RedisPlaybookStore"]
