"""The Slack edge: the Bolt app and its listeners, event intake, the rate-limited Web API client,
file downloads, HTTP serving and reply formatting."""

from __future__ import annotations

__all__: list[str] = []
