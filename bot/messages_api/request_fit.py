"""Fit a request into the Messages API's limits before it is sent, never after a 400.

What can be left out is what was attached: images, PDFs and text files. When a request would
carry more than ``MAX_IMAGES`` images, more than ``BYTE_BUDGET`` bytes (base64 growth included:
it is the JSON body that is measured) or more estimated input tokens than its token budget, the
largest attachments are replaced, one at a time, by a one-line note saying what was left out and
why, so Claude knows the file exists and the user can be told. The conversation's own words are
never cut here: compaction (``session.py``) makes room in them first.

Fitting is linear in what the request holds: every block is measured once (its bytes, and its
tokens through a memo keyed by a hash of its text, shared by every request the same counter
fits), and each note written subtracts its block from the totals instead of measuring the whole
request again. A session's attachments come back in every request of every later turn; their
counts are looked up, not recomputed.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from cachetools import LRUCache
from chanctx.bot.messages_api.request_rules import (
    MAX_IMAGES,
    REQUEST_MAX_BYTES,
    image_size,
    request_bytes,
)

__all__ = ["BYTE_BUDGET", "estimate_tokens", "fit_request", "memo_count"]

# Under the API's 32 MB with room for the JSON around the attachments.
BYTE_BUDGET: Final = REQUEST_MAX_BYTES - 2 * 1024 * 1024
IMAGE_TOKENS: Final = 1_600  # Anthropic's ceiling per image (width x height / 750, resized)
PDF_PAGE_TOKENS: Final = 3_000  # the top of Anthropic's 1,500-3,000 tokens per page
_FILE_HEAD: Final = "[file "
# Texts shorter than this are counted directly: hashing them costs about what counting does.
_MEMO_FROM: Final = 256
_MEMO_SIZE: Final = 8_192  # texts per counter; a 16-byte key and an int each
# One memo per counter object (counts differ between tokenizers), keyed by its id; the
# counter is held with its memo, so the id cannot be reused while the memo lives. Counters
# are few and live as long as the process (one per tokenizer family, one per exact client).
_MEMOS: LRUCache[int, tuple[object, LRUCache[bytes, int]]] = LRUCache(maxsize=32)
_MEMO_LOCK = threading.Lock()


def memo_count(count: Callable[[str], int]) -> Callable[[str], int]:
    """``count``, remembering long texts' counts by a hash of their content (bounded). Where
    ``count`` is a counter's bound method, every call site shares that counter's memo."""
    if getattr(count, "memoized", False):
        return count
    owner = getattr(count, "__self__", count)
    with _MEMO_LOCK:
        held = _MEMOS.get(id(owner))
        if held is None or held[0] is not owner:
            held = _MEMOS[id(owner)] = (owner, LRUCache(maxsize=_MEMO_SIZE))
    memo = held[1]

    def counted(text: str) -> int:
        if len(text) < _MEMO_FROM:
            return count(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with _MEMO_LOCK:
            known = memo.get(key)
        if known is not None:
            return known
        tokens = count(text)
        with _MEMO_LOCK:
            memo[key] = tokens
        return tokens

    counted.memoized = True  # type: ignore[attr-defined]
    return counted


@dataclass(frozen=True)
class _Slot:
    message: int
    block: int
    tokens: int
    size: int  # bytes of the block in the request's JSON body
    kind: str


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
    count = memo_count(count)
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


def _bytes(block: dict[str, Any]) -> int:
    """The block's share of ``request_bytes``: the same encoding, so totals subtract exactly."""
    return len(json.dumps(block, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _attachments(request: dict[str, Any], count: Callable[[str], int]) -> Iterator[_Slot]:
    for m, message in enumerate(request.get("messages") or []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for b, block in enumerate(content):
            if _is_attachment(block):
                kind = str(block.get("type"))
                yield _Slot(m, b, _block_tokens(block, count), _bytes(block), kind)


def _leave_out(request: dict[str, Any], slot: _Slot, why: str) -> dict[str, Any]:
    """Replace the slot's block by a note saying so; the note block."""
    block = request["messages"][slot.message]["content"][slot.block]
    text = str(block.get("text") or "")
    name = text[len(_FILE_HEAD) : text.index("]")] if text.startswith(_FILE_HEAD) else block["type"]
    note = {"type": "text", "text": f"[{name}: left out of this request because {why}]"}
    request["messages"][slot.message]["content"][slot.block] = note
    return note


def fit_request(
    request: dict[str, Any], *, count: Callable[[str], int], token_budget: int
) -> list[str]:
    """Replace attachments in ``request`` (in place) until it fits; the notes written."""
    count = memo_count(count)
    notes: list[str] = []
    slots = list(_attachments(request, count))  # measured once
    images = [s for s in slots if s.kind == "image"]
    gone = set(images[: max(0, len(images) - MAX_IMAGES)])  # the oldest go first
    for slot in sorted(gone, key=lambda s: (s.message, s.block)):
        notes.append(
            _note(_leave_out(request, slot, f"a request carries at most {MAX_IMAGES} images"))
        )
    left = [s for s in slots if s not in gone]
    size = request_bytes(request)
    for slot in sorted(left, key=lambda s: -s.size):  # stable: the earliest of equals first
        if size <= BYTE_BUDGET:
            break
        note = _leave_out(request, slot, "the request would be larger than 32 MB")
        size -= slot.size - _bytes(note)
        notes.append(_note(note))
        gone.add(slot)
    tokens = estimate_tokens(request, count)
    for slot in sorted(
        (s for s in left if s not in gone and s.tokens > 40), key=lambda s: -s.tokens
    ):
        if tokens <= token_budget:
            break
        note = _leave_out(request, slot, "the request would not fit Claude's context window")
        tokens -= slot.tokens - count(note["text"])
        notes.append(_note(note))
    return notes


def _note(block: dict[str, Any]) -> str:
    return str(block["text"])
