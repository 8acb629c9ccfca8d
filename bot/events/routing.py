"""Which workspace's runtime serves a request: one runtime per workspace (team), chosen per
request, so no cache, log or store of one workspace is ever reached from another's events.

A single-workspace bot (Socket Mode, or ``run --http`` with a bot token) has one runtime for
every request; ``run --http --oauth`` has one per installed team (bot/events/workspaces.py).
The routing middleware runs first and sets the request's runtime in a context variable that the
listeners read with ``current()``: Bolt runs them later in the same dispatch call, on the same
thread (``process_before_response``), and ``GuardedApp`` runs each dispatch in a fresh copy of
the context, so the value is the request's own and never outlives it. The assistant pane's
thread store is routed the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from chanctx.bot.core.runtime import Runtime
from slack_bolt import BoltContext, BoltRequest, BoltResponse
from slack_bolt.context.assistant.thread_context import AssistantThreadContext
from slack_bolt.context.assistant.thread_context_store.store import AssistantThreadContextStore
from slack_bolt.middleware import Middleware

__all__ = [
    "RoutedThreadStore",
    "RoutingMiddleware",
    "RuntimeFor",
    "current",
    "current_or_none",
    "routing_middleware",
    "serving",
]

logger = logging.getLogger("chanctx.routing")

# (team id) -> that workspace's runtime, or None when the team is not installed here.
RuntimeFor = Callable[[str | None], Runtime | None]

_CURRENT: ContextVar[Runtime | None] = ContextVar("chanctx_runtime", default=None)


def current_or_none() -> Runtime | None:
    return _CURRENT.get()


def current() -> Runtime:
    """The runtime of the request being dispatched (listeners only)."""
    runtime = _CURRENT.get()
    if runtime is None:
        raise LookupError("no workspace runtime for this request")
    return runtime


@contextmanager
def serving(runtime: Runtime) -> Iterator[None]:
    token = _CURRENT.set(runtime)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def team_of(body: dict[str, Any], context: BoltContext) -> str | None:
    """The workspace a payload belongs to: Bolt's reading, else the payload's own fields."""
    if context.team_id:
        return str(context.team_id)
    team = body.get("team_id") or body.get("team")
    if isinstance(team, dict):
        team = team.get("id")
    return str(team) if isinstance(team, str) and team else None


# Events about the installation itself: handled without the team's runtime (which may be gone).
_INSTALLATION_EVENTS = frozenset({"app_uninstalled", "tokens_revoked"})


class RoutingMiddleware(Middleware):
    """Bolt global middleware: the request's runtime, by its team.

    A ``Middleware`` object rather than a function: Bolt calls a function middleware through
    its keyword-argument injection (inspecting what it asks for, building a dict of a dozen
    values) on every request, which cost about a tenth of a channel message's dispatch."""

    def __init__(self, runtime_for: RuntimeFor) -> None:
        self.runtime_for = runtime_for

    def process(
        self, *, req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]
    ) -> BoltResponse | None:
        body = req.body
        event = body.get("event")
        if isinstance(event, dict) and event.get("type") in _INSTALLATION_EVENTS:
            next()
            return None
        team = team_of(body, req.context)
        runtime = self.runtime_for(team)
        if runtime is None:
            # Not installed here (or uninstalled a moment ago): nothing to keep, nothing to
            # answer; acknowledged so Slack does not retry it.
            logger.info("a request for workspace %s, which is not installed here", team)
            return BoltResponse(status=200, body="")
        _CURRENT.set(runtime)  # for this dispatch only: it runs in its own context copy
        req.context["chanctx_runtime"] = runtime
        next()
        return None


def routing_middleware(runtime_for: RuntimeFor) -> RoutingMiddleware:
    return RoutingMiddleware(runtime_for)


class RoutedThreadStore(AssistantThreadContextStore):
    """Bolt's assistant thread store, per workspace: the current runtime's own."""

    def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None:
        current().assistant_threads.save(
            channel_id=channel_id, thread_ts=thread_ts, context=context
        )

    def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None:
        return current().assistant_threads.find(channel_id=channel_id, thread_ts=thread_ts)
