"""Slack's rate tiers for the history reads, as Slack documents them for each kind of app.

``conversations.history`` and ``conversations.replies`` are Tier 3 (50+ calls a minute, pages
of up to 1,000; 200 recommended) for internal apps and Marketplace apps. Commercially
distributed apps outside the Marketplace get one call a minute of at most 15 messages (new
apps and installations since May 2025, existing installations from March 2026). ``--slack-tier``
picks one; the limiter's budgets and the page size follow from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["HISTORY_METHODS", "TIERS", "SlackTier", "TierName", "slack_tier"]

TierName = Literal["standard", "limited"]
HISTORY_METHODS: Final = ("conversations.history", "conversations.replies")
# The workspace budget over every method: under Tier 3's 50 so other clients of the same
# token keep some room.
_WORKSPACE_PER_MINUTE: Final = 40.0


@dataclass(frozen=True)
class SlackTier:
    """One tier: calls a minute for each history method and messages a call."""

    name: TierName
    history_per_minute: float
    page: int

    def per_method(self) -> dict[str, float]:
        """The limiter's per-method budgets, in calls a minute."""
        return dict.fromkeys(HISTORY_METHODS, self.history_per_minute)

    @property
    def workspace_per_minute(self) -> float:
        return _WORKSPACE_PER_MINUTE


TIERS: Final[Mapping[str, SlackTier]] = {
    "standard": SlackTier("standard", history_per_minute=50.0, page=200),
    "limited": SlackTier("limited", history_per_minute=1.0, page=15),
}


def slack_tier(name: str) -> SlackTier:
    """The tier called ``name``; a ValueError naming it otherwise."""
    try:
        return TIERS[name]
    except KeyError:
        raise ValueError(f"slack tier must be one of {', '.join(TIERS)}, got {name!r}") from None
