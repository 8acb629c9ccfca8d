"""Slack's request signature, checked on the bytes as they arrived.

Slack signs ``v0:<timestamp>:<body>`` with the app's signing secret (HMAC-SHA256) and sends
``X-Slack-Signature: v0=<hex>``. slack_sdk's verifier takes the body as text and compares
strings, so a body that is not UTF-8 or a signature with non-ASCII characters made it raise, and
the client got a 500. Here everything is bytes: whatever a client sends is either a valid
signature or not one (a 401), never an error. Slack only ever sends UTF-8 JSON or form bodies,
so a body that is not UTF-8 is not a valid signature either.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Final

__all__ = ["MAX_AGE", "BytesVerifier"]

MAX_AGE: Final = 5 * 60  # seconds: Slack's own replay window
_MAX_STAMP: Final = 12  # digits of a Unix time in seconds, with room to spare


class BytesVerifier:
    """Whether a request carries a fresh, valid Slack signature; never raises."""

    def __init__(self, secret: str, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret.encode("utf-8")
        self._clock = clock

    def is_valid(self, body: bytes, timestamp: str | None, signature: str | None) -> bool:
        if not timestamp or not signature:
            return False
        stamp, sent = _ascii(timestamp), _ascii(signature)
        if stamp is None or sent is None or not stamp.isdigit() or len(stamp) > _MAX_STAMP:
            return False
        if abs(self._clock() - int(stamp)) > MAX_AGE:
            return False
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return False
        digest = hmac.new(self._secret, b"v0:" + stamp + b":" + body, hashlib.sha256)
        return hmac.compare_digest(b"v0=" + digest.hexdigest().encode("ascii"), sent)


def _ascii(value: str) -> bytes | None:
    try:
        return value.strip().encode("ascii")
    except UnicodeEncodeError:
        return None
