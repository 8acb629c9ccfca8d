"""Media in a Claude session: opt-in attachment, dedup, post-compaction recovery.

Before bytes are attached, the session's attachment manifest is checked by artifact id and by
content hash (a re-upload under a new id): a match sends a one-line reference instead. The
manifest only grows when bytes are actually sent; re-attachment after a compaction re-sends the
current thread's media without touching it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from chanctx.bot.slack.media_blocks import (
    FetchedMedia,
    MediaFailure,
    placeholder,
    to_content_blocks,
)
from chanctx.context import FileRef, Message
from chanctx.manifest_store import AttachmentManifest, AttachmentRecord, reattach_preamble

__all__ = ["MAX_TEXT_CHARS", "MediaAttacher", "MediaSource", "vision_tokens"]


class MediaSource(Protocol):
    def fetch(self, ref: FileRef) -> FetchedMedia | MediaFailure: ...


def vision_tokens(fetched: FetchedMedia) -> int:
    """Anthropic's estimate for an image: width x height / 750 (at most ~1,600 after resizing)."""
    if fetched.kind != "image" or not fetched.width or not fetched.height:
        return 0
    return min((fetched.width * fetched.height) // 750, 1_600)


# A text file could be 20 MB; about 12,000 tokens of it is plenty to answer from.
MAX_TEXT_CHARS = 40_000


def _bounded(block: dict[str, Any]) -> dict[str, Any]:
    text = block.get("text")
    if block.get("type") != "text" or not isinstance(text, str) or len(text) <= MAX_TEXT_CHARS:
        return block
    kept = text[:MAX_TEXT_CHARS]
    return {
        "type": "text",
        "text": f"{kept}\n[... the file goes on for {len(text) - len(kept):,} more characters]",
    }


@dataclass(frozen=True)
class Located:
    """A file and where it was shared."""

    ref: FileRef
    message_id: str
    thread_id: str | None


def thread_media(root: Message | None, replies: Iterable[Message]) -> list[Located]:
    """Every file of a thread, root first; ``thread_id`` is the root's ts for all of them."""
    messages = ([root] if root else []) + list(replies)
    thread_id = root.ts if root else None
    return [
        Located(ref, m.ts, thread_id or m.root_ts)
        for m in messages
        if not m.deleted
        for ref in m.files
    ]


@dataclass
class Attached:
    blocks: list[dict[str, Any]]
    bytes_sent: int = 0
    vision_tokens: int = 0
    manifest_changed: bool = False


class MediaAttacher:
    def __init__(self, source: MediaSource) -> None:
        self.source = source

    def attach(
        self, files: Iterable[Located], manifest: AttachmentManifest, *, turn: int
    ) -> Attached:
        """Content blocks for ``files``: bytes once per conversation, references after that."""
        out = Attached(blocks=[])
        for located in files:
            fetched = self.source.fetch(located.ref)
            if isinstance(fetched, MediaFailure):
                out.blocks.append(placeholder(located.ref, fetched))
                continue
            seen = manifest.find(located.ref.artifact_id, fetched.content_hash)
            if seen is not None:
                out.blocks.append({"type": "text", "text": seen.reference()})
                continue
            out.blocks.append(self._labelled(fetched))
            out.blocks.extend(_bounded(block) for block in to_content_blocks(fetched))
            out.bytes_sent += fetched.sent_length
            out.vision_tokens += vision_tokens(fetched)
            manifest.add(
                AttachmentRecord(
                    artifact_id=located.ref.artifact_id,
                    display_name=fetched.display_name,
                    media_type=fetched.media_type,
                    content_hash=fetched.content_hash,
                    source_message_id=located.message_id,
                    source_thread_id=located.thread_id,
                    included_at_turn=turn,
                )
            )
            out.manifest_changed = True
        return out

    def reattach(
        self, manifest: AttachmentManifest, thread_id: str, files: Iterable[Located]
    ) -> Attached:
        """After a compaction: the current thread's attached media again, manifest unchanged."""
        wanted = {record.artifact_id for record in manifest.for_thread(thread_id)}
        out = Attached(blocks=[])
        for located in files:
            if located.ref.artifact_id not in wanted:
                continue
            fetched = self.source.fetch(located.ref)
            if isinstance(fetched, MediaFailure):
                out.blocks.append(placeholder(located.ref, fetched))
                continue
            out.blocks.append(self._labelled(fetched))
            out.blocks.extend(_bounded(block) for block in to_content_blocks(fetched))
            out.bytes_sent += fetched.sent_length
            out.vision_tokens += vision_tokens(fetched)
        if out.blocks:
            out.blocks.insert(0, {"type": "text", "text": reattach_preamble(len(wanted))})
        return out

    @staticmethod
    def _labelled(fetched: FetchedMedia) -> dict[str, Any]:
        # Which file the next block is, so Claude can cite it.
        meta = {
            "artifact_id": fetched.ref.artifact_id,
            "filename": fetched.display_name,
            "media_type": fetched.media_type,
            "byte_length": fetched.byte_length,
        }
        return {"type": "text", "text": "Attached file: " + json.dumps(meta, sort_keys=True)}
