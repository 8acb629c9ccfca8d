"""Downloading Slack files for Claude, safely: the bot token goes to Slack's file hosts only.

``MediaFetcher.fetch(ref)`` returns ``FetchedMedia`` (checked bytes, ready for
``to_content_block``) or ``MediaFailure`` (a specific reason, ready for ``placeholder``), both in
``media_blocks.py`` with the content checks; it never
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

import contextlib
import logging
import re
import ssl
import time
import urllib.error
import urllib.request
from email.message import Message as Headers
from http.client import HTTPException, HTTPResponse
from typing import Final, cast
from urllib.parse import SplitResult, urljoin, urlsplit

from chanctx.bot.messages_api.request_rules import pdf_pages
from chanctx.bot.slack.image_fit import fit_image
from chanctx.bot.slack.media_blocks import (
    API_IMAGE_MAX_BASE64_BYTES,
    MAX_IMAGE_SIDE,
    PDF_MAX_BYTES,
    PDF_MAX_PAGES,
    PDF_MAX_PARTS,
    PDF_TYPE,
    FailureReason,
    FetchedMedia,
    MediaFailure,
    MediaKind,
    base64_length,
    kind_of,
    looks_like_html,
    normalized_type,
    size_label,
    sniff_image,
    split_pdf,
)
from chanctx.bot.slack.safe_http import (
    KeepResponses,
    NoRedirects,
    NotPublic,
    Resolver,
    VettedHTTPSHandler,
    loopback_hostport,
    read_within,
    system_resolver,
)
from chanctx.cache import CachedMedia, MediaContentCache
from chanctx.context import FileRef

__all__ = [
    "MAX_DOWNLOAD_BYTES",
    "MAX_REDIRECTS",
    "SLACK_FILE_HOSTS",
    "MediaFetcher",
]

logger = logging.getLogger("chanctx.media")

SLACK_FILE_HOSTS: Final = frozenset(
    {"files.slack.com", "files-edu.slack.com", "files-pri.slack.com", "slack-files.com"}
)
MAX_DOWNLOAD_BYTES: Final = 20 * 1024 * 1024
MAX_REDIRECTS: Final = 3
_CHUNK: Final = 64 * 1024
_USER_AGENT: Final = "chanctx-media/0.1"

_HTTP_HEADER_VALUE: Final = re.compile(r"^[\x21-\x7e]*$")  # visible ASCII, no spaces or CR/LF

# --- the fetcher ---------------------------------------------------------------------------


class _Failed(Exception):
    """Internal: carries a failure out of the request loop. Never escapes ``fetch``."""

    def __init__(self, reason: FailureReason, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.reason: FailureReason = reason
        self.message = message
        self.retryable = retryable


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
        self._http_ok = frozenset(loopback_hostport(v) for v in allow_http_for)
        handlers = (KeepResponses(), NoRedirects())
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
        media_type = normalized_type(ref.media_type)
        kind = kind_of(media_type)
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
        content_type = normalized_type(response.headers.get("Content-Type") or "")
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
        label = normalized_type(ref.media_type)
        if kind != "text" and looks_like_html(content[:512]):
            raise _Failed("login_page", _LOGIN_PAGE)
        self._check_size(len(content), kind)
        if kind == "image":
            sniffed = sniff_image(content)
            if sniffed is None:
                raise _Failed("bad_content", "its bytes are not a JPEG, PNG, GIF or WebP image")
            fitted = fit_image(content)
            if fitted is not None:  # Pillow read it: scaled within every limit Claude has
                data, fitted_type, fitted_w, fitted_h = fitted
                return FetchedMedia(ref, fitted_type, kind, data, from_cache, fitted_w, fitted_h)
            # Pillow could not decode it: what the header says decides.
            if base64_length(len(content)) > API_IMAGE_MAX_BASE64_BYTES:
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


def _split(url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a bad port; check it here, not later
    except ValueError:
        raise _Failed("refused_url", "its URL is malformed") from None
    return parts
