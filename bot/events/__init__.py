"""Floor 2, events: the Bolt app, its listeners, the middleware that routes each event to its
workspace's runtime, the OAuth workspaces and the Socket Mode handler."""

from __future__ import annotations

__all__: list[str] = []
