"""The one Redis connection helper: how chanctx connects, names its keys and reports an outage.

Every Redis store here and the bot's own link to Redis (``bot/shared/link.py``) use it. Keys are ``chanctx:<team>:<kind>:...`` (the README lists every kind), so one Redis can hold
several bots' workspaces and an operator can find, size or drop one workspace's state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import redis
from chanctx.manifest_store._errors import StoreUnavailable
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["check_team", "connect", "guarded", "is_outage", "namespace"]

# Slack team and enterprise ids; "-" stands for "none" (an org-wide install has no team).
_TEAM: Final = re.compile(r"[A-Z0-9]{1,32}|-")
# Errors that mean "Redis could not store this now", as opposed to a bug in a command.
_UNAVAILABLE_REPLIES: Final = ("OOM", "MISCONF", "READONLY", "LOADING", "NOREPLICAS", "TRYAGAIN")


def connect(url: str, *, timeout: float) -> Any:
    """A client for ``url`` (a ``redis.Redis``) whose commands give up after ``timeout`` seconds.

    One retry, at once, on a connection error: a pooled connection to a Redis that restarted is
    dead, and the retry opens a fresh one. Never more: an outage must fail fast (a 503, so
    Slack retries), not hold an event's ack.
    """
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 1),
    )


def check_team(team: str) -> str:
    """The team id, checked: it becomes part of every key."""
    if not isinstance(team, str) or not _TEAM.fullmatch(team):
        raise ValueError(f"team {team!r} is not a Slack team id ([A-Z0-9]{{1,32}})")
    return team


def namespace(team: str) -> str:
    return f"chanctx:{check_team(team)}:"


def is_outage(error: BaseException) -> bool:
    """True for a Redis error that says the store is unavailable (down, timing out, out of
    memory, loading its data after a restart), not that a command was wrong."""
    if isinstance(error, redis.ConnectionError | redis.TimeoutError | StoreUnavailable):
        return True
    if isinstance(error, redis.ResponseError):
        return str(error).startswith(_UNAVAILABLE_REPLIES)
    return False


@contextmanager
def guarded(what: str) -> Iterator[None]:
    """Turn a Redis outage into StoreUnavailable (an OSError), naming what was not done."""
    try:
        yield
    except redis.RedisError as error:
        if is_outage(error):
            raise StoreUnavailable(f"Redis unavailable, could not {what}: {error}") from error
        raise
