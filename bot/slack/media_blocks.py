"""What a Slack file becomes in a Claude request, and the checks on its bytes.

``FetchedMedia`` (bytes checked to be what Claude accepts) turns into Messages API content
blocks here: an image or PDF as base64, a text file as a text block naming the file, a PDF over
100 pages as its parts; a file that could not be fetched becomes a ``placeholder`` saying why.
The limits are the Messages API's (see ``media.py`` for where each comes from). Downloading is
``media.py``'s business; nothing here touches the network.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from chanctx.bot.messages_api.request_rules import pdf_pages
from chanctx.context import FileRef

__all__ = [
    "API_IMAGE_MAX_BASE64_BYTES",
    "IMAGE_TYPES",
    "MAX_IMAGE_SIDE",
    "PDF_MAX_BYTES",
    "PDF_MAX_PAGES",
    "PDF_MAX_PARTS",
    "PDF_TYPE",
    "TEXT_TYPES",
    "FailureReason",
    "FetchedMedia",
    "MediaFailure",
    "MediaKind",
    "base64_length",
    "image_tokens",
    "kind_of",
    "looks_like_html",
    "normalized_type",
    "placeholder",
    "size_label",
    "sniff_image",
    "split_pdf",
    "to_content_block",
    "to_content_blocks",
]

API_IMAGE_MAX_BASE64_BYTES: Final = 5 * 1024 * 1024  # the API measures the base64 string
MAX_IMAGE_SIDE: Final = 8000
PDF_MAX_BYTES: Final = 32 * 1024 * 1024  # the whole request's limit: a PDF can be no larger
PDF_MAX_PAGES: Final = 100
# A longer PDF goes as documents of 100 pages each, up to this many (500 pages, ~0.75-1.5M
# tokens at Anthropic's 1,500-3,000 a page: already more than one request can hold).
PDF_MAX_PARTS: Final = 5

IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
PDF_TYPE: Final = "application/pdf"
TEXT_TYPES: Final = frozenset(
    {"text/plain", "text/markdown", "text/x-markdown", "text/csv", "application/json"}
)
# Labels seen in the wild for the same formats.
_ALIASES: Final = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
}

MediaKind = Literal["image", "document", "text"]
FailureReason = Literal[
    "no_url",
    "refused_url",
    "unsupported_type",
    "too_large",
    "login_page",
    "forbidden",
    "not_found",
    "rate_limited",
    "http_error",
    "redirect_refused",
    "refused_address",
    "timeout",
    "connection",
    "bad_content",
]


def size_label(n: int) -> str:
    """Human size in binary units, as Slack shows it: ``512 B``, ``48 KB``, ``1.2 MB``."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{round(n / 1024)} KB"
    mb = n / (1024 * 1024)
    return f"{mb:.0f} MB" if mb >= 10 or mb == int(mb) else f"{mb:.1f} MB"


def display_name_of(ref: FileRef) -> str:
    return ref.filename or ref.title or ref.artifact_id


def normalized_type(media_type: str) -> str:
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def kind_of(media_type: str) -> MediaKind | None:
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type == PDF_TYPE:
        return "document"
    if media_type in TEXT_TYPES:
        return "text"
    return None


@dataclass(frozen=True, slots=True)
class FetchedMedia:
    """A file's bytes, checked to be what Claude accepts for ``kind``."""

    ref: FileRef
    media_type: str  # for images the type the bytes are, which may differ from Slack's label
    kind: MediaKind
    content: bytes = field(repr=False)
    from_cache: bool = False
    width: int | None = None  # images only, when the header could be read
    height: int | None = None
    pages: int | None = None  # PDFs only, best effort
    # A PDF over PDF_MAX_PAGES: its parts, each a whole PDF of at most 100 pages, in page order.
    parts: tuple[bytes, ...] = field(default=(), repr=False)

    @property
    def byte_length(self) -> int:
        return len(self.content)

    @property
    def sent_length(self) -> int:
        """Bytes its content blocks carry (a split PDF's parts may add up to more)."""
        return sum(map(len, self.parts)) if self.parts else len(self.content)

    @property
    def display_name(self) -> str:
        return display_name_of(self.ref)

    @property
    def content_hash(self) -> str:
        """SHA-256 hex of the bytes: an ``AttachmentRecord``'s ``content_hash``."""
        return hashlib.sha256(self.content).hexdigest()

    @property
    def text(self) -> str:
        """The decoded text of a ``text`` file (UTF-8, a leading BOM dropped)."""
        return self.content.decode("utf-8-sig")


@dataclass(frozen=True, slots=True)
class MediaFailure:
    """Why a file could not be attached. ``message`` is safe to show to Claude and to log."""

    ref: FileRef
    reason: FailureReason
    message: str
    retryable: bool = False  # a later attempt may succeed (timeouts, 5xx, rate limits)


# --- content blocks ------------------------------------------------------------------------


def to_content_block(fetched: FetchedMedia) -> dict[str, Any]:
    """The Messages API content block for ``fetched``.

    Images and PDFs carry their bytes; a text file becomes a text block whose first line names
    the file, so Claude can tell an attachment from the user's words.
    """
    if fetched.kind == "text":
        head = f"[file {fetched.display_name} ({fetched.media_type}, {size_label(fetched.byte_length)})]"
        return {"type": "text", "text": f"{head}\n{fetched.text}"}
    data = base64.b64encode(fetched.content).decode("ascii")
    kind = "image" if fetched.kind == "image" else "document"
    return {
        "type": kind,
        "source": {"type": "base64", "media_type": fetched.media_type, "data": data},
    }


def to_content_blocks(fetched: FetchedMedia) -> list[dict[str, Any]]:
    """The content blocks for ``fetched``: one, or for a split PDF a note naming the split and
    then one ``document`` block per part."""
    if not fetched.parts:
        return [to_content_block(fetched)]
    ranges, first = [], 1
    for part in fetched.parts:
        last = first + (pdf_pages(part) or PDF_MAX_PAGES) - 1
        ranges.append(f"pages {first}-{last}")
        first = last + 1
    note = (
        f"[file {fetched.display_name} has {fetched.pages} pages, more than the "
        f"{PDF_MAX_PAGES} Claude reads in one document: it follows as {len(fetched.parts)} "
        f"documents, {', '.join(ranges)}]"
    )
    return [{"type": "text", "text": note}] + [
        {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": PDF_TYPE,
                "data": base64.b64encode(part).decode("ascii"),
            },
        }
        for part in fetched.parts
    ]


def split_pdf(data: bytes, pages_per_part: int = PDF_MAX_PAGES) -> list[bytes] | None:
    """``data`` cut by pypdf into whole PDFs of at most ``pages_per_part`` pages each, in page
    order; None when pypdf cannot read or write it."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        total = len(reader.pages)
        parts = []
        for start in range(0, total, pages_per_part):
            writer = PdfWriter()
            for number in range(start, min(start + pages_per_part, total)):
                writer.add_page(reader.pages[number])
            out = io.BytesIO()
            writer.write(out)
            parts.append(out.getvalue())
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError):
        return None
    return parts


def placeholder(ref: FileRef, failure: MediaFailure | str) -> dict[str, Any]:
    """A text block telling Claude a file exists but is not attached, and why."""
    reason = failure.message if isinstance(failure, MediaFailure) else failure
    size = f", {size_label(ref.byte_length)}" if ref.byte_length else ""
    text = f"[file {display_name_of(ref)} ({ref.media_type}{size}) could not be attached: {reason}]"
    return {"type": "text", "text": text}


# --- content checks ------------------------------------------------------------------------


def looks_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<!--"))


def image_tokens(data: bytes) -> int:
    """Anthropic's estimate of an image's input tokens: width x height / 750, at most 1,600
    (larger images are scaled down first); a default of 1,600 when the size is unreadable."""
    found = sniff_image(data)
    if not found or not found[1] or not found[2]:
        return 1_600
    return max(1, min(found[1] * found[2] // 750, 1_600))


def sniff_image(data: bytes) -> tuple[str, int | None, int | None] | None:
    """(media type, width, height) from an image's header; None if not JPEG/PNG/GIF/WebP."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if len(data) >= 24 and data[12:16] == b"IHDR":
            return "image/png", int.from_bytes(data[16:20]), int.from_bytes(data[20:24])
        return "image/png", None, None
    if data[:6] in (b"GIF87a", b"GIF89a"):
        if len(data) >= 10:
            w, h = int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
            return "image/gif", w, h
        return "image/gif", None, None
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ("image/webp", *_webp_size(data))
    if data.startswith(b"\xff\xd8\xff"):
        return ("image/jpeg", *_jpeg_size(data))
    return None


def _webp_size(data: bytes) -> tuple[int | None, int | None]:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        b0, b1, b2, b3 = data[21:25]
        width = 1 + (((b1 & 0x3F) << 8) | b0)
        height = 1 + (((b3 & 0x0F) << 10) | (b2 << 2) | ((b1 & 0xC0) >> 6))
        return width, height
    if chunk == b"VP8 " and len(data) >= 30:
        width = int.from_bytes(data[26:28], "little") & 0x3FFF
        height = int.from_bytes(data[28:30], "little") & 0x3FFF
        return width, height
    return None, None


_JPEG_SOF: Final = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int | None, int | None]:
    i, n = 2, len(data)
    while i + 3 < n:
        if data[i] != 0xFF:
            return None, None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xDA)):  # standalone markers carry no length
            i += 2
            continue
        if marker in _JPEG_SOF and i + 9 <= n:
            return int.from_bytes(data[i + 7 : i + 9]), int.from_bytes(data[i + 5 : i + 7])
        i += 2 + int.from_bytes(data[i + 2 : i + 4])
    return None, None


def base64_length(n: int) -> int:
    return 4 * ((n + 2) // 3)
