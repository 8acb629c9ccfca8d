"""The attachment manifest: every file whose bytes a session
has already sent to Claude, so a later turn sends a short text reference instead of paying for
the same image again (users saw every thread image re-sent on every turn).

Lifecycle, as the caller (``bot/``) runs it:

1. a new session starts with an empty manifest;
2. before attaching a file, ``find(artifact_id, content_hash)``: a hit means "already sent" (the
   same file, or the same bytes re-uploaded under a new id), so attach ``record.reference()``
   instead of the bytes; a miss means attach the bytes and ``add`` a record;
3. after a turn that added records, append ``manifest.to_entry(at=...)`` to the session log
   (the latest ``ATTACHMENT_MANIFEST`` entry wins on rebuild);
4. on resume, ``AttachmentManifest.from_state(rebuild(log.entries()))``;
5. right after a compaction (``SessionState.post_compaction``), re-attach
   ``for_thread(current_thread_ts)`` behind ``reattach_preamble(n)``, without touching the
   manifest: those are re-inclusions, not new attachments. Media of other threads is not
   re-attached; Claude can fetch it again with the channel_messages tool.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from chanctx.manifest_store._entries import ATTACHMENT_MANIFEST, CustomEntry
from chanctx.manifest_store._rebuild import SessionState
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "MANIFEST_VERSION",
    "AttachmentManifest",
    "AttachmentRecord",
    "content_hash",
    "reattach_preamble",
]

logger = logging.getLogger("chanctx.manifest_store")

MANIFEST_VERSION: Final = 1


def content_hash(data: bytes) -> str:
    """SHA-256 of the bytes, lowercase hex: the ``content_hash`` of a record."""
    return hashlib.sha256(data).hexdigest()


def reattach_preamble(count: int) -> str:
    """The text block that precedes media re-attached after a compaction (the model reads it)."""
    return f"[Post-compaction context recovery: re-attaching {count} media items from this thread]"


class AttachmentRecord(BaseModel):
    """One file whose bytes were sent to Claude in this session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    artifact_id: str = Field(min_length=1)
    display_name: str  # how the file was named to Claude, e.g. "graph.png"
    media_type: str
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    source_message_id: str  # ts of the message that carried the file
    # The thread's root ts; a thread root's own files carry it too (thread_id = root ts in
    # Slack), so for_thread() finds them. None: a top-level message outside any thread.
    source_thread_id: str | None = None
    included_at_turn: int = Field(ge=0)

    def reference(self) -> str:
        """The text sent instead of the bytes when the same content comes up again."""
        return (
            f"[file {self.display_name} ({self.media_type}) was already attached at turn "
            f"{self.included_at_turn}; it is not repeated here]"
        )


class AttachmentManifest:
    """Records keyed by artifact_id, plus a content-hash index for re-upload detection.

    One per session, used by the one thread that runs that session's turns: not locked.
    """

    def __init__(self, records: Iterable[AttachmentRecord] = ()) -> None:
        self._entries: dict[str, AttachmentRecord] = {}
        self._by_hash: dict[str, str] = {}  # content_hash -> artifact_id of its first record
        for record in records:
            self.add(record)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, artifact_id: object) -> bool:
        return artifact_id in self._entries

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AttachmentManifest):
            return NotImplemented
        return self._entries == other._entries

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    @property
    def entries(self) -> dict[str, AttachmentRecord]:
        """A copy of the records, keyed by artifact_id, in the order they were added."""
        return dict(self._entries)

    def records(self) -> list[AttachmentRecord]:
        return list(self._entries.values())

    def find(self, artifact_id: str, content_hash: str | None = None) -> AttachmentRecord | None:
        """The record for this file: by exact id first, else one with the same bytes.

        A hash match is a re-upload of content already sent under another id. ``content_hash``
        may be None when the bytes are not at hand (only the id can match then).
        """
        record = self._entries.get(artifact_id)
        if record is not None or content_hash is None:
            return record
        first = self._by_hash.get(content_hash)
        return None if first is None else self._entries.get(first)

    def add(self, record: AttachmentRecord) -> None:
        """Add ``record``; a record already under its artifact_id is replaced."""
        old = self._entries.get(record.artifact_id)
        self._entries[record.artifact_id] = record
        if old is not None and old.content_hash != record.content_hash:
            self._reindex(old.content_hash)
        self._by_hash.setdefault(record.content_hash, record.artifact_id)

    def for_thread(self, thread_id: str) -> list[AttachmentRecord]:
        """This thread's records (root and replies), oldest inclusion first: what to re-attach
        after a compaction. Records of other threads and of top-level messages are left out."""
        mine = [r for r in self._entries.values() if r.source_thread_id == thread_id]
        # sorted() is stable, so records of one turn keep the order they were added in.
        return sorted(mine, key=lambda r: r.included_at_turn)

    # --- persistence ---------------------------------------------------------------------

    def to_data(self) -> dict[str, Any]:
        """JSON-ready dict for ``CustomEntry(custom_type=ATTACHMENT_MANIFEST, data=...)``."""
        return {
            "version": MANIFEST_VERSION,
            "entries": {
                key: record.model_dump(mode="json") for key, record in self._entries.items()
            },
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> AttachmentManifest:
        """Read back ``to_data()``'s output. Lenient: a malformed record is skipped with a warning.

        Losing a record only costs re-sending its bytes once, while refusing the whole manifest
        would fail the session's resume; so nothing here raises on bad content.
        """
        version = data.get("version", MANIFEST_VERSION)
        if version != MANIFEST_VERSION:
            logger.warning(
                "attachment manifest version %r is not %d: ignored", version, MANIFEST_VERSION
            )
            return cls()
        raw = data.get("entries")
        if not isinstance(raw, Mapping):
            if raw is not None:
                logger.warning("attachment manifest entries are not a mapping: ignored")
            return cls()
        manifest = cls()
        for key, value in raw.items():
            try:
                record = AttachmentRecord.model_validate(value)
            except ValidationError as error:
                logger.warning("attachment manifest record %r skipped: %s", key, error)
                continue
            manifest.add(record)
        return manifest

    def to_entry(self, *, at: float) -> CustomEntry:
        """The session-log entry that persists this manifest (append after the turn)."""
        return CustomEntry(at=at, custom_type=ATTACHMENT_MANIFEST, data=self.to_data())

    @classmethod
    def from_state(cls, state: SessionState) -> AttachmentManifest:
        """The manifest of a rebuilt session: its latest persisted one, or an empty one."""
        data = state.custom.get(ATTACHMENT_MANIFEST)
        return cls() if data is None else cls.from_data(data)

    def _reindex(self, digest: str) -> None:
        # The record that defined this hash was replaced: point the hash at another record
        # with the same bytes, if one is left.
        self._by_hash.pop(digest, None)
        for record in self._entries.values():
            if record.content_hash == digest:
                self._by_hash[digest] = record.artifact_id
                break
