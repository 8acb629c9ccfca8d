"""One writer per data dir: an exclusive ``fcntl`` lock on a file beside the database.

The lock belongs to the open file description, so the kernel drops it when the process dies,
kill -9 included: a crashed bot never leaves a stale lock behind. The holder writes its pid into
the file, only so that the second process can name it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from chanctx.cache.channel_store._errors import StoreLocked

__all__ = ["DirLock"]


class DirLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise StoreLocked(path, f"pid {holder}" if holder else "pid unknown") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
