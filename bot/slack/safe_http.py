"""HTTPS for file downloads that cannot be turned against the machine it runs on.

A Slack file host name is checked before the token is sent (``media.py``); this module makes sure
the name cannot lead somewhere else. Names are resolved here, every address they resolve to must
be public (not loopback, private, link-local, shared, reserved or multicast: what
``ipaddress``'s ``is_global`` says), and the connection goes to the address that was checked, so
a DNS answer that changes between the check and the connect (rebinding) changes nothing. TLS
still verifies the certificate against the host name.

Behind an HTTPS proxy (``https_proxy`` in the environment) the proxy resolves and connects; it
is the operator's, so its own address is not checked.

Reads have a deadline too: ``read_within`` takes at most one ``recv`` at a time with a timeout
no longer than what is left, so a server that trickles one byte a second cannot stretch a
download past its total deadline.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
import urllib.request
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = [
    "LOOPBACK_NAMES",
    "KeepResponses",
    "NoRedirects",
    "NotPublic",
    "Resolver",
    "VettedHTTPSHandler",
    "loopback_hostport",
    "public_addresses",
    "read_within",
    "system_resolver",
]

Resolver = Callable[[str, int], list[str]]


class NotPublic(OSError):
    """The host resolved to an address a download must never reach."""


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def public_addresses(host: str, port: int, resolve: Resolver) -> list[str]:
    """The addresses ``host`` resolves to, all of them public; NotPublic if any is not (one
    bad answer is enough to distrust the name)."""
    addresses = resolve(host, port)
    if not addresses:
        raise NotPublic(f"{host} did not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
            raise NotPublic(f"{host} resolves to a non-public address")
    return addresses


class _VettedHTTPSConnection(http.client.HTTPSConnection):
    resolve: Resolver = staticmethod(system_resolver)

    def connect(self) -> None:
        if getattr(self, "_tunnel_host", None):  # through the operator's proxy
            super().connect()
            return
        last: OSError | None = None
        for address in public_addresses(self.host, self.port, self.resolve):
            try:
                source: tuple[str, int] | None = getattr(self, "source_address", None)
                raw = socket.create_connection((address, self.port), self.timeout, source)
            except OSError as error:
                last = error
                continue
            context: ssl.SSLContext = self._context  # type: ignore[attr-defined]
            self.sock = context.wrap_socket(raw, server_hostname=self.host)
            return
        raise last or NotPublic(f"could not connect to {self.host}")


class VettedHTTPSHandler(urllib.request.HTTPSHandler):
    """urllib's HTTPS handler, connecting only to public addresses it checked itself."""

    def __init__(self, resolve: Resolver = system_resolver) -> None:
        super().__init__(context=ssl.create_default_context())
        self._resolve = resolve

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        resolve = self._resolve

        def connection(host: str, **kwargs: Any) -> http.client.HTTPSConnection:
            made = _VettedHTTPSConnection(host, **kwargs)
            made.resolve = resolve
            return made

        context = self._context  # type: ignore[attr-defined]
        return self.do_open(connection, req, context=context)


def read_within(
    response: http.client.HTTPResponse, size: int, *, deadline: float, timeout: float
) -> bytes:
    """At most ``size`` bytes with one ``recv``; TimeoutError once ``deadline`` (monotonic)
    has passed or nothing came for ``timeout`` seconds."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the download deadline passed")
    sock = getattr(getattr(response.fp, "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        sock.settimeout(max(0.01, min(timeout, left)))
    return response.read1(size)


LOOPBACK_NAMES: Final = frozenset({"localhost"})  # besides loopback addresses


# --- plumbing of a safe download: no redirect followed, HTTP only to loopback test servers


class KeepResponses(urllib.request.HTTPErrorProcessor):
    """Hand every response back as is: no HTTPError, and so no automatic redirect either
    (urllib follows redirects from its error handlers, which this never calls)."""

    def http_response(self, request: urllib.request.Request, response: Any) -> Any:
        return response

    https_response = http_response


class NoRedirects(urllib.request.HTTPRedirectHandler):
    # Belt and braces: even if an error handler ran, it would not follow a redirect.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def loopback_hostport(value: str) -> str:
    """Validate an ``allow_http_for`` entry: ``127.0.0.1:PORT``, ``[::1]:PORT``, ``localhost:PORT``."""
    parts = urlsplit(f"http://{value}")
    host, port = parts.hostname, parts.port
    if not host or port is None or parts.netloc != value or parts.username is not None:
        raise ValueError(f"allow_http_for takes 'host:port' entries, got {value!r}")
    if host not in LOOPBACK_NAMES:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"allow_http_for is for loopback test servers only, got {value!r}")
    return value.lower()
