"""MediaContentCache: downloaded file bytes kept in memory, bounded by their total size.

Slack files are immutable once uploaded, so an entry never goes stale: the only reason to drop
one is room. Eviction is least-recently-used; the bound is on *bytes*, not entries, because one
screenshot can weigh as much as a thousand text snippets.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["DEFAULT_MEDIA_CACHE_BYTES", "CachedMedia", "MediaContentCache"]

DEFAULT_MEDIA_CACHE_BYTES = 50 * 1024 * 1024  # 50 MB: a few hundred screenshots


@dataclass(frozen=True, slots=True)
class CachedMedia:
    """One downloaded file. ``media_type`` is the type the bytes were checked to be."""

    artifact_id: str
    media_type: str
    content: bytes
    byte_length: int
    fetched_at: float  # seconds since the epoch

    def __post_init__(self) -> None:
        # The cache accounts by byte_length; a value that disagrees with the bytes would let
        # the real total drift past the bound.
        if self.byte_length != len(self.content):
            raise ValueError(
                f"byte_length {self.byte_length} != {len(self.content)} bytes of content"
            )


class MediaContentCache:
    """LRU keyed by artifact_id; ``total_bytes`` never exceeds ``max_bytes``. Thread-safe."""

    def __init__(self, *, max_bytes: int = DEFAULT_MEDIA_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self._max_bytes = max_bytes
        self._entries: OrderedDict[str, CachedMedia] = OrderedDict()  # oldest use first
        self._total = 0
        self._lock = threading.Lock()

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def total_bytes(self) -> int:
        with self._lock:
            return self._total

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, artifact_id: object) -> bool:
        """Membership without touching the LRU order."""
        with self._lock:
            return artifact_id in self._entries

    def get(self, artifact_id: str) -> CachedMedia | None:
        with self._lock:
            item = self._entries.get(artifact_id)
            if item is not None:
                self._entries.move_to_end(artifact_id)
            return item

    def put(self, item: CachedMedia) -> bool:
        """Store ``item`` (replacing one with the same id); False if it alone exceeds the bound.

        An oversized item is refused rather than evicting everything else for nothing; an entry
        already cached under its id is left as it was.
        """
        if item.byte_length > self._max_bytes:
            return False
        with self._lock:
            old = self._entries.pop(item.artifact_id, None)
            if old is not None:
                self._total -= old.byte_length
            while self._entries and self._total + item.byte_length > self._max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._total -= evicted.byte_length
            self._entries[item.artifact_id] = item
            self._total += item.byte_length
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._total = 0
