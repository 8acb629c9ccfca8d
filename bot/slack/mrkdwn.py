"""Claude writes Markdown; Slack reads mrkdwn. Convert, and split what is too long for one message.

Slack shows at most about 4,000 characters of a message comfortably (and truncates text past
40,000), so long answers are split at paragraph, then line, then word boundaries, and a code
block cut in two is closed and reopened so each part renders on its own.
"""

from __future__ import annotations

import re

__all__ = ["SLACK_MESSAGE_LIMIT", "split_for_slack", "to_mrkdwn"]

SLACK_MESSAGE_LIMIT = 3_500
_FENCE = "```"
_CODE = re.compile(r"(```.*?```|`[^`\n]+`)", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _escape(text: str) -> str:
    # Slack treats & < > as control characters; everything the model wrote is plain text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _prose(text: str) -> str:
    text = _escape(text)
    text = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    return _HEADING.sub(lambda m: f"*{m.group(1)}*", text)


def to_mrkdwn(markdown: str) -> str:
    """``**b**`` -> ``*b*``, ``[t](u)`` -> ``<u|t>``, headings -> bold, ``~~s~~`` -> ``~s~``.

    Code spans and blocks are only escaped, never reformatted.
    """
    parts = _CODE.split(markdown)
    return "".join(_escape(part) if index % 2 else _prose(part) for index, part in enumerate(parts))


def _cut(text: str, limit: int) -> int:
    """Where to end the next chunk: the last paragraph, line or space break before ``limit``."""
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, 0, limit)
        if at > limit // 3:
            return at + len(separator)
    return limit


def split_for_slack(text: str, limit: int = SLACK_MESSAGE_LIMIT) -> list[str]:
    """Chunks of at most ``limit`` characters; a code block open at a cut is closed and reopened."""
    if limit < 20:
        raise ValueError(f"limit must be at least 20 characters, got {limit}")
    chunks: list[str] = []
    rest = text.strip()
    reopen = ""
    while rest:
        budget = limit - len(reopen) - len(_FENCE) - 1  # room to close a fence we cut
        if len(reopen) + len(rest) <= limit:
            chunks.append(reopen + rest)
            break
        at = _cut(rest, budget)
        piece, rest = reopen + rest[:at].rstrip(), rest[at:].lstrip("\n")
        if piece.count(_FENCE) % 2:  # we are inside a code block
            chunks.append(piece + "\n" + _FENCE)
            reopen = _FENCE + "\n"
        else:
            chunks.append(piece)
            reopen = ""
    return [chunk for chunk in chunks if chunk.strip()]
