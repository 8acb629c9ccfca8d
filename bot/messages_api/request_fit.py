"""Fit a request into the Messages API's limits before it is sent, never after a 400.

What can be left out is what was attached: images, PDFs and text files. When a request would
carry more than ``MAX_IMAGES`` images, more than ``BYTE_BUDGET`` bytes (base64 growth included:
it is the JSON body that is measured) or more estimated input tokens than its token budget, the
largest attachments are replaced, one at a time, by a one-line note saying what was left out and
why, so Claude knows the file exists and the user can be told. The conversation's own words are
never cut here: compaction (``session.py``) makes room in them first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from chanctx.bot.messages_api.request_rules import (
    MAX_IMAGES,
    REQUEST_MAX_BYTES,
    image_size,
    request_bytes,
)

__all__ = ["BYTE_BUDGET", "estimate_tokens", "fit_request"]

# Under the API's 32 MB with room for the JSON around the attachments.
BYTE_BUDGET: Final = REQUEST_MAX_BYTES - 2 * 1024 * 1024
IMAGE_TOKENS: Final = 1_600  # Anthropic's ceiling per image (width x height / 750, resized)
PDF_PAGE_TOKENS: Final = 3_000  # the top of Anthropic's 1,500-3,000 tokens per page
_FILE_HEAD: Final = "[file "


@dataclass(frozen=True)
class _Slot:
    message: int
    block: int
    tokens: int
    size: int


def _is_attachment(block: dict[str, Any]) -> bool:
    if block.get("type") in ("image", "document"):
        return True
    text = block.get("text")
    return (
        block.get("type") == "text"
        and isinstance(text, str)
        and text.startswith(_FILE_HEAD)
        and "]\n" in text[:300]
    )


def _block_tokens(block: dict[str, Any], count: Callable[[str], int]) -> int:
    kind = block.get("type")
    if kind == "image":
        size = image_size(str((block.get("source") or {}).get("data") or ""))
        return IMAGE_TOKENS if size is None else max(1, min(size[0] * size[1] // 750, IMAGE_TOKENS))
    if kind == "document":
        data = str((block.get("source") or {}).get("data") or "")
        return max(1, len(data) * 3 // 4 // 50_000) * PDF_PAGE_TOKENS  # ~50 KB a page
    if kind == "text":
        return count(str(block.get("text") or ""))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return sum(_block_tokens(b, count) for b in content)
        return count(str(content or ""))
    if kind == "tool_use":
        return count(json.dumps(block.get("input") or {}))
    return count(json.dumps(block))


def estimate_tokens(request: dict[str, Any], count: Callable[[str], int]) -> int:
    """Input tokens the request would cost, by block: text counted, media by Anthropic's
    published per-image and per-page figures (never by its base64 length)."""
    total = count(json.dumps(request.get("tools") or [])) + count(
        json.dumps(request.get("system") or "")
    )
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            total += count(content)
        else:
            total += sum(_block_tokens(b, count) for b in content or [])
    return total


def _attachments(request: dict[str, Any], count: Callable[[str], int]) -> Iterator[_Slot]:
    for m, message in enumerate(request.get("messages") or []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for b, block in enumerate(content):
            if _is_attachment(block):
                size = len(json.dumps(block))
                yield _Slot(m, b, _block_tokens(block, count), size)


def _leave_out(request: dict[str, Any], slot: _Slot, why: str) -> str:
    block = request["messages"][slot.message]["content"][slot.block]
    text = str(block.get("text") or "")
    name = text[len(_FILE_HEAD) : text.index("]")] if text.startswith(_FILE_HEAD) else block["type"]
    note = f"[{name}: left out of this request because {why}]"
    request["messages"][slot.message]["content"][slot.block] = {"type": "text", "text": note}
    return note


def fit_request(
    request: dict[str, Any], *, count: Callable[[str], int], token_budget: int
) -> list[str]:
    """Replace attachments in ``request`` (in place) until it fits; the notes written."""
    notes: list[str] = []
    images = [s for s in _attachments(request, count) if _type(request, s) == "image"]
    for slot in images[: max(0, len(images) - MAX_IMAGES)]:  # the oldest go first
        notes.append(_leave_out(request, slot, f"a request carries at most {MAX_IMAGES} images"))
    while request_bytes(request) > BYTE_BUDGET:
        slots = list(_attachments(request, count))
        if not slots:
            break
        biggest = max(slots, key=lambda s: s.size)
        notes.append(_leave_out(request, biggest, "the request would be larger than 32 MB"))
    while estimate_tokens(request, count) > token_budget:
        slots = [s for s in _attachments(request, count) if s.tokens > 40]
        if not slots:
            break
        biggest = max(slots, key=lambda s: s.tokens)
        notes.append(
            _leave_out(request, biggest, "the request would not fit Claude's context window")
        )
    return notes


def _type(request: dict[str, Any], slot: _Slot) -> str:
    return str(request["messages"][slot.message]["content"][slot.block].get("type"))
