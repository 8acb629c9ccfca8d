"""Timing channel_context's ranking in this process, as the served tool runs it."""

from __future__ import annotations

import time
from collections.abc import Sequence

from chanctx.bot.core.engine import ContextEngine
from chanctx.context import Names
from chanctx.tools._search import search


def timed_searches(
    engine: ContextEngine,
    channel: str,
    intents: Sequence[str],
    names: Names,
    *,
    limit: int,
    per_thread: int,
) -> list[float]:
    """Seconds each intent took through the tool's steps: the scope brought up to date for the
    intent under the index's lock, then ``search`` (nothing hidden, nothing held)."""
    took: list[float] = []
    for intent in intents:
        started = time.perf_counter()
        scope = engine.search_scope(channel, hidden=frozenset(), held=frozenset())
        assert scope is not None
        with scope.index.lock:
            scope.prepare(intent, names)
            search(
                scope.index, intent=intent, authors=(), since=None, names=names, now=None,
                limit=limit, per_thread=per_thread, hidden=scope.hidden,
            )  # fmt: skip
        took.append(time.perf_counter() - started)
    return took
