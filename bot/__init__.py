"""The Slack edge and the runtime: intake, the context engine, the command line."""

from __future__ import annotations

__all__: list[str] = []
