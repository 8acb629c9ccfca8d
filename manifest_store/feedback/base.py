"""What people said about the bot's answers: reactions and feedback-button clicks, per turn.

``FeedbackStore`` is what the bot needs of a store of them, whatever holds it. The playbook reads
the votes of a turn to credit or blame what was in its context. The rules every backend keeps:
only the reactions the operator chose count, a reaction taken back no longer counts, and a
person holds one button verdict per answer (a click on the other button takes the first back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, Protocol

__all__ = ["HARMFUL", "HELPFUL", "FeedbackStore", "Verdict", "Vote", "verdict_of"]

# Reactions that say an answer helped or did not (Slack's names, skin tones stripped).
HELPFUL: Final = frozenset({"+1", "thumbsup", "white_check_mark", "heavy_check_mark", "tada"})
HARMFUL: Final = frozenset({"-1", "thumbsdown", "x", "no_entry_sign"})

Verdict = Literal["helpful", "harmful"]


def verdict_of(
    reaction: str, helpful: frozenset[str] = HELPFUL, harmful: frozenset[str] = HARMFUL
) -> Verdict | None:
    """``helpful`` / ``harmful`` for a reaction name (``+1::skin-tone-3`` counts as ``+1``)."""
    name = reaction.split("::", 1)[0]
    if name in helpful:
        return "helpful"
    if name in harmful:
        return "harmful"
    return None


@dataclass(frozen=True)
class Vote:
    turn: str
    user: str
    verdict: Verdict
    added: bool  # False: the person took the reaction back
    source: str  # "reaction:<name>" or "button:helpful" / "button:harmful"
    at: float


class FeedbackStore(Protocol):
    """Answers the bot posted, and the votes on them. Every method is safe from any thread."""

    def record_answer(self, channel: str, ts: str, turn: str) -> None:
        """A message the bot posted for ``turn``: reactions on it count for that turn."""
        ...

    def turn_of(self, channel: str, ts: str) -> str | None: ...

    def record_reaction(
        self, channel: str, ts: str, user: str, reaction: str, *, added: bool
    ) -> Vote | None:
        """A reaction on a message: a vote if it is one of our answers and a verdict emoji."""
        ...

    def record_click(
        self, channel: str, ts: str, user: str, *, helpful: bool, turn: str | None = None
    ) -> Vote | None:
        """A click on an answer's feedback buttons; ``turn`` is the one the button's block
        names, used when the store no longer knows the message (only within ``channel``)."""
        ...

    def votes(self, turn: str) -> list[Vote]: ...

    def tally(self, turn: str) -> dict[Verdict, int]:
        """People who currently hold each verdict on ``turn``."""
        ...

    def close(self) -> None: ...
