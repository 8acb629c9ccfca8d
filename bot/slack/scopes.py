"""The bot scopes chanctx asks a workspace for when it is installed (``run --oauth``): exactly
the app manifest's (tests/test_slack_manifest.py checks they agree)."""

from __future__ import annotations

from typing import Final

__all__ = ["BOT_SCOPES"]

BOT_SCOPES: Final = (
    "app_mentions:read",
    "channels:history",
    "groups:history",
    "im:history",
    "mpim:history",
    "channels:read",
    "groups:read",
    "im:read",
    "mpim:read",
    "users:read",
    "chat:write",
    "reactions:read",
    "reactions:write",
    "files:read",
    "assistant:write",
    "commands",
    "pins:read",
)
