"""The Claude sessions' logs: ``SessionLogs`` / ``AppendLog`` (``base.py``) and their backends.

* ``local.py``: :class:`SessionStore` / :class:`SessionLog`, one fsynced JSONL file per thread
  in the data dir;
* ``redis.py``: :class:`RedisSessionStore` / :class:`RedisSessionLog`, one list per thread in
  Redis, so a thread's session resumes on whichever replica answers next.
"""

from __future__ import annotations

from chanctx.manifest_store.sessions.base import AppendLog, SessionLogs
from chanctx.manifest_store.sessions.local import SessionLog, SessionStore
from chanctx.manifest_store.sessions.redis import RedisSessionLog, RedisSessionStore

__all__ = [
    "AppendLog",
    "RedisSessionLog",
    "RedisSessionStore",
    "SessionLog",
    "SessionLogs",
    "SessionStore",
]
