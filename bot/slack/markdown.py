"""Claude's Markdown, posted as Slack renders it (``markdown_text``), split where a reader would.

Slack renders standard Markdown itself when a message is posted with ``markdown_text`` (at most
12,000 characters, and never together with ``text`` or ``blocks``), so nothing is converted here:
a hand conversion to mrkdwn got italics and entities wrong. What is left is splitting an answer
that is too long for one message: between paragraphs first, then between sentences, then lines,
then words. A code block is never split unless it alone is longer than a message; then it is cut
between lines and each part is closed and reopened with the same fence and language, so every
message renders on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["MARKDOWN_LIMIT", "split_markdown"]

MARKDOWN_LIMIT: Final = 12_000  # Slack's limit for markdown_text
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# A sentence ends at . ! ? (optionally closed by a quote or bracket) followed by white space.
_HEADING = re.compile(r"^ {0,3}#{1,6}\s[^\n]*$")  # a paragraph that is one ATX heading
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


@dataclass(frozen=True)
class _Block:
    text: str
    fence: str = ""  # the opening fence line of a code block ("" for prose)
    marker: str = ""  # its run of backticks or tildes, which also closes it


def _closes(line: str, marker: str) -> bool:
    """A closing fence: the same character, at least as long, and nothing after it."""
    match = _FENCE_LINE.match(line)
    return bool(
        match
        and match.group(1)[0] == marker[0]
        and len(match.group(1)) >= len(marker)
        and not match.group(2).strip()
    )


def _blocks(text: str) -> list[_Block]:
    """Paragraphs and whole fenced code blocks, in order."""
    blocks: list[_Block] = []
    prose: list[str] = []
    code: list[str] = []
    fence = marker = ""

    def flush_prose() -> None:
        paragraph = "\n".join(prose).strip("\n")
        if paragraph.strip():
            blocks.append(_Block(paragraph))
        prose.clear()

    for line in text.split("\n"):
        if fence:
            code.append(line)
            if _closes(line, marker):
                blocks.append(_Block("\n".join(code), fence, marker))
                code, fence, marker = [], "", ""
            continue
        match = _FENCE_LINE.match(line)
        if match:
            flush_prose()
            fence, marker, code = line, match.group(1), [line]
        elif line.strip():
            prose.append(line)
        else:
            flush_prose()
    flush_prose()
    if fence:  # an unclosed fence: Slack would render the rest as code, and so do we
        blocks.append(_Block("\n".join(code), fence, marker))
    return blocks


def _cut_prose(text: str, limit: int) -> list[str]:
    """A paragraph longer than ``limit``: at sentence ends, then line breaks, then spaces."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        at = _last_break(rest, limit)
        pieces.append(rest[:at].rstrip())
        rest = rest[at:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def _last_break(text: str, limit: int) -> int:
    window = text[: limit + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= limit]
    if ends and ends[-1] > limit // 3:
        return ends[-1]
    for separator in ("\n", " "):
        at = window.rfind(separator, 0, limit)
        if at > limit // 3:
            return at + 1
    return limit  # one unbroken word longer than a third of a message: cut it


def _cut_code(block: _Block, limit: int) -> list[str]:
    """A code block longer than ``limit``: cut between lines, each part fenced on its own."""
    closing = block.marker
    lines = block.text.split("\n")[1:]
    if lines and _closes(lines[-1], block.marker):
        lines = lines[:-1]
    room = limit - len(block.fence) - len(closing) - 2
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        for piece in [line[i : i + room] for i in range(0, len(line), room)] or [""]:
            if current and size + len(piece) + 1 > room:
                parts.append("\n".join([block.fence, *current, closing]))
                current, size = [], 0
            current.append(piece)
            size += len(piece) + 1
    parts.append("\n".join([block.fence, *current, closing]))
    return parts


def _keep_headings_with_their_text(pieces: list[str], limit: int) -> list[str]:
    """A heading is never the last thing in a message: it goes with the block after it."""
    kept: list[str] = []
    for piece in pieces:
        last = kept[-1] if kept else ""
        if _HEADING.match(last) and len(last) + 2 + len(piece) <= limit:
            kept[-1] = last + "\n\n" + piece
        else:
            kept.append(piece)
    return kept


def split_markdown(text: str, limit: int = MARKDOWN_LIMIT) -> list[str]:
    """Messages of at most ``limit`` characters that together say all of ``text``."""
    if limit < 40:
        raise ValueError(f"limit must be at least 40 characters, got {limit}")
    pieces: list[str] = []
    for block in _blocks(text):
        if len(block.text) <= limit:
            pieces.append(block.text)
        elif block.fence:
            pieces.extend(_cut_code(block, limit))
        else:
            pieces.extend(_cut_prose(block.text, limit))
    messages: list[str] = []
    for piece in _keep_headings_with_their_text(pieces, limit):
        if messages and len(messages[-1]) + 2 + len(piece) <= limit:
            messages[-1] += "\n\n" + piece
        else:
            messages.append(piece)
    return messages
