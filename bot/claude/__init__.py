"""The Claude side: one session per Slack thread on the Messages API, the system prompt, the
answer pipeline, token counting, media in sessions and the context recipe runner."""

from __future__ import annotations

__all__: list[str] = []
