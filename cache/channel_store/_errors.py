"""The errors the channel store raises on purpose; each message is one line naming the file.

* context.ChanctxError
  + StoreError            -- the channel store cannot be used as it is
    + StoreLocked         -- another process holds the data dir (the second one stops)
    + StoreCorrupt        -- the file is not a readable chanctx store (corrupt, truncated, foreign)
    + StoreTooNew         -- written by a newer chanctx (a schema version this one does not know)
* OSError
  + StoreFull             -- the disk (or the file's page limit) is full: nothing was stored

``StoreFull`` is an OSError on purpose, like ``manifest_store.StoreUnavailable``: whatever refuses
an event the disk could not store (HTTP 503, no Socket Mode ack, so Slack delivers it again)
refuses this one the same way.
"""

from __future__ import annotations

from pathlib import Path

from chanctx.context import ChanctxError

__all__ = ["StoreCorrupt", "StoreError", "StoreFull", "StoreLocked", "StoreTooNew"]


def check_command(path: Path) -> str:
    """The command that checks a store file (and says how to rebuild its index)."""
    return f"python -m chanctx.cache.channel_store check {path.parent}"


class StoreError(ChanctxError):
    """Base class: the channel store at ``path`` cannot be used."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class StoreLocked(StoreError):
    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(
            f"{path}: another chanctx process ({holder}) is using this data dir; stop it or "
            "start with another --data-dir.",
            path=path,
        )


class StoreCorrupt(StoreError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(
            f"{path}: not a readable chanctx channel store ({reason}); check it with "
            f"`{check_command(path)}`, or move the file aside to start with an empty store.",
            path=path,
        )
        self.reason = reason


class StoreTooNew(StoreError):
    def __init__(self, path: Path, found: int, known: int) -> None:
        super().__init__(
            f"{path}: channel store schema version {found} is newer than this chanctx reads "
            f"({known}); upgrade chanctx, or move the file aside to start with an empty store.",
            path=path,
        )
        self.found = found


class StoreFull(OSError):
    """The store could not grow (disk full, or its page limit): the batch was not stored."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"{path}: the channel store is full ({detail}); the events were not stored."
        )
        self.path = path
