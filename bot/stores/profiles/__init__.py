"""Agent profiles for the query API: saved query settings by name. ``store``: the profile and
the interface; ``local``: a file in the data dir; ``redis``: one hash replicas share."""

from __future__ import annotations

from chanctx.bot.stores.profiles.store import (
    MAX_PROFILES,
    NAME_PATTERN,
    AgentProfile,
    ProfileFields,
    ProfileStore,
)

__all__ = ["MAX_PROFILES", "NAME_PATTERN", "AgentProfile", "ProfileFields", "ProfileStore"]
