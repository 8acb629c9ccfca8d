"""The assistant pane's viewed channel per pane thread, in Redis: the question may reach
another replica than the one ``assistant_thread_started`` did.

``chanctx:<team>:pane:<channel>:<thread_ts>`` is a hash: ``context`` (the JSON Slack sent) and
``titled`` (set once, by the thread's first question). Each save keeps the key 30 days more;
a pane thread idle longer is forgotten, as the local store forgets its oldest.
"""

from __future__ import annotations

import json
from typing import Any, Final

from chanctx.bot.stores.pane_threads.store import PaneThreads
from chanctx.manifest_store import guarded, namespace
from slack_bolt.context.assistant.thread_context import AssistantThreadContext

__all__ = ["RedisPaneThreads"]

_KEEP: Final = 30 * 86_400


class RedisPaneThreads(PaneThreads):
    def __init__(self, client: Any, team: str) -> None:
        self._client = client
        self._prefix = namespace(team) + "pane:"

    def _key(self, channel_id: str, thread_ts: str) -> str:
        return f"{self._prefix}{channel_id}:{thread_ts}"

    def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None:
        clean = {k: str(v) for k, v in context.items() if isinstance(v, str) and v}
        if "channel_id" not in clean:
            return
        key = self._key(channel_id, thread_ts)
        with guarded("remember the pane's channel"):
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(key, "context", json.dumps(clean, sort_keys=True))
            pipe.expire(key, _KEEP)
            pipe.execute()

    def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None:
        with guarded("read the pane's channel"):
            raw = self._client.hget(self._key(channel_id, thread_ts), "context")
        return AssistantThreadContext(json.loads(raw)) if raw else None

    def first_question(self, channel_id: str, thread_ts: str) -> bool:
        key = self._key(channel_id, thread_ts)
        with guarded("title a pane thread"):
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(key, "titled", "1")
            pipe.expire(key, _KEEP)
            first, _ = pipe.execute()
        return bool(first)
