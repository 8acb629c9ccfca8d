"""What the context engine asks of Slack and tells other replicas: the Web API calls it makes
when its caches cannot know (``SlackSource``), where it reports what it learned (``Learned``),
and display names looked up on first use (``LazyNames``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from chanctx.bot.slack.slack_api import ThreadFetch
from chanctx.context import Message, Names

__all__ = ["LazyNames", "Learned", "SlackSource", "lazy_names", "learn_name"]


class SlackSource(Protocol):
    """What the engine needs from the Slack Web API (``bot/slack/slack_api.py``'s ``SlackFetcher``)."""

    def fetch_thread(self, channel: str, thread_ts: str) -> Sequence[Message]: ...
    def fetch_thread_newest(
        self,
        channel: str,
        root_ts: str,
        *,
        until: str,
        after: str | None = ...,
        expected_replies: int = ...,
        wait_budget: float = ...,
    ) -> ThreadFetch: ...
    def fetch_message(self, channel: str, ts: str) -> Message | None: ...
    def channel_history(
        self, channel: str, *, limit: int = ..., oldest: str | None = ...
    ) -> list[Message]: ...
    def pinned_messages(self, channel: str) -> list[Message]: ...
    def user_name(self, user_id: str) -> str: ...
    def channel_name(self, channel_id: str) -> str: ...


class Learned(Protocol):
    """Where the engine tells other replicas what it learned from Slack, so that none of them
    asks Slack again (``bot/replicas/``: the change stream in Redis). Called without the lock."""

    def warmed(self, channel: str, messages: Sequence[Message]) -> None: ...
    def fetched(self, messages: Sequence[Message]) -> None: ...
    def thread(
        self,
        channel: str,
        root_ts: str,
        messages: Sequence[Message],
        *,
        complete: bool,
        partial: tuple[str | None, str | None] | None,
    ) -> None: ...
    def named(self, kind: str, key: str, name: str) -> None: ...


class LazyNames(Mapping[str, str]):
    """Display names resolved on first use (users.info / conversations.info, cached there)."""

    def __init__(
        self,
        known: Mapping[str, str],
        resolve: Any,
        prefixes: tuple[str, ...],
        on_learn: Callable[[str, str], None] | None = None,
    ) -> None:
        self._known = dict(known)
        self._resolve = resolve
        self._prefixes = prefixes
        self._on_learn = on_learn

    def learn(self, key: str, name: str) -> None:
        """A name another replica resolved: no lookup here."""
        self._known[key] = name

    def __getitem__(self, key: str) -> str:
        if key in self._known:
            return self._known[key]
        if self._resolve is None or not key.startswith(self._prefixes):
            raise KeyError(key)
        name = str(self._resolve(key))
        if not name or name == key:  # the lookup failed: let callers fall back
            raise KeyError(key)
        self._known[key] = name
        if self._on_learn is not None:
            self._on_learn(key, name)
        return name

    def __iter__(self) -> Iterator[str]:
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)


def lazy_names(names: Names, slack: SlackSource, tell: Callable[[str, str, str], None]) -> Names:
    """``names`` that ask Slack for an unknown user (U, W) or channel (C, G, D) on first use,
    telling ``tell(kind, key, name)`` each name learned (other replicas need not ask)."""
    return Names(
        users=LazyNames(names.users, slack.user_name, ("U", "W"), lambda k, n: tell("user", k, n)),
        channels=LazyNames(
            names.channels, slack.channel_name, ("C", "G", "D"), lambda k, n: tell("channel", k, n)
        ),
    )


def learn_name(names: Names, kind: str, key: str, name: str) -> None:
    """A name another replica looked up (``kind`` "user" or "channel"): no lookup here."""
    known = names.users if kind == "user" else names.channels
    if isinstance(known, LazyNames):
        known.learn(key, name)
