"""Where a Slack export's files are read from: its ZIP, or the folder it was unpacked into.

An export comes from outside and may be hostile, so both sources hold to the same rules:
- a member is named by a relative POSIX path; a name that is absolute, climbs with ``..``, uses
  a backslash or a drive letter is refused and never opened;
- in a folder, nothing outside it is read: symbolic links are refused, not followed;
- a member is read with a byte limit enforced while decompressing, so a ZIP whose headers
  understate a member's size (a zip bomb) is stopped at the limit, not after.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Protocol

__all__ = [
    "MAX_MEMBER_BYTES",
    "ExportSource",
    "FolderSource",
    "MemberRefused",
    "NotAnExport",
    "ZipSource",
    "open_source",
]

# A day file of a very busy channel is tens of MB; past this a member is refused, not read.
MAX_MEMBER_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


class NotAnExport(Exception):
    """The path is neither a ZIP nor a folder that can be read: nothing can be imported."""


class MemberRefused(Exception):
    """One member could not be read (unsafe name, too large, damaged); the rest still can."""


class ExportSource(Protocol):
    """The files of one export, by relative POSIX name."""

    def names(self) -> Iterator[str]:
        """Every regular file's name, unsafe ones included (``safe_name`` sorts them out)."""
        ...

    def read(self, name: str) -> bytes:
        """The member's bytes; ``MemberRefused`` when unsafe, missing, damaged or too large."""
        ...

    def total_bytes(self, chosen: Callable[[str], bool]) -> int:
        """The size of the ``chosen`` members as stored (a ZIP's: as its headers say)."""
        ...

    def close(self) -> None: ...


def unsafe_reason(name: str) -> str | None:
    """Why ``name`` may not be opened, or None when it is a plain relative path."""
    if name.startswith("/") or _DRIVE.match(name):
        return "an absolute path"
    if "\\" in name:
        return "a backslash in the name"
    if ".." in PurePosixPath(name).parts:
        return "a '..' in the path"
    if "\x00" in name:
        return "a NUL in the name"
    return None


class ZipSource:
    """Members of a ZIP, read without extracting anything to disk."""

    def __init__(self, path: Path, *, limit: int = MAX_MEMBER_BYTES) -> None:
        self.limit = limit
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as error:
            raise NotAnExport(f"{path}: not a readable ZIP ({error})") from error
        self._path = path

    def names(self) -> Iterator[str]:
        for info in self._zip.infolist():
            if not info.is_dir():
                yield info.filename

    def read(self, name: str) -> bytes:
        limit = self.limit
        reason = unsafe_reason(name)
        if reason is not None:
            raise MemberRefused(f"{name}: refused, {reason}")
        try:
            info = self._zip.getinfo(name)
        except KeyError:
            raise MemberRefused(f"{name}: not in the ZIP") from None
        if info.file_size > limit:
            raise MemberRefused(f"{name}: {info.file_size:,} bytes, over the {limit:,} limit")
        parts: list[bytes] = []
        size = 0
        try:
            with self._zip.open(info) as member:
                while chunk := member.read(_CHUNK):
                    size += len(chunk)
                    if size > limit:  # the header understated it: stop here
                        raise MemberRefused(f"{name}: expands past the {limit:,}-byte limit")
                    parts.append(chunk)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
            raise MemberRefused(f"{name}: damaged in the ZIP ({error})") from error
        return b"".join(parts)

    def total_bytes(self, chosen: Callable[[str], bool]) -> int:
        infos = self._zip.infolist()
        return sum(i.file_size for i in infos if not i.is_dir() and chosen(i.filename))

    def close(self) -> None:
        self._zip.close()


class FolderSource:
    """Files under an unpacked export's folder; symbolic links are refused, never followed."""

    def __init__(self, root: Path, *, limit: int = MAX_MEMBER_BYTES) -> None:
        self.limit = limit
        if not root.is_dir():
            raise NotAnExport(f"{root}: not a folder")
        self._root = root.resolve()

    def names(self) -> Iterator[str]:
        for folder, dirs, files in os.walk(self._root, followlinks=False):
            dirs.sort()
            for file in sorted(files):
                yield Path(folder, file).relative_to(self._root).as_posix()

    def read(self, name: str) -> bytes:
        limit = self.limit
        reason = unsafe_reason(name)
        if reason is not None:
            raise MemberRefused(f"{name}: refused, {reason}")
        path = self._root / name
        if path.is_symlink() or any(p.is_symlink() for p in path.parents if p != self._root):
            raise MemberRefused(f"{name}: refused, a symbolic link")
        try:
            with path.open("rb") as file:
                data = file.read(limit + 1)
        except OSError as error:
            raise MemberRefused(f"{name}: unreadable ({error.strerror})") from error
        if len(data) > limit:
            raise MemberRefused(f"{name}: over the {limit:,}-byte limit")
        return data

    def total_bytes(self, chosen: Callable[[str], bool]) -> int:
        return sum((self._root / n).lstat().st_size for n in self.names() if chosen(n))

    def close(self) -> None:
        pass


def open_source(path: Path, *, limit: int = MAX_MEMBER_BYTES) -> ExportSource:
    """The export at ``path``: a folder, or a file that must be a ZIP."""
    if path.is_dir():
        return FolderSource(path, limit=limit)
    if not path.exists():
        raise NotAnExport(f"{path}: no such file or folder")
    return ZipSource(path, limit=limit)
