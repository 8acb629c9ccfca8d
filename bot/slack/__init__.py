"""Floor 0, the Slack client: the rate-limited Web API client, event intake into messages, the
poster, file downloads, Markdown for replies, membership checks and the request envelope."""

from __future__ import annotations

__all__: list[str] = []
