"""bot/slack/media.py over real loopback HTTP: the token goes to Slack's file hosts only, Claude's limits
hold, every failure is a clear MediaFailure, and cached bytes are not downloaded twice.

Two kinds of server: FakeSlackAPI (a Slack file host, reached over plain HTTP through the
fetcher's test-only ``allow_http_for``) and ``Recorder``, a tiny server that records the headers
it receives, playing an attacker's host, a CDN, or a misbehaving file host.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest
from chanctx.bot.messages_api.request_rules import pdf_pages, problems
from chanctx.bot.replay._loopback import LoopbackServer
from chanctx.bot.replay.fake_slack import FILE_DOWNLOAD, FakeSlackAPI
from chanctx.bot.slack.media import SLACK_FILE_HOSTS, MediaFetcher
from chanctx.bot.slack.media_blocks import (
    MAX_IMAGE_SIDE,
    FetchedMedia,
    MediaFailure,
    placeholder,
    size_label,
    split_pdf,
    to_content_block,
    to_content_blocks,
)
from chanctx.cache import CachedMedia, MediaContentCache
from chanctx.context import FileRef
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk import WebClient

from tests.support.media_files import pdf_bytes

TOKEN = "xoxb-test-0123456789-secret"
LOGIN_PAGE = "Slack returned its login page: the bot needs the files:read scope"


# --- file bytes ----------------------------------------------------------------------------


def png(width: int = 2, height: int = 3, pad: int = 0) -> bytes:
    ihdr = (13).to_bytes(4) + b"IHDR" + width.to_bytes(4) + height.to_bytes(4) + b"\x08\x02\0\0\0"
    return b"\x89PNG\r\n\x1a\n" + ihdr + b"\0" * (4 + pad)


def jpeg(width: int = 640, height: int = 480) -> bytes:
    app0 = b"\xff\xe0" + (16).to_bytes(2) + b"JFIF\0" + b"\x01\x01\0\0\x01\0\x01\0\0"
    sof0 = b"\xff\xc0" + (17).to_bytes(2) + b"\x08" + height.to_bytes(2) + width.to_bytes(2)
    return b"\xff\xd8" + app0 + sof0 + b"\x03" + b"\x01\x22\0\x02\x11\x01\x03\x11\x01" + b"\xff\xd9"


def gif(width: int = 5, height: int = 7) -> bytes:
    return b"GIF89a" + width.to_bytes(2, "little") + height.to_bytes(2, "little") + b"\0" * 8


def webp(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + len(payload).to_bytes(4, "little") + payload
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def webp_vp8x(width: int, height: int) -> bytes:
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return webp(b"VP8X", b"\0\0\0\0" + size)


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return webp(b"VP8L", b"\x2f" + bits.to_bytes(4, "little") + b"\0")


def webp_vp8(width: int, height: int) -> bytes:
    frame = b"\0\0\0" + b"\x9d\x01\x2a" + width.to_bytes(2, "little") + height.to_bytes(2, "little")
    return webp(b"VP8 ", frame + b"\0\0")


PDF = pdf_bytes(2)
LOGIN_HTML = "<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in</body></html>"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


STATE: dict[str, Any] = {
    "auth": {"user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1"},
    "files": {
        "FPNG": {"name": "graph.png", "mimetype": "image/png", "content_b64": b64(png(pad=48_000))},
        "FJPG": {"name": "photo.png", "mimetype": "image/png", "content_b64": b64(jpeg())},
        "FPDF": {"name": "spec.pdf", "mimetype": "application/pdf", "content_b64": b64(PDF)},
        "FTXT": {"name": "notes.md", "mimetype": "text/markdown", "content_text": "# Notes\nhi"},
        "FLOGIN": {"name": "chart.png", "mimetype": "text/html", "content_text": LOGIN_HTML},
        "FNOTPNG": {"name": "fake.png", "mimetype": "image/png", "content_text": "just text"},
        "FHUGE": {"name": "huge.png", "mimetype": "image/png", "content_b64": b64(png(9000, 20))},
        "FBIG": {"name": "big.png", "mimetype": "image/png", "content_b64": b64(png(pad=4_000_000))},
        "FZIP": {"name": "a.zip", "mimetype": "application/zip", "content_text": "PK"},
    },
}  # fmt: skip


# --- servers -------------------------------------------------------------------------------


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_length: bool = True


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]  # lower-case names


class Recorder(LoopbackServer):
    """Answers from ``routes`` (404 otherwise) and records every request's headers."""

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.routes = dict(routes or {})
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._listen(self._handler(), name="recorder")
        self.hostport = urlsplit(self.origin).netloc

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def close(self) -> None:
        self._closing.set()  # wake slow handlers so they end with the test
        super().close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(Seen(self.path, headers))
                route = server.routes.get(self.path, Route(404, b"not found"))
                if route.delay and server._closing.wait(route.delay):
                    return
                try:
                    self.send_response(route.status)
                    for name, value in route.headers.items():
                        self.send_header(name, value)
                    if route.content_length:
                        self.send_header("Content-Length", str(len(route.body)))
                    self.end_headers()
                    self.wfile.write(route.body)
                except OSError:
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSlackAPI]:
    with FakeSlackAPI(STATE) as server:
        yield server


@pytest.fixture
def other() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


def hostport(fake: FakeSlackAPI) -> str:
    return urlsplit(fake.origin).netloc


def fetcher_for(*servers: FakeSlackAPI | Recorder, **options: Any) -> MediaFetcher:
    """A fetcher that treats these loopback servers as Slack file hosts (over plain HTTP)."""
    allowed = frozenset(s.hostport if isinstance(s, Recorder) else hostport(s) for s in servers)
    return MediaFetcher(token=options.pop("token", TOKEN), allow_http_for=allowed, **options)


def ref_of(
    fake: FakeSlackAPI, file_id: str, *, declared_size: bool = True, media_type: str | None = None
) -> FileRef:
    """The FileRef bot/intake would build from Slack's file object (files.info here).

    ``media_type`` stands in for Slack's metadata where the fake can only serve one type for
    both the metadata and the download (the login page: metadata image/png, body HTML).
    """
    info = WebClient(token=TOKEN, base_url=fake.url).files_info(file=file_id)["file"]
    return FileRef(
        artifact_id=info["id"],
        media_type=media_type or info["mimetype"],
        filename=info["name"],
        byte_length=info["size"] if declared_size else 0,
        download_url=info["url_private_download"],
    )


def downloads(fake: FakeSlackAPI) -> int:
    return fake.call_counts().get(FILE_DOWNLOAD, 0)


def failed(result: FetchedMedia | MediaFailure) -> MediaFailure:
    assert isinstance(result, MediaFailure), result
    return result


def fetched(result: FetchedMedia | MediaFailure) -> FetchedMedia:
    assert isinstance(result, FetchedMedia), result
    return result


# --- where the token goes ------------------------------------------------------------------


def test_a_file_on_the_fake_slack_host_downloads_with_the_token(fake: FakeSlackAPI) -> None:
    before = [c for c in fake.calls if c.method == FILE_DOWNLOAD]
    media = fetched(fetcher_for(fake).fetch(ref_of(fake, "FPNG")))
    assert media.kind == "image" and media.media_type == "image/png"
    assert (media.width, media.height) == (2, 3)
    assert media.content == png(pad=48_000)
    (call,) = [c for c in fake.calls if c.method == FILE_DOWNLOAD][len(before) :]
    assert call.authed and call.params == {"file": "FPNG"}


def test_a_url_on_any_other_host_gets_no_request_and_a_clear_refusal(
    fake: FakeSlackAPI, other: Recorder
) -> None:
    other.routes["/files/FPNG/graph.png"] = Route(body=png())
    ref = ref_of(fake, "FPNG").model_copy(
        update={"download_url": other.url("/files/FPNG/graph.png")}
    )
    failure = failed(fetcher_for(fake).fetch(ref))
    assert failure.reason == "refused_url"
    assert failure.message == (
        "its URL points at 127.0.0.1, not a Slack file host, so the bot token was not sent"
    )
    assert other.requests == []  # not even a request without the token


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://evil.example/files/F1/x.png", "its URL points at evil.example, not a Slack"),
        ("http://files.slack.com/files-pri/T1-F1/x.png", "its URL is not HTTPS (http)"),
        ("https://files.slack.com:8443/files-pri/T1-F1/x.png", "its URL points at files.slack.com"),
        ("https://u:p@files.slack.com/files-pri/T1-F1/x.png", "its URL carries credentials"),
        ("https://files.slack.com.evil.example/x.png", "its URL points at files.slack.com.evil"),
        ("file:///etc/passwd", "its URL points at an unknown host"),
        ("https://files.slack.com:99999/x", "its URL is malformed"),
    ],
)
def test_urls_the_token_must_not_go_to_are_refused_before_any_request(
    url: str, message: str
) -> None:
    ref = FileRef(artifact_id="F1", media_type="image/png", filename="x.png", download_url=url)
    failure = failed(MediaFetcher(token=TOKEN).fetch(ref))
    assert failure.reason == "refused_url"
    assert failure.message.startswith(message)


def test_a_file_without_a_url_is_a_failure_not_an_error() -> None:
    failure = failed(
        MediaFetcher(token=TOKEN).fetch(FileRef(artifact_id="F1", media_type="image/png"))
    )
    assert failure.reason == "no_url"


def test_a_redirect_is_followed_without_the_token(other: Recorder) -> None:
    with Recorder() as slack_host:
        slack_host.routes["/files-pri/T1-F1/graph.png"] = Route(
            302, headers={"Location": other.url("/cdn/graph.png?sig=abc")}
        )
        other.routes["/cdn/graph.png?sig=abc"] = Route(
            body=png(), headers={"Content-Type": "image/png"}
        )
        ref = FileRef(
            artifact_id="F1",
            media_type="image/png",
            filename="graph.png",
            download_url=slack_host.url("/files-pri/T1-F1/graph.png"),
        )
        media = fetched(fetcher_for(slack_host, other).fetch(ref))
        assert media.content == png()
        (first,) = slack_host.requests
        assert first.headers["authorization"] == f"Bearer {TOKEN}"
    (second,) = other.requests
    assert "authorization" not in second.headers
    assert TOKEN not in repr(second.headers)


def test_a_relative_redirect_on_the_same_host_also_drops_the_token() -> None:
    with Recorder() as slack_host:
        slack_host.routes["/a"] = Route(301, headers={"Location": "/b"})
        slack_host.routes["/b"] = Route(body=b"moved text", headers={"Content-Type": "text/plain"})
        ref = FileRef(artifact_id="F1", media_type="text/plain", download_url=slack_host.url("/a"))
        assert fetched(fetcher_for(slack_host).fetch(ref)).text == "moved text"
        first, second = slack_host.requests
    assert "authorization" in first.headers and "authorization" not in second.headers


def test_a_redirect_to_plain_http_elsewhere_is_refused(other: Recorder) -> None:
    with Recorder() as slack_host:
        slack_host.routes["/f"] = Route(302, headers={"Location": other.url("/stolen")})
        ref = FileRef(artifact_id="F1", media_type="image/png", download_url=slack_host.url("/f"))
        failure = failed(fetcher_for(slack_host).fetch(ref))
    assert failure.reason == "redirect_refused"
    assert failure.message == "Slack redirected it to a non-HTTPS URL on 127.0.0.1"
    assert other.requests == []


def test_a_redirect_loop_ends_in_a_failure() -> None:
    with Recorder() as slack_host:
        slack_host.routes["/loop"] = Route(302, headers={"Location": "/loop"})
        ref = FileRef(
            artifact_id="F1", media_type="image/png", download_url=slack_host.url("/loop")
        )
        failure = failed(fetcher_for(slack_host).fetch(ref))
        assert failure.message == "more than 3 redirects"
        assert len(slack_host.requests) == 4


def test_allow_http_for_takes_loopback_servers_only() -> None:
    for bad in ["files.slack.com:80", "10.0.0.5:8080", "127.0.0.1", "evil.example:80"]:
        with pytest.raises(ValueError, match="allow_http_for"):
            MediaFetcher(token=TOKEN, allow_http_for=frozenset({bad}))
    MediaFetcher(
        token=TOKEN, allow_http_for=frozenset({"127.0.0.1:8080", "localhost:1", "[::1]:2"})
    )


def test_the_token_never_shows_in_reprs_errors_or_logs(
    fake: FakeSlackAPI, caplog: pytest.LogCaptureFixture
) -> None:
    fetcher = fetcher_for(fake)
    assert TOKEN not in repr(fetcher)
    with pytest.raises(ValueError) as error:
        MediaFetcher(token=TOKEN + "\r\nX-Evil: 1")
    assert TOKEN not in str(error.value)
    with caplog.at_level(logging.DEBUG):
        results = [
            fetcher.fetch(ref_of(fake, f, media_type="image/png")) for f in ("FLOGIN", "FNOTPNG")
        ]
        results.append(fetcher.fetch(ref_of(fake, "FZIP")))
        results.append(fetcher.fetch(FileRef(artifact_id="X", download_url="https://x.example/")))
    assert all(isinstance(r, MediaFailure) for r in results)
    assert TOKEN not in caplog.text
    assert not any(TOKEN in repr(r) for r in results)


def test_the_default_hosts_are_slacks_file_hosts() -> None:
    assert "files.slack.com" in SLACK_FILE_HOSTS
    assert all(h == "slack-files.com" or h.endswith(".slack.com") for h in SLACK_FILE_HOSTS)


# --- Slack's answers -----------------------------------------------------------------------


def test_slacks_login_page_means_the_files_read_scope_is_missing(fake: FakeSlackAPI) -> None:
    failure = failed(fetcher_for(fake).fetch(ref_of(fake, "FLOGIN", media_type="image/png")))
    assert (failure.reason, failure.message) == ("login_page", LOGIN_PAGE)


def test_a_login_page_served_under_another_content_type_is_still_caught(other: Recorder) -> None:
    other.routes["/f"] = Route(body=LOGIN_HTML.encode(), headers={"Content-Type": "image/png"})
    ref = FileRef(artifact_id="F1", media_type="image/png", download_url=other.url("/f"))
    failure = failed(fetcher_for(other).fetch(ref))
    assert (failure.reason, failure.message) == ("login_page", LOGIN_PAGE)


def test_a_rejected_token_is_a_forbidden_failure(fake: FakeSlackAPI) -> None:
    failure = failed(fetcher_for(fake, token="not-a-slack-token").fetch(ref_of(fake, "FTXT")))
    assert failure.reason == "forbidden"
    assert "HTTP 403" in failure.message and "files:read" in failure.message


def test_a_missing_file_is_not_found(fake: FakeSlackAPI) -> None:
    ref = FileRef(
        artifact_id="FGONE", media_type="image/png", download_url=f"{fake.root}files/FGONE/x.png"
    )
    failure = failed(fetcher_for(fake).fetch(ref))
    assert failure.reason == "not_found"
    assert (
        failure.message
        == f"{urlsplit(fake.origin).hostname} says the file no longer exists (HTTP 404)"
    )


def test_server_errors_and_rate_limits_are_retryable_failures(fake: FakeSlackAPI) -> None:
    fetcher = fetcher_for(fake)
    fake.fail_next(FILE_DOWNLOAD, status=503)
    failure = failed(fetcher.fetch(ref_of(fake, "FTXT")))
    assert (failure.reason, failure.retryable) == ("http_error", True)
    fake.fail_next(FILE_DOWNLOAD, status=429, retry_after=7)
    failure = failed(fetcher.fetch(ref_of(fake, "FTXT")))
    assert failure.reason == "rate_limited" and "retry after 7 s" in failure.message
    assert isinstance(fetcher.fetch(ref_of(fake, "FTXT")), FetchedMedia)  # then it works


def test_a_server_slower_than_the_timeout_is_a_timeout_failure(other: Recorder) -> None:
    other.routes["/slow"] = Route(body=b"late", headers={"Content-Type": "text/plain"}, delay=5.0)
    ref = FileRef(artifact_id="F1", media_type="text/plain", download_url=other.url("/slow"))
    failure = failed(fetcher_for(other, timeout=0.3).fetch(ref))
    assert failure.reason == "timeout" and failure.retryable
    assert failure.message == "127.0.0.1 did not answer within 0.3 s"


def test_a_closed_port_is_a_connection_failure(other: Recorder) -> None:
    url = other.url("/f")
    other.close()
    ref = FileRef(artifact_id="F1", media_type="text/plain", download_url=url)
    failure = failed(fetcher_for(other).fetch(ref))
    assert failure.reason == "connection"
    assert failure.message.startswith("could not connect to 127.0.0.1")


# --- limits and types ----------------------------------------------------------------------


def test_a_file_over_the_cap_by_its_declared_size_is_not_downloaded(fake: FakeSlackAPI) -> None:
    before = downloads(fake)
    failure = failed(fetcher_for(fake, max_bytes=1000).fetch(ref_of(fake, "FPNG")))
    assert (failure.reason, failure.message) == ("too_large", "it is larger than 1000 B")
    assert downloads(fake) == before
    failure = failed(
        MediaFetcher(token=TOKEN).fetch(
            FileRef(
                artifact_id="F",
                byte_length=21 << 20,
                media_type="application/pdf",
                download_url="https://files.slack.com/x",
            )
        )
    )
    assert failure.message == "it is larger than 20 MB"  # the default cap, no request made


def test_a_file_over_the_cap_by_content_length_is_refused(fake: FakeSlackAPI) -> None:
    ref = ref_of(fake, "FPNG", declared_size=False)  # Slack's size unknown: the header decides
    failure = failed(fetcher_for(fake, max_bytes=1000).fetch(ref))
    assert (failure.reason, failure.message) == ("too_large", "it is larger than 1000 B")


def test_a_stream_without_content_length_is_cut_at_the_cap(other: Recorder) -> None:
    other.routes["/f"] = Route(body=b"x" * 5000, content_length=False)
    ref = FileRef(artifact_id="F1", media_type="text/plain", download_url=other.url("/f"))
    failure = failed(fetcher_for(other, max_bytes=1000).fetch(ref))
    assert failure.reason == "too_large"
    ok = fetched(fetcher_for(other, max_bytes=5000).fetch(ref))
    assert ok.byte_length == 5000


def test_an_image_pillow_cannot_read_over_the_5_mb_base64_limit_is_refused(
    fake: FakeSlackAPI,
) -> None:
    # Only a header and padding: nothing to scale down, so its size decides.
    failure = failed(fetcher_for(fake).fetch(ref_of(fake, "FBIG")))
    assert failure.reason == "too_large"
    assert failure.message == (
        "the image is 3.8 MB, over the Messages API's 5 MB limit (counted in base64, so about "
        "3.8 MB of image)"
    )


@pytest.mark.slow
def test_a_real_image_too_large_for_claude_is_scaled_down_not_refused(other: Recorder) -> None:
    import io
    import os

    from PIL import Image

    noise = Image.frombytes("RGB", (3000, 2000), os.urandom(3000 * 2000 * 3))
    raw = io.BytesIO()
    noise.save(raw, "PNG")  # noise does not compress: about 18 MB
    assert len(raw.getvalue()) > 5 * 1024 * 1024
    other.routes["/big.png"] = Route(body=raw.getvalue(), headers={"Content-Type": "image/png"})
    ref = FileRef(artifact_id="F1", media_type="image/png", download_url=other.url("/big.png"))
    media = fetched(fetcher_for(other).fetch(ref))
    assert (media.width, media.height) == (1568, 1045)
    assert len(base64.b64encode(media.content)) <= 5 * 1024 * 1024
    with Image.open(io.BytesIO(media.content)) as scaled:
        assert scaled.size == (1568, 1045)
        assert Image.MIME[str(scaled.format)] == media.media_type


def test_an_image_wider_than_the_api_allows_is_refused(fake: FakeSlackAPI) -> None:
    failure = failed(fetcher_for(fake).fetch(ref_of(fake, "FHUGE")))
    assert failure.reason == "too_large"
    assert (
        failure.message
        == f"the image is 9000x20 px; Claude accepts at most {MAX_IMAGE_SIDE} px a side"
    )


def test_the_image_type_comes_from_the_bytes_not_slacks_label(fake: FakeSlackAPI) -> None:
    media = fetched(fetcher_for(fake).fetch(ref_of(fake, "FJPG")))
    assert media.ref.media_type == "image/png"
    assert (media.media_type, media.width, media.height) == ("image/jpeg", 640, 480)
    assert to_content_block(media)["source"]["media_type"] == "image/jpeg"


def test_bytes_that_are_not_an_image_are_a_bad_content_failure(fake: FakeSlackAPI) -> None:
    failure = failed(fetcher_for(fake).fetch(ref_of(fake, "FNOTPNG")))
    assert failure.reason == "bad_content"
    assert failure.message == "its bytes are not a JPEG, PNG, GIF or WebP image"


@pytest.mark.parametrize(
    ("media_type", "shown"),
    [
        ("application/zip", "application/zip"),
        ("image/heic", "image/heic"),
        ("image/svg+xml", "image/svg+xml"),
        ("text/html", "text/html"),
        ("video/mp4; codecs=avc1", "video/mp4"),
    ],
)
def test_unsupported_types_fail_without_a_request(
    fake: FakeSlackAPI, media_type: str, shown: str
) -> None:
    before = downloads(fake)
    ref = ref_of(fake, "FZIP").model_copy(update={"media_type": media_type})
    failure = failed(fetcher_for(fake).fetch(ref))
    assert failure.reason == "unsupported_type"
    assert failure.message.startswith(f"unsupported type {shown} (")
    assert downloads(fake) == before


def test_a_pdf_becomes_a_document_and_its_pages_are_counted(fake: FakeSlackAPI) -> None:
    media = fetched(fetcher_for(fake).fetch(ref_of(fake, "FPDF")))
    assert (media.kind, media.media_type, media.pages) == ("document", "application/pdf", 2)


def test_a_pdf_over_100_pages_is_split_into_documents_with_a_note(other: Recorder) -> None:
    # Pages inside a compressed object stream: a byte scan counted none of them.
    other.routes["/p"] = Route(body=pdf_bytes(250, compressed=True))
    ref = FileRef(artifact_id="F1", media_type="application/pdf", download_url=other.url("/p"),
                  filename="manual.pdf")  # fmt: skip
    media = fetched(fetcher_for(other).fetch(ref))
    assert (media.kind, media.pages) == ("document", 250)
    assert [pdf_pages(part) for part in media.parts] == [100, 100, 50]
    note, *documents = to_content_blocks(media)
    assert note == {
        "type": "text",
        "text": "[file manual.pdf has 250 pages, more than the 100 Claude reads in one document: "
        "it follows as 3 documents, pages 1-100, pages 101-200, pages 201-250]",
    }
    assert [d["type"] for d in documents] == ["document"] * 3
    assert [base64.b64decode(d["source"]["data"]) for d in documents] == list(media.parts)
    assert media.sent_length == sum(map(len, media.parts))
    # The request the split produces passes every rule the fake Messages API enforces.
    body = {"model": "claude-sonnet-5", "max_tokens": 100,
            "messages": [{"role": "user", "content": [*to_content_blocks(media),
                                                      {"type": "text", "text": "summarise"}]}]}  # fmt: skip
    assert problems(body) == []


def test_a_pdf_of_100_pages_is_one_document(other: Recorder) -> None:
    other.routes["/p"] = Route(body=pdf_bytes(100, compressed=True))
    ref = FileRef(artifact_id="F1", media_type="application/pdf", download_url=other.url("/p"))
    media = fetched(fetcher_for(other).fetch(ref))
    assert (media.pages, media.parts) == (100, ())
    assert to_content_blocks(media) == [to_content_block(media)]


def test_a_pdf_over_500_pages_is_refused(other: Recorder) -> None:
    other.routes["/p"] = Route(body=pdf_bytes(501, compressed=True))
    ref = FileRef(artifact_id="F1", media_type="application/pdf", download_url=other.url("/p"))
    failure = failed(fetcher_for(other).fetch(ref))
    assert failure.reason == "too_large"
    assert failure.message == (
        "the PDF has 501 pages; Claude reads at most 100 per document and chanctx splits a PDF "
        "into at most 5 of them (500 pages)"
    )


def test_split_pdf_keeps_every_page_in_order() -> None:
    parts = split_pdf(pdf_bytes(7), pages_per_part=3)
    assert parts is not None and [pdf_pages(p) for p in parts] == [3, 3, 1]
    assert split_pdf(b"%PDF-1.5 not really") is None


def test_text_that_is_not_utf8_is_refused(other: Recorder) -> None:
    other.routes["/t"] = Route(body=b"\xff\xfe\x00bad")
    ref = FileRef(artifact_id="F1", media_type="text/csv", download_url=other.url("/t"))
    assert failed(fetcher_for(other).fetch(ref)).message == "it is not UTF-8 text"


@pytest.mark.parametrize(
    ("data", "media_type", "size"),
    [
        (png(300, 200), "image/png", (300, 200)),
        (jpeg(1920, 1080), "image/jpeg", (1920, 1080)),
        (gif(5, 7), "image/gif", (5, 7)),
        (webp_vp8x(4000, 3000), "image/webp", (4000, 3000)),
        (webp_vp8l(123, 456), "image/webp", (123, 456)),
        (webp_vp8(640, 480), "image/webp", (640, 480)),
    ],
)
def test_every_api_image_format_is_recognised(
    other: Recorder, data: bytes, media_type: str, size: tuple[int, int]
) -> None:
    other.routes["/img"] = Route(body=data)
    ref = FileRef(artifact_id="F1", media_type="image/png", download_url=other.url("/img"))
    media = fetched(fetcher_for(other).fetch(ref))
    assert (media.media_type, (media.width, media.height)) == (media_type, size)


# --- content blocks ------------------------------------------------------------------------


def test_content_blocks_have_the_messages_api_shapes(fake: FakeSlackAPI) -> None:
    fetcher = fetcher_for(fake)
    image = fetched(fetcher.fetch(ref_of(fake, "FPNG")))
    assert to_content_block(image) == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(image.content)},
    }
    pdf = fetched(fetcher.fetch(ref_of(fake, "FPDF")))
    assert to_content_block(pdf) == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
    }
    text = fetched(fetcher.fetch(ref_of(fake, "FTXT")))
    assert to_content_block(text) == {
        "type": "text",
        "text": "[file notes.md (text/markdown, 10 B)]\n# Notes\nhi",
    }


def test_a_placeholder_names_the_file_its_type_size_and_reason() -> None:
    ref = FileRef(
        artifact_id="F1", media_type="image/png", filename="graph.png", byte_length=48 * 1024
    )
    failure = MediaFailure(ref, "timeout", "files.slack.com did not answer within 10 s")
    assert placeholder(ref, failure) == {
        "type": "text",
        "text": "[file graph.png (image/png, 48 KB) could not be attached: "
        "files.slack.com did not answer within 10 s]",
    }
    unnamed = FileRef(artifact_id="F2")
    assert placeholder(unnamed, "no reason")["text"] == (
        "[file F2 (application/octet-stream) could not be attached: no reason]"
    )


def test_size_labels() -> None:
    assert [size_label(n) for n in (0, 1023, 1024, 49_152, 1 << 20, 1_300_000, 20 << 20)] == [
        "0 B", "1023 B", "1 KB", "48 KB", "1 MB", "1.2 MB", "20 MB",
    ]  # fmt: skip


# --- caching -------------------------------------------------------------------------------


def test_a_second_fetch_comes_from_the_cache_without_a_request(fake: FakeSlackAPI) -> None:
    cache = MediaContentCache()
    fetcher = fetcher_for(fake, cache=cache)
    before = downloads(fake)
    first = fetched(fetcher.fetch(ref_of(fake, "FJPG")))
    second = fetched(fetcher.fetch(ref_of(fake, "FJPG")))
    assert downloads(fake) == before + 1
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.content == first.content and second.media_type == "image/jpeg"
    cached = cache.get("FJPG")
    assert cached is not None and cached.media_type == "image/jpeg"
    assert cache.total_bytes == len(first.content)


def test_failures_are_not_cached(fake: FakeSlackAPI) -> None:
    cache = MediaContentCache()
    fetcher = fetcher_for(fake, cache=cache)
    fake.fail_next(FILE_DOWNLOAD, status=500)
    assert isinstance(fetcher.fetch(ref_of(fake, "FTXT")), MediaFailure)
    assert len(cache) == 0
    assert isinstance(fetcher.fetch(ref_of(fake, "FTXT")), FetchedMedia)
    assert "FTXT" in cache


def item(key: str, size: int) -> CachedMedia:
    return CachedMedia(key, "image/png", b"x" * size, size, 0.0)


def test_the_cache_evicts_least_recently_used_first() -> None:
    cache = MediaContentCache(max_bytes=100)
    assert cache.put(item("a", 40)) and cache.put(item("b", 40))
    assert cache.get("a") is not None  # a is now the most recent
    assert cache.put(item("c", 40))  # evicts b
    assert "b" not in cache and "a" in cache and "c" in cache
    assert cache.total_bytes == 80 and len(cache) == 2


def test_an_item_larger_than_the_cache_is_not_cached_and_evicts_nothing() -> None:
    cache = MediaContentCache(max_bytes=100)
    cache.put(item("a", 60))
    assert not cache.put(item("big", 101))
    assert "big" not in cache and "a" in cache and cache.total_bytes == 60
    assert cache.put(item("exact", 100)) and len(cache) == 1


def test_cached_media_checks_its_byte_length() -> None:
    with pytest.raises(ValueError, match="byte_length"):
        CachedMedia("a", "image/png", b"abc", 4, 0.0)


operations = st.lists(
    st.tuples(st.sampled_from(["put", "get"]), st.sampled_from("abcdefg"), st.integers(0, 120)),
    max_size=60,
)


@given(st.integers(0, 200), operations)
def test_any_sequence_of_operations_stays_within_the_bound_and_in_lru_order(
    max_bytes: int, ops: list[tuple[str, str, int]]
) -> None:
    cache = MediaContentCache(max_bytes=max_bytes)
    model: OrderedDict[str, int] = OrderedDict()  # key -> size, least recent first
    for op, key, size in ops:
        if op == "get":
            got = cache.get(key)
            assert (got is None) == (key not in model)
            if key in model:
                model.move_to_end(key)
            continue
        stored = cache.put(item(key, size))
        assert stored == (size <= max_bytes)
        if stored:
            model.pop(key, None)
            while model and sum(model.values()) + size > max_bytes:
                model.popitem(last=False)
            model[key] = size
        assert cache.total_bytes <= max_bytes
        assert cache.total_bytes == sum(model.values())
        assert len(cache) == len(model)
        assert all(k in cache for k in model)
