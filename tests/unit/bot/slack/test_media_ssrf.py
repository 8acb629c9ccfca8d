"""Downloads that cannot be turned against the bot's own network: redirects only to Slack's file
hosts over HTTPS, names that resolve to loopback, private or link-local addresses refused before
any connection, and the total deadline holding while a server drips bytes."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chanctx.bot.slack.media import MediaFetcher
from chanctx.bot.slack.safe_http import NotPublic, public_addresses
from chanctx.context import FileRef
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.bot.slack.test_media import TOKEN, Recorder, Route, failed, fetcher_for

SLACK_URL = "https://files.slack.com/files-pri/T1-F1/graph.png"


@pytest.fixture
def slack_host() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


@pytest.mark.parametrize(
    "target",
    [
        "https://127.0.0.1/latest/meta-data",
        "https://169.254.169.254/latest/meta-data/iam",
        "https://10.0.0.5:8443/admin",
        "https://[::1]/",
        "https://evil.example/steal",
        "https://files.slack.com.evil.example/x.png",
        "https://files.slack.com:8443/x.png",
        "https://user:pw@files.slack.com/x.png",
    ],
)
def test_a_redirect_anywhere_but_a_slack_file_host_is_refused(
    slack_host: Recorder, target: str
) -> None:
    slack_host.routes["/f"] = Route(302, headers={"Location": target})
    ref = FileRef(artifact_id="F1", media_type="image/png", download_url=slack_host.url("/f"))
    failure = failed(fetcher_for(slack_host).fetch(ref))
    assert failure.reason == "redirect_refused", failure.message
    assert len(slack_host.requests) == 1  # nothing was fetched from the target


@pytest.mark.slow
@pytest.mark.parametrize(
    "answer",
    [
        ["127.0.0.1"],
        ["10.1.2.3"],
        ["192.168.0.10"],
        ["172.16.5.4"],
        ["169.254.169.254"],
        ["100.64.0.1"],
        ["0.0.0.0"],
        ["::1"],
        ["fe80::1"],
        ["fd00::1"],
        ["::ffff:127.0.0.1"],
        ["224.0.0.1"],
        ["93.184.216.34", "127.0.0.1"],  # one bad answer is enough to distrust the name
        [],
    ],
)
def test_a_slack_host_name_resolving_to_a_non_public_address_is_never_connected(
    answer: list[str],
) -> None:
    asked: list[tuple[str, int]] = []

    def resolve(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return answer

    fetcher = MediaFetcher(token=TOKEN, resolve=resolve, timeout=2.0)
    ref = FileRef(artifact_id="F1", media_type="image/png", download_url=SLACK_URL)
    failure = failed(fetcher.fetch(ref))
    assert failure.reason == "refused_address", failure.message
    assert failure.message == (
        "files.slack.com resolves to a non-public address, so nothing was fetched"
    )
    assert asked == [("files.slack.com", 443)]


def test_public_addresses_pass_the_check() -> None:
    answer = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    assert public_addresses("files.slack.com", 443, lambda h, p: answer) == answer


@given(st.ip_addresses())
def test_the_check_agrees_with_the_standard_librarys_idea_of_public(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    mapped = getattr(address, "ipv4_mapped", None)
    effective = mapped or address
    public = effective.is_global and not effective.is_multicast
    try:
        public_addresses("h", 443, lambda h, p: [str(address)])
    except NotPublic:
        assert not public
    else:
        assert public


class DripServer:
    """Answers 200 with a Content-Length, then sends one byte every ``every`` seconds."""

    def __init__(self, every: float = 0.2, size: int = 200) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.hostport = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._every, self._size = every, size
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.recv(65536)
            head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {self._size}\r\n\r\n"
            try:
                connection.sendall(head.encode())
                for _ in range(self._size):
                    if self._stop.wait(self._every):
                        return
                    connection.sendall(b"x")
            except OSError:
                return  # the client gave up: what the test wants

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(timeout=5)


@pytest.mark.slow
def test_a_server_dripping_bytes_cannot_stretch_a_download_past_its_deadline() -> None:
    drip = DripServer(every=0.2, size=200)  # 40 s to finish at that pace
    try:
        fetcher: Any = MediaFetcher(
            token=TOKEN,
            allow_http_for=frozenset({drip.hostport}),
            timeout=1.0,
            total_timeout=1.5,
        )
        ref = FileRef(
            artifact_id="F1", media_type="text/plain", download_url=f"http://{drip.hostport}/f"
        )
        started = time.monotonic()
        failure = failed(fetcher.fetch(ref))
        took = time.monotonic() - started
    finally:
        drip.close()
    assert failure.reason == "timeout" and failure.retryable
    assert failure.message == "the download from 127.0.0.1 took longer than 1.5 s"
    # Not a speed check: the drip would take 40 s; the deadline (plus at most one read's wait)
    # ends it long before.
    assert took < 10, took
