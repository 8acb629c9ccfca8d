"""Messages API shapes shared by rebuild and compaction: blocks, exchanges, the digest block.

An *exchange* is one turn of the conversation: a user message that is not a tool_result,
and everything after it up to the next such message (assistant tool_use, user tool_result,
..., the final answer). A tool_use and its tool_result are always in the same exchange.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = [
    "DIGEST_ACK",
    "Block",
    "MessageParam",
    "blocks_of",
    "digest_span",
    "is_context_block",
    "leading_digest",
    "split_exchanges",
    "starts_exchange",
    "text_block",
    "with_digest",
]

Block = dict[str, Any]
MessageParam = dict[str, Any]

# Every digest, trimmed or summarized, opens with this marker. The span lets a later compaction
# (and trim's turn numbering) know which turns the digest already covers.
_DIGEST_HEAD: Final = re.compile(
    r"\[Earlier in this thread \(turns? ([0-9]+)(?:-([0-9]+))?, (compacted|summarized)\): "
)
# What the assistant "says" after a digest that has no kept turn to lead (the Messages API wants
# user/assistant alternation, and the caller's next message is a user message).
DIGEST_ACK: Final = "[Noted the earlier part of this thread.]"
# A context package is wire JSON (ChannelSnapshot/ThreadContext), which always opens with its
# schema_version; those blocks are data the caller re-attaches fresh, never worth a digest.
_PACKAGE_MARK: Final = '{"schema_version":'


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def blocks_of(content: object) -> list[Block]:
    """A message's content as a block list (the API also takes a plain string)."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _has_tool_result(message: MessageParam) -> bool:
    return any(block.get("type") == "tool_result" for block in blocks_of(message.get("content")))


def starts_exchange(message: MessageParam) -> bool:
    return message.get("role") == "user" and not _has_tool_result(message)


def digest_span(message: MessageParam) -> tuple[int, int, str] | None:
    """(first turn, last turn, kind) of the digest leading ``message``, if it has one."""
    digest = leading_digest(message)
    if digest is None:
        return None
    match = _DIGEST_HEAD.match(digest)
    assert match is not None  # leading_digest only returns marked text
    first = int(match.group(1))
    return first, int(match.group(2) or first), match.group(3)


def leading_digest(message: MessageParam) -> str | None:
    if message.get("role") != "user":
        return None
    blocks = blocks_of(message.get("content"))
    if not blocks or blocks[0].get("type") != "text":
        return None
    text = blocks[0].get("text")
    return text if isinstance(text, str) and _DIGEST_HEAD.match(text) else None


def digest_head(first: int, through: int, kind: str) -> str:
    span = f"turn {first}" if first == through else f"turns {first}-{through}"
    return f"[Earlier in this thread ({span}, {kind}): "


def digest_body(digest: str) -> str:
    """The text after the marker, without the closing bracket."""
    match = _DIGEST_HEAD.match(digest)
    body = digest[match.end() :] if match else digest
    return body[:-1] if body.endswith("]") else body


def is_context_block(block: Block) -> bool:
    text = block.get("text")
    return block.get("type") == "text" and isinstance(text, str) and _PACKAGE_MARK in text


def _is_digest_only(message: MessageParam) -> bool:
    return leading_digest(message) is not None and len(blocks_of(message.get("content"))) == 1


def split_exchanges(messages: list[MessageParam]) -> tuple[int, list[tuple[int, int]]]:
    """(end of a digest-only lead-in, [(start, end) of each exchange]) as list indices.

    The lead-in is the digest+ack pair ``with_digest`` makes when no turn was kept: it is not
    a turn of its own, so it is numbered with none.
    """
    if not messages:
        return 0, []
    if messages[0].get("role") != "user":
        raise ValueError(
            f"messages must start with a user message, not {messages[0].get('role')!r}"
        )
    starts = [i for i, message in enumerate(messages) if i == 0 or starts_exchange(message)]
    lead_in = 0
    if _is_digest_only(messages[0]):
        lead_in = starts[1] if len(starts) > 1 else len(messages)
        starts = starts[1:]
    bounds = [*starts[1:], len(messages)]
    return lead_in, list(zip(starts, bounds, strict=True))


def with_digest(digest: str, messages: list[MessageParam]) -> list[MessageParam]:
    """``messages`` with ``digest`` as the leading text block of the first user message.

    Never mutates ``messages``; an older digest leading that message is replaced, not stacked.
    """
    if not digest:
        return list(messages)
    if not messages:
        return [
            {"role": "user", "content": [text_block(digest)]},
            {"role": "assistant", "content": [text_block(DIGEST_ACK)]},
        ]
    first = messages[0]
    blocks = blocks_of(first.get("content"))
    if leading_digest(first) is not None:
        blocks = blocks[1:]
    return [{**first, "content": [text_block(digest), *blocks]}, *messages[1:]]
