"""The Messages API's documented request rules, in one place.

The session checks every request against them before sending (a request that breaks one is a
bug of ours, never something to learn from a 400), and the fake Messages API answers a request
that breaks one with the 400 ``invalid_request_error`` the real API gives, so a test cannot pass
on a request Anthropic would reject. From the API reference and the vision, PDF and tool-use
guides:

* at least one message, the first from the user; roles ``user`` / ``assistant`` only;
* every message has content, except an optional final assistant message (a prefill); a text
  block's text is not empty;
* every ``tool_use`` in an assistant message is answered by a ``tool_result`` with its id in the
  next message, which is a user message whose tool results come first; every ``tool_result``
  answers a ``tool_use`` of the message before it; tool-use ids are unique;
* images: at most 100 per request; each at most 8000 px a side, at most 2000 px a side when the
  request carries more than 20; the base64 data at most 5 MB; PDFs at most 100 pages;
* at most 4 ``cache_control`` breakpoints; ``max_tokens`` at least 1;
* the whole request body at most 32 MB (the API answers 413 ``request_too_large`` past it).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from cachetools import LRUCache
from chanctx.context import ChanctxError

__all__ = [
    "IMAGE_MAX_B64",
    "IMAGE_MAX_SIDE",
    "IMAGE_MAX_SIDE_MANY",
    "MANY_IMAGES",
    "MAX_BREAKPOINTS",
    "MAX_IMAGES",
    "NO_ANSWER",
    "PDF_MAX_PAGES",
    "REQUEST_MAX_BYTES",
    "InvalidRequest",
    "check_request",
    "image_size",
    "pdf_pages",
    "problems",
    "repaired",
    "request_bytes",
]

REQUEST_MAX_BYTES: Final = 32 * 1024 * 1024
MAX_IMAGES: Final = 100
MANY_IMAGES: Final = 20  # more than this many images: each at most IMAGE_MAX_SIDE_MANY a side
IMAGE_MAX_SIDE: Final = 8000
IMAGE_MAX_SIDE_MANY: Final = 2000
IMAGE_MAX_B64: Final = 5 * 1024 * 1024
PDF_MAX_PAGES: Final = 100
MAX_BREAKPOINTS: Final = 4


class InvalidRequest(ChanctxError):
    """A request the Messages API would refuse: a bug of ours, said in words, never sent."""


def check_request(request: Mapping[str, Any]) -> None:
    """InvalidRequest naming every rule ``request`` breaks; nothing if it breaks none."""
    wrong = problems(request)
    if wrong:
        raise InvalidRequest(f"the request to Claude would be refused: {'; '.join(wrong)}")


def request_bytes(request: Mapping[str, Any]) -> int:
    """The size of the JSON body the SDK sends (compact separators, as httpx encodes it)."""
    return len(json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


# Image sizes and PDF page counts already read, by (length, hash) of the base64 text: every tool
# round re-checks the same attachments (the same str objects, whose hash Python keeps), and
# decoding megabytes each time would be work done twice. The key holds no reference to the data.
_READ: LRUCache[tuple[str, int, int], Any] = LRUCache(maxsize=1_024)
_READ_LOCK = threading.Lock()


def _read_once(kind: str, data_b64: str, read: Callable[[str], Any]) -> Any:
    key = (kind, len(data_b64), hash(data_b64))
    with _READ_LOCK:
        if key in _READ:
            return _READ[key]
    found = read(data_b64)
    with _READ_LOCK:
        _READ[key] = found
    return found


def image_size(data_b64: str) -> tuple[int, int] | None:
    """(width, height) of a base64 image, read with Pillow; None if it is not an image."""
    size: tuple[int, int] | None = _read_once("image", data_b64, _read_size)
    return size


def _pdf_pages_b64(data_b64: str) -> int | str | None:
    """Pages of a base64 PDF; "not base64" when the data is not."""
    try:
        raw = base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError):
        return "not base64"
    return pdf_pages(raw)


def _read_size(data_b64: str) -> tuple[int, int] | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(base64.b64decode(data_b64, validate=True))) as image:
            return int(image.width), int(image.height)
    except (binascii.Error, ValueError, UnidentifiedImageError, OSError):
        return None


def pdf_pages(data: bytes) -> int | None:
    """A PDF's page count as pypdf reads it (object streams included); None if unreadable."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        return len(PdfReader(io.BytesIO(data)).pages)
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError):
        return None


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _walk(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every block, nested ones (tool results carry images and documents) included."""
    if isinstance(value, Mapping):
        yield value
        for inner in value.values():
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def problems(request: Mapping[str, Any]) -> list[str]:
    """What in ``request`` the Messages API would refuse; empty if nothing."""
    found: list[str] = []
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    max_tokens = request.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        found.append(f"max_tokens: must be an integer of at least 1, got {max_tokens!r}")
    found += _message_problems(messages)
    found += _media_problems(request)
    marks = sum(1 for block in _walk(request) if "cache_control" in block)
    if marks > MAX_BREAKPOINTS:
        found.append(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marks}."
        )
    size = request_bytes(request)
    if size > REQUEST_MAX_BYTES:
        found.append(f"request_too_large: the request is {size} bytes, over {REQUEST_MAX_BYTES}")
    return found


def _message_problems(messages: list[Any]) -> list[str]:
    found: list[str] = []
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            found.append(f"{where}: role must be 'user' or 'assistant'")
            continue
        if index == 0 and message["role"] != "user":
            found.append(f"{where}: the first message must use the 'user' role")
        content = message.get("content")
        final_assistant = index == len(messages) - 1 and message["role"] == "assistant"
        if not content and not final_assistant:
            found.append(
                f"{where}: all messages must have non-empty content except for the optional final assistant message"
            )
        for number, block in enumerate(_blocks(message)):
            if isinstance(block, Mapping) and block.get("type") == "text" and not block.get("text"):
                found.append(f"{where}.content.{number}: text content blocks must be non-empty")
        uses = [
            b for b in _blocks(message) if isinstance(b, Mapping) and b.get("type") == "tool_use"
        ]
        for use in uses:
            if use.get("id") in seen_ids:
                found.append(f"{where}: tool_use ids must be unique, {use.get('id')!r} is repeated")
            seen_ids.add(str(use.get("id")))
        if message["role"] == "assistant" and uses:
            found += _answered(
                where, uses, messages[index + 1] if index + 1 < len(messages) else None
            )
        if message["role"] == "user":
            before = messages[index - 1] if index else None
            found += _answers_something(where, message, before)
    return found


def _answered(where: str, uses: list[Mapping[str, Any]], after: Any) -> list[str]:
    """Each tool_use needs a tool_result in the next message, results first."""
    blocks = _blocks(after) if isinstance(after, Mapping) and after.get("role") == "user" else []
    results = [
        b.get("tool_use_id")
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "tool_result"
    ]
    missing = [str(u.get("id")) for u in uses if u.get("id") not in results]
    if missing:
        return [
            f"{where}: tool_use ids were found without tool_result blocks immediately after: {', '.join(missing)}"
        ]
    leading = 0
    for block in blocks:
        if not (isinstance(block, Mapping) and block.get("type") == "tool_result"):
            break
        leading += 1
    if leading < len(results):
        return [f"{where}: tool_result blocks must come first in the user message after tool_use"]
    return []


def _answers_something(where: str, message: Mapping[str, Any], before: Any) -> list[str]:
    uses = {
        b.get("id")
        for b in (
            _blocks(before)
            if isinstance(before, Mapping) and before.get("role") == "assistant"
            else []
        )
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    }
    return [
        f"{where}: unexpected tool_use_id {b.get('tool_use_id')!r} in tool_result blocks: each must have a corresponding tool_use block in the previous message"
        for b in _blocks(message)
        if isinstance(b, Mapping)
        and b.get("type") == "tool_result"
        and b.get("tool_use_id") not in uses
    ]


def _media_problems(request: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    images = [b for b in _walk(request.get("messages")) if b.get("type") == "image"]
    if len(images) > MAX_IMAGES:
        found.append(f"too many images: {len(images)}, at most {MAX_IMAGES} per request")
    limit = IMAGE_MAX_SIDE_MANY if len(images) > MANY_IMAGES else IMAGE_MAX_SIDE
    for number, block in enumerate(images):
        source = block.get("source")
        if not isinstance(source, Mapping) or source.get("type") != "base64":
            continue
        data = str(source.get("data") or "")
        if len(data) > IMAGE_MAX_B64:
            found.append(
                f"image {number}: image exceeds 5 MB maximum: {len(data)} bytes > {IMAGE_MAX_B64} bytes"
            )
        size = image_size(data)
        if size is None:
            found.append(f"image {number}: Could not process image")
        elif max(size) > limit:
            found.append(
                f"image {number}: image dimensions exceed max allowed size for many-image requests: {limit} pixels"
                if limit == IMAGE_MAX_SIDE_MANY
                else f"image {number}: image dimensions exceed max allowed size: {limit} pixels"
            )
    for number, block in enumerate(
        b for b in _walk(request.get("messages")) if b.get("type") == "document"
    ):
        source = block.get("source")
        if isinstance(source, Mapping) and source.get("media_type") == "application/pdf":
            pages = _read_once("pdf", str(source.get("data") or ""), _pdf_pages_b64)
            if pages == "not base64":
                found.append(f"document {number}: the PDF data is not base64")
                continue
            if pages is not None and pages > PDF_MAX_PAGES:
                found.append(
                    f"document {number}: A maximum of {PDF_MAX_PAGES} PDF pages may be provided. Found {pages}."
                )
    return found


NO_ANSWER: Final = "(no answer was given to this question)"
NO_CONTENT: Final = "(nothing)"


def repaired(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` made valid again: what an empty ``end_turn`` or a ``max_tokens`` stop in the
    middle of a ``tool_use`` leaves behind (and old session logs may hold) would make every
    later request in the thread fail. Roles and order are kept, so turns still alternate:
    unanswered tool uses and orphan tool results are dropped, tool results moved first, empty
    text blocks removed, and a message left empty says so in words."""
    fixed: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        blocks = message.get("content")
        if isinstance(blocks, str):
            fixed.append({**message, "content": blocks or NO_CONTENT})
            continue
        kept = [b for b in blocks or [] if not (b.get("type") == "text" and not b.get("text"))]
        if message.get("role") == "assistant":
            after = messages[index + 1] if index + 1 < len(messages) else None
            answered = {
                b.get("tool_use_id") for b in _blocks(after or {}) if b.get("type") == "tool_result"
            }
            kept = [b for b in kept if b.get("type") != "tool_use" or b.get("id") in answered]
        else:
            before = fixed[-1] if fixed else None
            asked = {b.get("id") for b in _blocks(before or {}) if b.get("type") == "tool_use"}
            kept = [
                b for b in kept if b.get("type") != "tool_result" or b.get("tool_use_id") in asked
            ]
            # Results first, as the API wants them; the rest keeps its order.
            kept.sort(key=lambda b: b.get("type") != "tool_result")
        if not kept:
            text = NO_ANSWER if message.get("role") == "assistant" else NO_CONTENT
            kept = [{"type": "text", "text": text}]
        fixed.append({**message, "content": kept})
    return fixed
