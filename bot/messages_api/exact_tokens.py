"""Exact token counts from Anthropic's ``count_tokens`` endpoint, with an offline fallback.

``ExactCounter`` asks the API once per distinct text (an LRU cache keyed by the text), subtracts
the fixed per-request frame so the result is *content* tokens (what the offline counter and the
calibration set count, and what budgets sum piece by piece), and never lets the network break a
budget: on any API error or timeout it logs one warning and answers with the offline count,
then leaves the API alone for a cool-down before trying again.

``make_counter`` picks the exact counter when an API key is configured, the offline counter
otherwise. Only ``bot/`` imports the Anthropic SDK; the rest of the project sees a
``context.tokens.TokenCounter``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from cachetools import LRUCache
from chanctx.bot.messages_api.sdk import anthropic_error, new_client
from chanctx.context.tokens import TokenCounter, default_counter

if TYPE_CHECKING:
    import anthropic

__all__ = ["ExactCounter", "make_counter"]

log = logging.getLogger(__name__)

# After a failure, answer offline for this long before calling the API again: a down or
# rate-limited API must not cost a timeout on every one of the many pieces a budget counts.
COOL_DOWN_SECONDS: Final = 30.0
# The one-character probe used to measure the per-request frame (it is one content token in
# every Claude tokenizer).
_PROBE: Final = "a"


class ExactCounter:
    """``TokenCounter`` backed by ``client.messages.count_tokens``, cached, failing soft."""

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str,
        fallback: TokenCounter | None = None,
        timeout: float = 2.0,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # One attempt per call with a short timeout: the SDK's default retries with back-off
        # would stall a budget for tens of seconds, and the fallback is always at hand.
        self._client = client.with_options(timeout=timeout, max_retries=0)
        self.model = model
        self.fallback: TokenCounter = fallback if fallback is not None else default_counter(model)
        self._cache: LRUCache[str, int] = LRUCache(maxsize=cache_size)
        self._frame: int | None = None
        self._clock = clock
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                return cached
            if self._clock() < self._retry_at:
                return self.fallback.count(text)
        # The network call runs outside the lock so concurrent counters do not queue behind it.
        try:
            frame = self._frame_tokens()
            tokens = max(self._request(text) - frame, 0)
        except anthropic_error() as exc:
            self._failed(exc)
            return self.fallback.count(text)
        with self._lock:
            self._cache[text] = tokens
        return tokens

    def _request(self, text: str) -> int:
        result = self._client.messages.count_tokens(
            model=self.model, messages=[{"role": "user", "content": text}]
        )
        return int(result.input_tokens)

    def _frame_tokens(self) -> int:
        """The fixed per-request overhead, measured once: count("a") - 1."""
        if self._frame is None:
            self._frame = max(self._request(_PROBE) - 1, 0)
        return self._frame

    def _failed(self, exc: anthropic.AnthropicError) -> None:
        with self._lock:
            self._retry_at = self._clock() + COOL_DOWN_SECONDS
        # Type and status only: an exception's message or request may echo headers or content.
        status = getattr(exc, "status_code", None)
        detail = f"HTTP {status}" if status is not None else type(exc).__name__
        log.warning(
            "count_tokens failed (%s); using the offline count for %.0f s",
            detail,
            COOL_DOWN_SECONDS,
        )

    def __repr__(self) -> str:
        return f"ExactCounter(model={self.model!r})"


def make_counter(
    model: str, *, api_key: str | None = None, base_url: str | None = None
) -> TokenCounter:
    """Exact counts when an API key is configured (argument or ``ANTHROPIC_API_KEY``), else the
    offline counter for ``model``'s tokenizer family."""
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        return default_counter(model)
    client = new_client(api_key=key, base_url=base_url)
    return ExactCounter(client, model=model)
