"""The query API's blocks that are not channel messages: ``file`` (the text of text files shared
in the channel), ``recipe`` (the context.yaml's file and computed_file sources) and ``playbook``
(the channel playbook's bullets that are sent to Claude: one block each).

Files are downloaded under the media safety rules (``bot/slack/media.py``: the token only to
Slack's file hosts, public addresses only, a total deadline), whether or not inline media
attaching is on, and their text is kept in a bounded cache, so a file costs one download however
many queries read it. A file that failed is not tried again for a while: a query must not turn
into a download storm against a file that answers 404. Recipe sources are assembled as a
session start would (computed sources honour their own cache policy), then kept a minute per
channel, so a burst of queries does not run the operator's commands once each.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

from cachetools import LRUCache, TTLCache
from chanctx.bot.claude.session_media import MediaSource
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.recipe_runner import RecipeRunner
from chanctx.bot.slack.media_blocks import TEXT_TYPES, FetchedMedia
from chanctx.context import ChanctxError, FileRef, Message, iso_from_ts
from chanctx.manifest_store import PlaybookStore
from chanctx.tools import ExtraBlock

__all__ = ["MAX_FILE_CHARS", "QuerySources"]

logger = logging.getLogger("chanctx.query")

MAX_FILE_CHARS: Final = 100_000  # a file's text beyond this is cut (and says so)
_MAX_FILES: Final = 50  # the newest text files of a channel a query considers
_TEXT_CACHE_CHARS: Final = 32_000_000  # every cached file text together
_FAILED_FOR: Final = 300.0  # seconds a failed download is not tried again
_RECIPE_FOR: Final = 60.0  # seconds a channel's assembled recipe is reused


def _is_text(ref: FileRef) -> bool:
    return ref.media_type.split(";", 1)[0].strip().lower() in TEXT_TYPES


class QuerySources:
    """File and recipe blocks for a channel. Thread-safe (queries run on a thread pool)."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        recipe: RecipeRunner | None = None,
        media: MediaSource | None = None,
        playbooks: PlaybookStore | None = None,
    ) -> None:
        self._engine = engine
        self._recipe = recipe
        self._media = media
        self._playbooks = playbooks
        self._texts: LRUCache[str, str] = LRUCache(maxsize=_TEXT_CACHE_CHARS, getsizeof=len)
        self._failed: TTLCache[str, bool] = TTLCache(maxsize=10_000, ttl=_FAILED_FOR)
        self._recipes: TTLCache[str, list[ExtraBlock]] = TTLCache(maxsize=1_000, ttl=_RECIPE_FOR)
        self._lock = threading.Lock()

    @property
    def playbook_store(self) -> PlaybookStore | None:
        return self._playbooks

    def blocks(
        self, channel: str, wanted: set[str], should_stop: Callable[[], bool]
    ) -> list[ExtraBlock]:
        """The recipe's blocks, the playbook's, then the channel's file blocks, of the types
        in ``wanted``."""
        found: list[ExtraBlock] = []
        if "recipe" in wanted:
            found += self.recipe_blocks(channel)
        if "playbook" in wanted:
            found += self.playbook_blocks(channel)
        if "file" in wanted:
            found += self.file_blocks(channel, should_stop)
        return found

    # -- recipe ---------------------------------------------------------------------------

    def recipe_blocks(self, channel: str) -> list[ExtraBlock]:
        if self._recipe is None or not self._recipe.recipe.text_sources():
            return []
        with self._lock:
            cached = self._recipes.get(channel)
        if cached is not None:
            return cached
        try:
            fitted = self._recipe.assemble(run_id=f"query-{channel}", channel=channel, thread_ts="")
        except ChanctxError as error:  # a source with on_missing: error failed
            logger.warning("recipe blocks left out of a query in %s: %s", channel, error)
            return []
        sources = self._recipe.recipe.sources
        blocks = [
            ExtraBlock(
                block_id=f"recipe:{b.name}",
                block_type="recipe",
                source=f"context.yaml {b.name}",
                text=b.text,
                pinned=bool(getattr(sources[b.source_index], "pinned", False)),
            )
            for b in fitted.blocks
            if b.text.strip()
        ]
        with self._lock:
            self._recipes[channel] = blocks
        return blocks

    # -- playbook -------------------------------------------------------------------------

    def playbook_blocks(self, channel: str) -> list[ExtraBlock]:
        """The bullets a session would be sent (superseded and quarantined ones never)."""
        if self._playbooks is None:
            return []
        label = "#" + self._engine.names.channels.get(channel, channel)
        return [
            ExtraBlock(
                block_id=f"playbook:{b.id}",
                block_type="playbook",
                source=f"{label} playbook [{b.id}] helpful={b.helpful} harmful={b.harmful}"
                + (" (unverified)" if b.state == "unverified" else ""),
                text=b.content,
            )
            for b in self._playbooks.bullets(channel)
            if b.active
        ]

    # -- files ----------------------------------------------------------------------------

    def file_blocks(self, channel: str, should_stop: Callable[[], bool]) -> list[ExtraBlock]:
        """The channel's newest text files that could be read, newest first."""
        if self._media is None:
            return []
        label = "#" + self._engine.names.channels.get(channel, channel)
        blocks: list[ExtraBlock] = []
        for message, ref in self._text_files(channel):
            if should_stop():
                break
            text = self._text(ref)
            if text is None:
                continue
            who = (
                self._engine.names.users.get(message.user_id)
                or message.author_name
                or message.user_id
                or "someone"
            )
            name = ref.filename or ref.title or ref.artifact_id
            blocks.append(
                ExtraBlock(
                    block_id=f"file:{channel}:{ref.artifact_id}",
                    block_type="file",
                    source=f"{label} file {name} (shared by {who}, {iso_from_ts(message.ts)})",
                    text=text,
                )
            )
        return blocks

    def _text_files(self, channel: str) -> list[tuple[Message, FileRef]]:
        seen: set[str] = set()
        out: list[tuple[Message, FileRef]] = []
        for message in reversed(self._engine.channel_messages(channel)):
            if message.deleted:
                continue
            for ref in message.files:
                if _is_text(ref) and ref.artifact_id not in seen:
                    seen.add(ref.artifact_id)
                    out.append((message, ref))
            if len(out) >= _MAX_FILES:
                break
        return out[:_MAX_FILES]

    def _text(self, ref: FileRef) -> str | None:
        key = ref.artifact_id
        with self._lock:
            if key in self._texts:
                return self._texts[key]
            if key in self._failed:
                return None
        assert self._media is not None
        fetched = self._media.fetch(ref)
        with self._lock:
            if not isinstance(fetched, FetchedMedia) or fetched.kind != "text":
                self._failed[key] = True
                return None
            try:
                text = fetched.text
            except UnicodeDecodeError:
                self._failed[key] = True
                return None
            if len(text) > MAX_FILE_CHARS:
                text = text[:MAX_FILE_CHARS] + f"\n[file cut at {MAX_FILE_CHARS:,} characters]"
            self._texts[key] = text
        return text
