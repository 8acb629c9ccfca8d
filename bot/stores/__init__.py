"""Floor 0, the bot's own stores, each one folder with its interface and its ``local`` and
``redis`` backends side by side: API profiles, assistant pane threads, OAuth installations; and
the Redis connection they share (``redis_link``)."""

from __future__ import annotations

__all__: list[str] = []
