"""Taking erased Slack text out of the files in the data dir: session logs, the turn journal,
playbooks and anything else a bot wrote there.

A message deleted in Slack (or erased by ``chanctx forget``, retention) leaves the channel store
by the store's own erase pass; copies of its text may also sit in what the bot wrote while
answering: a session log holds the context Claude was shown, the turn journal holds the mention
that asked. :class:`Redactor` replaces each erased text with :data:`MARKER` inside every JSON
string of a line (the line is written again only when it changed); :func:`redact_file` rewrites
a file atomically (a temporary file, fsync, rename: ``jsonl.rewrite_atomically``), so a kill -9
leaves the whole old file or the whole new one. Lines that are not JSON are redacted as bytes,
in each of the spellings JSON gives a string.

A text shorter than :data:`MIN_CHARS` characters is not searched for: "ok" or "+1" would take
the same letters out of every unrelated word in the data dir, and carries nothing to forget.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["MARKER", "MIN_CHARS", "RedactionCount", "Redactor", "redact_file", "redact_tree"]

MARKER: Final = "[deleted]"
MIN_CHARS: Final = 5


class Redactor:
    """Replaces erased texts (and each of their longer lines) with the marker."""

    def __init__(self, texts: Iterable[str], *, marker: str = MARKER) -> None:
        self.marker = marker
        needles: set[str] = set()
        for text in texts:
            for form in {text, html.unescape(text)}:
                needles.add(form.strip())
                # A context renders a message line by line (indented, quoted): each line of a
                # longer message is searched for too.
                needles.update(line.strip() for line in form.splitlines())
        # Longest first: a whole text goes before a line of it leaves the rest behind.
        self.needles = sorted(
            (n for n in needles if len(n) >= MIN_CHARS and n not in marker), key=len, reverse=True
        )
        self._bytes = _byte_forms(self.needles, marker)

    def __bool__(self) -> bool:
        return bool(self.needles)

    def text(self, value: str) -> str:
        """``value`` with every erased text replaced."""
        for needle in self.needles:
            if needle in value:
                value = value.replace(needle, self.marker)
        return value

    def value(self, value: Any) -> Any:
        """A JSON value (dicts, lists, strings) with every string redacted; a torn-line record's
        base64 bytes too."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            out = {key: self.value(item) for key, item in value.items()}
            raw = value.get("bytes_b64")
            if isinstance(raw, str):
                out["bytes_b64"] = self._base64(raw)
            return out
        return value

    def line(self, raw: bytes) -> bytes:
        """One line of a file (without its newline), redacted; the same object if untouched."""
        if not any(form in raw for form, _ in self._bytes) and b"bytes_b64" not in raw:
            return raw
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            return self._plain(raw)
        redacted = self.value(parsed)
        if redacted == parsed:
            # Not found inside any string (it spans a key, say): fall back to the bytes.
            return self._plain(raw)
        return json.dumps(redacted, ensure_ascii=False, separators=(",", ":")).encode()

    def _plain(self, raw: bytes) -> bytes:
        for form, marker in self._bytes:
            raw = raw.replace(form, marker)
        return raw

    def _base64(self, raw: str) -> str:
        try:
            data = base64.b64decode(raw, validate=True)
        except ValueError:
            return raw
        cleaned = self._plain(data)
        return raw if cleaned == data else base64.b64encode(cleaned).decode()


def _byte_forms(needles: Collection[str], marker: str) -> list[tuple[bytes, bytes]]:
    """Each needle as it may appear in a file: UTF-8, and inside a JSON string with and
    without ``ensure_ascii``."""
    forms: dict[bytes, bytes] = {}
    for needle in needles:
        forms[needle.encode()] = marker.encode()
        for ascii_only in (True, False):
            escaped = json.dumps(needle, ensure_ascii=ascii_only)[1:-1].encode()
            forms[escaped] = json.dumps(marker, ensure_ascii=ascii_only)[1:-1].encode()
    return sorted(forms.items(), key=lambda item: len(item[0]), reverse=True)


@dataclass
class RedactionCount:
    """What a redaction changed: files rewritten, lines changed in them."""

    files: int = 0
    lines: int = 0

    def add(self, other: RedactionCount) -> None:
        self.files += other.files
        self.lines += other.lines


def redact_file(path: Path, redactor: Redactor) -> RedactionCount:
    """Rewrite ``path`` with the erased texts replaced, atomically; untouched if none is in
    it. The caller holds whatever lock the file's writer takes."""
    count = RedactionCount()
    if not redactor:
        return count
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return count
    lines = data.split(b"\n")
    out: list[bytes] = []
    for raw in lines:
        cleaned = redactor.line(raw)
        if cleaned is not raw and cleaned != raw:
            count.lines += 1
        out.append(cleaned)
    if count.lines:
        _replace(path, b"\n".join(out))
        count.files = 1
    return count


def _replace(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".redacting")
    with temporary.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(temporary, path.stat().st_mode & 0o777)
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def redact_tree(
    root: Path, redactor: Redactor, *, skip: Callable[[Path], bool] = lambda path: False
) -> RedactionCount:
    """Redact every regular file under ``root`` that ``skip`` does not exclude (the channel
    store's own files, and files a running writer holds open, which their owner redacts)."""
    count = RedactionCount()
    if not redactor or not root.is_dir():
        return count
    for directory, folders, files in os.walk(root):
        folders.sort()
        for name in sorted(files):
            path = Path(directory) / name
            if path.is_symlink() or not path.is_file() or skip(path):
                continue
            count.add(redact_file(path, redactor))
    return count
