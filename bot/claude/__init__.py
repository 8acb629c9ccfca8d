"""Floor 2, the Claude session: one session per Slack thread on the Messages API, the system
prompt, the conversation's parts, the scratchpad and media in sessions."""

from __future__ import annotations

__all__: list[str] = []
