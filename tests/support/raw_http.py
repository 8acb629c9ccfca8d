"""HTTP requests built byte by byte (any header bytes, any body), for hostile-client tests."""

from __future__ import annotations

import hashlib
import hmac
import socket
import time


def signature(secret: str, body: bytes, stamp: str) -> str:
    mac = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    return "v0=" + mac.hexdigest()


def raw_post(port: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> int | None:
    """POST exactly these header bytes and body; the status, or None if the server closed."""
    lines = [b"POST /slack/events HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    lines += [name + b": " + value for name, value in headers]
    if not any(name.lower() == b"content-length" for name, _ in headers):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                return None
            reply += chunk
    return int(reply.split(b" ", 2)[1])


def signed_with(
    secret: str, body: bytes, content_type: bytes = b"application/json"
) -> list[tuple[bytes, bytes]]:
    """Slack's headers for ``body``, signed with ``secret`` over its bytes."""
    stamp = str(int(time.time()))
    return [
        (b"Content-Type", content_type),
        (b"X-Slack-Request-Timestamp", stamp.encode()),
        (b"X-Slack-Signature", signature(secret, body, stamp).encode()),
    ]


def deep(levels: int) -> bytes:
    return b'{"type":"event_callback","event":' + b"[" * levels + b"]" * levels + b"}"
