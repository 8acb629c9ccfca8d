"""Downloading Slack files for Claude, safely: the bot token goes to Slack's file hosts only.

``MediaFetcher.fetch(ref)`` returns ``FetchedMedia`` (checked bytes, ready for
``to_content_block``) or ``MediaFailure`` (a specific reason, ready for ``placeholder``); it never
raises for a bad URL, an HTTP error, a timeout or bad content, so one failed file never drops
the message it came with.

Where the token goes (users reported it sent to whatever URL a file object named):

* ``Authorization: Bearer <token>`` is sent on the first request only, and only over HTTPS to a
  host in ``allowed_hosts`` (default ``SLACK_FILE_HOSTS``) on the default port. Any other URL is
  refused before a single byte leaves the process.
* Redirects are followed by hand (at most ``MAX_REDIRECTS``), never with the token, and only to
  a Slack file host over HTTPS: a redirect is exactly how a token would leak, or how a download
  would be pointed at the machine's own network. Every HTTPS connection goes to an address
  checked to be public after DNS resolution (``safe_http.py``: no loopback, private or
  link-local address, ever), and the total deadline holds inside reads.
* ``allow_http_for`` names loopback ``host:port`` pairs (``127.0.0.1:PORT``) that act as Slack
  file hosts over plain HTTP, for tests and offline replays against ``FakeSlackAPI``. It is a
  constructor argument only (no setting or environment variable turns it on) and it refuses
  anything that is not a loopback address, so production cannot enable it by accident.
* The token never appears in a log line, a failure message or an exception: messages name the
  host only (a URL's path or query could carry a signature), and a token that is not a valid
  header value is refused at construction, before http.client could echo it in an error.

Why ``SLACK_FILE_HOSTS`` is what it is: Slack documents ``url_private`` and
``url_private_download`` as ``https://files.slack.com/files-pri/<team>-<file>/...`` (the bot
needs the ``files:read`` scope). ``files-edu.slack.com`` serves Slack for Education workspaces;
``files-pri.slack.com`` and ``slack-files.com`` (public-permalink host) are listed because they
are Slack's own domains, so a token sent there stays with Slack. GovSlack's file host is not
listed (unverified here): add it through ``allowed_hosts`` for a GovSlack deployment. Exact host
names only, no suffix wildcards: every extra host is one more place the token may go.

What Claude accepts (Anthropic Messages API, checked against the vision and PDF-support docs):

* images: JPEG, PNG, GIF, WebP only; the *base64* data at most 5 MB (``image exceeds 5 MB
  maximum``), so about 3.75 MB of raw bytes; at most 8000 px a side (2000 px when a request
  carries more than 20 images: the caller's concern). The type is taken from the bytes, not
  from Slack's label, because the API rejects an image whose bytes disagree with its
  media_type.
* PDF: ``document`` blocks, 32 MB per request and 100 pages, counted with pypdf (pages inside
  compressed object streams included); a longer PDF is split by pypdf into documents of 100
  pages (at most ``PDF_MAX_PARTS`` of them), announced by a note naming the split; a PDF longer
  than that, or one pypdf cannot split, is refused with a note saying so.
* images Pillow can read are scaled down to 1,568 px on the long side when larger (the size
  Anthropic recommends; the API would scale them itself), and re-encoded until their base64 fits
  5 MB: never refused for their size. That also keeps them under 2,000 px for requests with
  more than 20 images.
* text: sent as a ``text`` block, decoded as UTF-8. Its token cost is the caller's to budget.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import ipaddress
import logging
import re
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from email.message import Message as Headers
from http.client import HTTPException, HTTPResponse
from typing import Any, Final, Literal, cast
from urllib.parse import SplitResult, urljoin, urlsplit

from chanctx.bot.claude.request_rules import pdf_pages
from chanctx.bot.slack.image_fit import fit_image
from chanctx.bot.slack.safe_http import (
    NotPublic,
    Resolver,
    VettedHTTPSHandler,
    read_within,
    system_resolver,
)
from chanctx.cache import CachedMedia, MediaContentCache
from chanctx.context import FileRef

__all__ = [
    "API_IMAGE_MAX_BASE64_BYTES",
    "IMAGE_TYPES",
    "MAX_DOWNLOAD_BYTES",
    "MAX_IMAGE_SIDE",
    "MAX_REDIRECTS",
    "PDF_MAX_PAGES",
    "PDF_MAX_PARTS",
    "SLACK_FILE_HOSTS",
    "TEXT_TYPES",
    "FailureReason",
    "FetchedMedia",
    "MediaFailure",
    "MediaFetcher",
    "MediaKind",
    "image_tokens",
    "placeholder",
    "size_label",
    "split_pdf",
    "to_content_block",
    "to_content_blocks",
]

logger = logging.getLogger("chanctx.media")

SLACK_FILE_HOSTS: Final = frozenset(
    {"files.slack.com", "files-edu.slack.com", "files-pri.slack.com", "slack-files.com"}
)
MAX_DOWNLOAD_BYTES: Final = 20 * 1024 * 1024
API_IMAGE_MAX_BASE64_BYTES: Final = 5 * 1024 * 1024  # the API measures the base64 string
MAX_IMAGE_SIDE: Final = 8000
PDF_MAX_BYTES: Final = 32 * 1024 * 1024  # the whole request's limit: a PDF can be no larger
PDF_MAX_PAGES: Final = 100
# A longer PDF goes as documents of 100 pages each, up to this many (500 pages, ~0.75-1.5M
# tokens at Anthropic's 1,500-3,000 a page: already more than one request can hold).
PDF_MAX_PARTS: Final = 5
MAX_REDIRECTS: Final = 3
_CHUNK: Final = 64 * 1024
_USER_AGENT: Final = "chanctx-media/0.1"

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
_LOOPBACK_NAMES: Final = frozenset({"localhost"})
_HTTP_HEADER_VALUE: Final = re.compile(r"^[\x21-\x7e]*$")  # visible ASCII, no spaces or CR/LF

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


def _display_name(ref: FileRef) -> str:
    return ref.filename or ref.title or ref.artifact_id


def _normalized_type(media_type: str) -> str:
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def _kind_of(media_type: str) -> MediaKind | None:
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
        return _display_name(self.ref)

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
    text = f"[file {_display_name(ref)} ({ref.media_type}{size}) could not be attached: {reason}]"
    return {"type": "text", "text": text}


# --- content checks ------------------------------------------------------------------------


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<!--"))


def image_tokens(data: bytes) -> int:
    """Anthropic's estimate of an image's input tokens: width x height / 750, at most 1,600
    (larger images are scaled down first); a default of 1,600 when the size is unreadable."""
    found = _sniff_image(data)
    if not found or not found[1] or not found[2]:
        return 1_600
    return max(1, min(found[1] * found[2] // 750, 1_600))


def _sniff_image(data: bytes) -> tuple[str, int | None, int | None] | None:
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


# --- the fetcher ---------------------------------------------------------------------------


class _KeepResponses(urllib.request.HTTPErrorProcessor):
    """Hand every response back as is: no HTTPError, and so no automatic redirect either
    (urllib follows redirects from its error handlers, which this never calls)."""

    def http_response(self, request: urllib.request.Request, response: Any) -> Any:
        return response

    https_response = http_response


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # Belt and braces: even if an error handler ran, it would not follow a redirect.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Failed(Exception):
    """Internal: carries a failure out of the request loop. Never escapes ``fetch``."""

    def __init__(self, reason: FailureReason, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.reason: FailureReason = reason
        self.message = message
        self.retryable = retryable


def _loopback_hostport(value: str) -> str:
    """Validate an ``allow_http_for`` entry: ``127.0.0.1:PORT``, ``[::1]:PORT``, ``localhost:PORT``."""
    parts = urlsplit(f"http://{value}")
    host, port = parts.hostname, parts.port
    if not host or port is None or parts.netloc != value or parts.username is not None:
        raise ValueError(f"allow_http_for takes 'host:port' entries, got {value!r}")
    if host not in _LOOPBACK_NAMES:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"allow_http_for is for loopback test servers only, got {value!r}")
    return value.lower()


class MediaFetcher:
    """Downloads Slack files with the bot token, within Claude's limits; caches what it got.

    Thread-safe: it keeps no per-request state (the cache locks itself).
    """

    def __init__(
        self,
        *,
        token: str,
        allowed_hosts: frozenset[str] = SLACK_FILE_HOSTS,
        max_bytes: int = MAX_DOWNLOAD_BYTES,
        timeout: float = 10.0,
        cache: MediaContentCache | None = None,
        allow_http_for: frozenset[str] = frozenset(),
        total_timeout: float | None = None,
        resolve: Resolver = system_resolver,
    ) -> None:
        """``timeout`` bounds connecting and each read; ``total_timeout`` (default: 3x
        ``timeout``) bounds a whole download, so a server trickling bytes cannot hold a turn.
        ``resolve`` turns a host name into addresses (tests name the answer DNS would give)."""
        if not _HTTP_HEADER_VALUE.match(token):
            # Do not echo the value: it is a secret, and a malformed one still mostly is.
            raise ValueError("token has characters not allowed in an HTTP header")
        if max_bytes <= 0 or timeout <= 0:
            raise ValueError("max_bytes and timeout must be positive")
        self._auth = f"Bearer {token}" if token else None
        self._token = token
        self._allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._total_timeout = total_timeout if total_timeout is not None else 3 * timeout
        self._cache = cache
        self._http_ok = frozenset(_loopback_hostport(v) for v in allow_http_for)
        handlers = (_KeepResponses(), _NoRedirects())
        # Production: proxies from the environment, like any HTTPS client (TLS runs end to end
        # through a proxy's CONNECT tunnel, so the proxy never sees the token).
        # Every HTTPS connection goes to an address checked to be public (safe_http.py).
        self._opener = urllib.request.build_opener(VettedHTTPSHandler(resolve), *handlers)
        # Loopback test servers are never reached through a proxy.
        self._direct = urllib.request.build_opener(urllib.request.ProxyHandler({}), *handlers)

    def __repr__(self) -> str:
        return f"MediaFetcher(allowed_hosts={sorted(self._allowed_hosts)!r}, token=<redacted>)"

    @property
    def cache(self) -> MediaContentCache | None:
        return self._cache

    def fetch(self, ref: FileRef) -> FetchedMedia | MediaFailure:
        media_type = _normalized_type(ref.media_type)
        kind = _kind_of(media_type)
        if kind is None:
            return self._fail(ref, "unsupported_type", _unsupported(media_type))
        if self._cache is not None:
            cached = self._cache.get(ref.artifact_id)
            if cached is not None:
                try:
                    return self._checked(ref, kind, cached.content, from_cache=True)
                except _Failed:
                    pass  # cannot happen for what we cached; refetch rather than fail
        try:
            self._check_declared_size(ref, kind)
            url = self._first_url(ref)
            content = self._download(url, kind)
            fetched = self._checked(ref, kind, content, from_cache=False)
        except _Failed as failed:
            return self._fail(ref, failed.reason, failed.message, retryable=failed.retryable)
        if self._cache is not None:
            self._cache.put(
                CachedMedia(
                    artifact_id=ref.artifact_id,
                    media_type=fetched.media_type,
                    content=content,
                    byte_length=len(content),
                    fetched_at=time.time(),
                )
            )
        return fetched

    # --- before any request --------------------------------------------------------------

    def _check_declared_size(self, ref: FileRef, kind: MediaKind) -> None:
        # Slack's own size is known up front: refuse without downloading what we would drop.
        if ref.byte_length:
            self._check_size(ref.byte_length, kind)

    def _check_size(self, n: int, kind: MediaKind) -> None:
        # An image over the API's 5 MB is downloaded all the same: it is scaled down after.
        if n > self._max_bytes:
            raise _Failed("too_large", f"it is larger than {size_label(self._max_bytes)}")
        if kind == "document" and n > PDF_MAX_BYTES:
            raise _Failed("too_large", f"the PDF is larger than {size_label(PDF_MAX_BYTES)}")

    def _first_url(self, ref: FileRef) -> str:
        if not ref.download_url:
            raise _Failed("no_url", "Slack gave no download URL for it")
        url = ref.download_url
        parts = _split(url)
        host = (parts.hostname or "").lower()
        if parts.scheme == "http" and parts.netloc.lower() in self._http_ok:
            return url
        if parts.username is not None or parts.password is not None:
            raise _Failed(
                "refused_url", "its URL carries credentials, so the bot token was not sent"
            )
        if parts.scheme == "https" and host in self._allowed_hosts and parts.port in (None, 443):
            return url
        if parts.scheme != "https" and host in self._allowed_hosts:
            raise _Failed(
                "refused_url",
                f"its URL is not HTTPS ({parts.scheme or 'no scheme'}), so the bot token was not sent",
            )
        raise _Failed(
            "refused_url",
            f"its URL points at {host or 'an unknown host'}, not a Slack file host, "
            "so the bot token was not sent",
        )

    # --- the download --------------------------------------------------------------------

    def _download(self, url: str, kind: MediaKind) -> bytes:
        deadline = time.monotonic() + self._total_timeout
        auth = self._auth
        for _ in range(MAX_REDIRECTS + 1):
            host = _split(url).hostname or "?"
            response = self._open(url, auth, host)
            with contextlib.closing(response):
                status = response.status
                if status in (301, 302, 303, 307, 308):
                    location = response.headers.get("Location")
                    if not location:
                        raise _Failed(
                            "http_error", f"{host} answered HTTP {status} with no Location"
                        )
                    url = self._redirect_target(url, location)
                    auth = None  # the token never follows a redirect
                    continue
                self._check_status(status, host, response.headers)
                return self._read_body(response, kind, host, deadline)
        raise _Failed("http_error", f"more than {MAX_REDIRECTS} redirects")

    def _redirect_target(self, current: str, location: str) -> str:
        """Only to Slack's file hosts over HTTPS (the loopback fakes in tests): a redirect is
        how a download would be pointed at the machine's own network."""
        target = urljoin(current, location.strip())
        parts = _split(target)
        host = (parts.hostname or "").lower()
        if parts.username is not None or parts.password is not None:
            raise _Failed("redirect_refused", "Slack redirected it to a URL with credentials")
        if parts.scheme == "https" and host in self._allowed_hosts and parts.port in (None, 443):
            return target
        if parts.scheme == "http" and parts.netloc.lower() in self._http_ok:
            return target
        where = host or "an unknown host"
        if parts.scheme != "https":
            raise _Failed("redirect_refused", f"Slack redirected it to a non-HTTPS URL on {where}")
        raise _Failed(
            "redirect_refused", f"Slack redirected it to {where}, which is not a Slack file host"
        )

    def _open(self, url: str, auth: str | None, host: str) -> HTTPResponse:
        request = urllib.request.Request(url, method="GET")
        request.add_header("User-Agent", _USER_AGENT)
        if auth is not None:
            request.add_header("Authorization", auth)
        opener = self._direct if _split(url).scheme == "http" else self._opener
        try:
            return cast(HTTPResponse, opener.open(request, timeout=self._timeout))
        except (TimeoutError, urllib.error.URLError, HTTPException, OSError, ValueError) as error:
            raise self._transport_failure(error, host) from None

    def _transport_failure(self, error: BaseException, host: str) -> _Failed:
        cause = error.reason if isinstance(error, urllib.error.URLError) else error
        if isinstance(cause, NotPublic):
            return _Failed(
                "refused_address",
                f"{host} resolves to a non-public address, so nothing was fetched",
            )
        if isinstance(cause, TimeoutError):
            return _Failed(
                "timeout", f"{host} did not answer within {self._timeout:g} s", retryable=True
            )
        if isinstance(cause, ssl.SSLError):
            return _Failed("connection", f"the TLS connection to {host} failed", retryable=True)
        if isinstance(cause, ValueError):
            return _Failed("refused_url", "its URL is malformed")
        detail = type(cause).__name__ if not isinstance(cause, str) else "error"
        return _Failed("connection", f"could not connect to {host} ({detail})", retryable=True)

    def _check_status(self, status: int, host: str, headers: Headers) -> None:
        if status == 200:
            return
        if status in (404, 410):
            raise _Failed("not_found", f"{host} says the file no longer exists (HTTP {status})")
        if status in (401, 403):
            raise _Failed(
                "forbidden",
                f"Slack refused the download (HTTP {status}): check the bot token and its "
                "files:read scope",
            )
        if status == 429:
            after = headers.get("Retry-After")
            wait = f"; retry after {after} s" if after else ""
            raise _Failed("rate_limited", f"Slack rate-limited the download{wait}", retryable=True)
        raise _Failed("http_error", f"{host} answered HTTP {status}", retryable=status >= 500)

    def _read_body(
        self, response: HTTPResponse, kind: MediaKind, host: str, deadline: float
    ) -> bytes:
        content_type = _normalized_type(response.headers.get("Content-Type") or "")
        if content_type == "text/html":
            # Slack answers a token without files:read with its sign-in page, status 200.
            raise _Failed("login_page", _LOGIN_PAGE)
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.strip().isdigit():
            self._check_size(int(declared), kind)
        chunks: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise _Failed(
                    "timeout",
                    f"the download from {host} took longer than {self._total_timeout:g} s",
                    retryable=True,
                )
            try:
                chunk = read_within(response, _CHUNK, deadline=deadline, timeout=self._timeout)
            except (TimeoutError, HTTPException, OSError) as error:
                if isinstance(error, TimeoutError) and time.monotonic() >= deadline:
                    raise _Failed(
                        "timeout",
                        f"the download from {host} took longer than {self._total_timeout:g} s",
                        retryable=True,
                    ) from None
                if isinstance(error, TimeoutError):
                    raise _Failed(
                        "timeout", f"{host} stopped sending for {self._timeout:g} s", retryable=True
                    ) from None
                raise _Failed(
                    "connection", f"the download from {host} broke off", retryable=True
                ) from None
            if not chunk:
                break
            total += len(chunk)
            if total > self._max_bytes:  # Content-Length can be absent or wrong
                raise _Failed("too_large", f"it is larger than {size_label(self._max_bytes)}")
            chunks.append(chunk)
        return b"".join(chunks)

    # --- after the download --------------------------------------------------------------

    def _checked(
        self, ref: FileRef, kind: MediaKind, content: bytes, *, from_cache: bool
    ) -> FetchedMedia:
        label = _normalized_type(ref.media_type)
        if kind != "text" and _looks_like_html(content[:512]):
            raise _Failed("login_page", _LOGIN_PAGE)
        self._check_size(len(content), kind)
        if kind == "image":
            sniffed = _sniff_image(content)
            if sniffed is None:
                raise _Failed("bad_content", "its bytes are not a JPEG, PNG, GIF or WebP image")
            fitted = fit_image(content)
            if fitted is not None:  # Pillow read it: scaled within every limit Claude has
                data, fitted_type, fitted_w, fitted_h = fitted
                return FetchedMedia(ref, fitted_type, kind, data, from_cache, fitted_w, fitted_h)
            # Pillow could not decode it: what the header says decides.
            if _base64_length(len(content)) > API_IMAGE_MAX_BASE64_BYTES:
                raise _Failed(
                    "too_large",
                    f"the image is {size_label(len(content))}, over the Messages API's "
                    f"{size_label(API_IMAGE_MAX_BASE64_BYTES)} limit (counted in base64, so "
                    f"about {size_label(API_IMAGE_MAX_BASE64_BYTES * 3 // 4)} of image)",
                )
            media_type, width, height = sniffed
            if width is not None and height is not None and max(width, height) > MAX_IMAGE_SIDE:
                raise _Failed(
                    "too_large",
                    f"the image is {width}x{height} px; Claude accepts at most "
                    f"{MAX_IMAGE_SIDE} px a side",
                )
            return FetchedMedia(ref, media_type, kind, content, from_cache, width, height)
        if kind == "document":
            if not content.lstrip()[:5] == b"%PDF-":
                raise _Failed("bad_content", "its bytes are not a PDF")
            pages = pdf_pages(content) or 0  # pypdf: object streams counted too
            if pages <= PDF_MAX_PAGES:
                return FetchedMedia(ref, PDF_TYPE, kind, content, from_cache, pages=pages or None)
            return FetchedMedia(
                ref,
                PDF_TYPE,
                kind,
                content,
                from_cache,
                pages=pages,
                parts=_pdf_parts(pages, content),
            )
        try:
            content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise _Failed("bad_content", "it is not UTF-8 text") from None
        return FetchedMedia(ref, label, kind, content, from_cache)

    def _fail(
        self, ref: FileRef, reason: FailureReason, message: str, *, retryable: bool = False
    ) -> MediaFailure:
        if self._token and self._token in message:  # defence in depth: nothing should put it there
            message = message.replace(self._token, "<token>")
        logger.info("file %s not attached (%s): %s", ref.artifact_id, reason, message)
        return MediaFailure(ref, reason, message, retryable)


def _pdf_parts(pages: int, content: bytes) -> tuple[bytes, ...]:
    """A PDF over the page limit as documents Claude accepts, or the refusal that says why not."""
    most = PDF_MAX_PAGES * PDF_MAX_PARTS
    if pages > most:
        raise _Failed(
            "too_large",
            f"the PDF has {pages} pages; Claude reads at most {PDF_MAX_PAGES} per document and "
            f"chanctx splits a PDF into at most {PDF_MAX_PARTS} of them ({most} pages)",
        )
    parts = split_pdf(content)
    if not parts or sum(pdf_pages(p) or 0 for p in parts) != pages:
        raise _Failed(
            "too_large",
            f"the PDF has {pages} pages, Claude reads at most {PDF_MAX_PAGES}, and it could "
            "not be split into parts",
        )
    if any(len(p) > PDF_MAX_BYTES for p in parts):
        raise _Failed(
            "too_large", f"a part of the split PDF is larger than {size_label(PDF_MAX_BYTES)}"
        )
    return tuple(parts)


_LOGIN_PAGE: Final = "Slack returned its login page: the bot needs the files:read scope"


def _unsupported(media_type: str) -> str:
    return (
        f"unsupported type {media_type} (Claude takes JPEG, PNG, GIF and WebP images, PDFs "
        "and plain text)"
    )


def _base64_length(n: int) -> int:
    return 4 * ((n + 2) // 3)


def _split(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a bad port; check it here, not later
    except ValueError:
        raise _Failed("refused_url", "its URL is malformed") from None
    return parts
