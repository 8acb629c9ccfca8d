"""Floor 0, the Messages API edge: what a request may hold (limits, media checks, repairs),
fitting a request within them, and exact token counts from the API."""

from __future__ import annotations

__all__: list[str] = []
