"""Which channel each assistant-pane thread is looking at, kept across restarts.

Slack says it twice: ``assistant_thread_started`` (the channel the user was viewing when they
opened the pane) and ``assistant_thread_context_changed`` (they moved to another). A question in
the pane is then plain ``message.im`` in that thread, carrying no channel, so the bot must
remember. This is Bolt's ``AssistantThreadContextStore`` over an append-only JSONL file in the data
dir (fsynced, last line wins, rewritten when mostly stale), not Bolt's default, which stores the
context in message metadata and costs a ``conversations.replies`` call per question.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from chanctx.bot.stores.pane_threads.store import PaneThreads
from chanctx.manifest_store.jsonl import line_of, rewrite_atomically
from slack_bolt.context.assistant.thread_context import AssistantThreadContext

__all__ = ["LocalPaneThreads"]

logger = logging.getLogger("chanctx.assistant")
_MAX_THREADS = 20_000  # the oldest pane threads are forgotten first


class LocalPaneThreads(PaneThreads):
    def __init__(self, path: Path | None = None, *, max_threads: int = _MAX_THREADS) -> None:
        self._path = path
        self._max = max_threads
        self._lock = threading.Lock()
        self._contexts: OrderedDict[tuple[str, str], dict[str, str]] = OrderedDict()
        self._titled: set[tuple[str, str]] = set()
        self._lines = 0
        if path is not None and path.exists():
            self._load(path)
            with path.open("rb+") as raw:  # a torn last line must not swallow the next entry
                raw.seek(0, os.SEEK_END)
                if raw.tell():
                    raw.seek(-1, os.SEEK_END)
                    if raw.read(1) != b"\n":
                        raw.write(b"\n")

    # -- Bolt's store interface -----------------------------------------------------------

    def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None:
        clean = {k: str(v) for k, v in context.items() if isinstance(v, str) and v}
        if "channel_id" not in clean:
            return  # a context without a channel says nothing we can use
        with self._lock:
            self._remember((channel_id, thread_ts), clean)
            self._append({"channel_id": channel_id, "thread_ts": thread_ts, "context": clean})

    def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None:
        with self._lock:
            context = self._contexts.get((channel_id, thread_ts))
        return AssistantThreadContext(context) if context else None

    # -- what the bot asks -----------------------------------------------------------------

    def first_question(self, channel_id: str, thread_ts: str) -> bool:
        """True once per thread: its first question names the thread."""
        key = (channel_id, thread_ts)
        with self._lock:
            if key in self._titled:
                return False
            self._titled.add(key)
            self._append({"channel_id": channel_id, "thread_ts": thread_ts, "titled": True})
            return True

    # -- persistence -----------------------------------------------------------------------

    def _remember(self, key: tuple[str, str], context: dict[str, str]) -> None:
        self._contexts[key] = context
        self._contexts.move_to_end(key)
        while len(self._contexts) > self._max:
            old, _ = self._contexts.popitem(last=False)
            self._titled.discard(old)

    def _append(self, entry: dict[str, object]) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._path.open("a", encoding="utf-8") as handle:
            handle.write(line_of(entry))
            handle.flush()
            os.fsync(handle.fileno())
        self._lines += 1
        if self._lines > 4 * max(len(self._contexts), 256):
            self._rewrite()

    def _rewrite(self) -> None:
        """Keep only what is live: write a new file, then rename it over the old one."""
        assert self._path is not None
        self._lines = rewrite_atomically(self._path, self._live_rows())

    def _live_rows(self) -> Iterator[dict[str, object]]:
        for (channel_id, thread_ts), context in self._contexts.items():
            yield {"channel_id": channel_id, "thread_ts": thread_ts, "context": context}
            if (channel_id, thread_ts) in self._titled:
                yield {"channel_id": channel_id, "thread_ts": thread_ts, "titled": True}

    def _load(self, path: Path) -> None:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                entry = json.loads(line)
                key = (str(entry["channel_id"]), str(entry["thread_ts"]))
                if entry.get("titled"):
                    self._titled.add(key)
                else:
                    self._remember(key, {k: str(v) for k, v in dict(entry["context"]).items()})
            except (ValueError, KeyError, TypeError):
                # A torn last line after a crash, or a damaged one: skip it, keep the rest.
                logger.warning("%s:%d: skipped an unreadable line", path, number)
            self._lines += 1
