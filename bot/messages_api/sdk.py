"""The Anthropic SDK, imported when it is first needed rather than when chanctx starts.

``import anthropic`` builds the SDK's hundreds of pydantic models: about 2.5 s of a quiet core
and 10 s or more on a loaded one, longer than everything else a start does together. Nothing
before ``/readyz`` needs it (the channel store, the index and the query API do not talk to
Claude), so a start hands out a ``DeferredClient`` and, once it serves, ``warm()`` imports the
SDK on a background thread; the first answer that calls Claude finds it loaded, or waits only
for what is left of the import. The error classes are looked up the same way, in the ``except``
clauses that need them (an ``except`` expression is evaluated only when an exception reaches it).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anthropic

__all__ = [
    "DeferredClient",
    "anthropic_error",
    "api_error",
    "new_client",
    "resolved",
    "timeout_error",
    "warm",
]

logger = logging.getLogger("chanctx.serve")

_warming = threading.Lock()
_warm_started = False


def new_client(**options: Any) -> anthropic.Anthropic:
    """``anthropic.Anthropic(**options)``, importing the SDK first if it is not loaded yet."""
    import anthropic

    return anthropic.Anthropic(**options)


def api_error() -> type[anthropic.APIError]:
    import anthropic

    return anthropic.APIError


def anthropic_error() -> type[anthropic.AnthropicError]:
    import anthropic

    return anthropic.AnthropicError


def timeout_error() -> type[anthropic.APITimeoutError]:
    import anthropic

    return anthropic.APITimeoutError


def warm() -> None:
    """Import the SDK on a daemon thread (once a process): a start calls this when it is about
    to serve, so the import runs while the process waits for its first question."""
    global _warm_started
    with _warming:
        if _warm_started:
            return
        _warm_started = True
    threading.Thread(target=_import_sdk, name="chanctx-warm-anthropic", daemon=True).start()


def _import_sdk() -> None:
    try:
        import anthropic  # noqa: F401  (the import is the work)
    except Exception:  # the first answer imports it again and reports the error where it matters
        logger.exception("importing the anthropic SDK in the background failed")


class DeferredClient:
    """An ``anthropic.Anthropic`` built on first use, from the options it was given.

    Python's import lock makes a ``get()`` during ``warm()``'s import wait for that import
    rather than run a second one; the client itself is built once, under a lock."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def get(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                self._client = new_client(**self._options)
            return self._client

    @property
    def built(self) -> bool:
        return self._client is not None


def resolved(client: anthropic.Anthropic | DeferredClient) -> anthropic.Anthropic:
    """The client itself, built now if it was deferred."""
    return client.get() if isinstance(client, DeferredClient) else client
