"""What the bot needs of a store of channel playbooks: the interface every backend meets.

A backend stores results, never instructions to redo: a bullet's whole state after a change, a
bullet pruned, an id merged into another, the bullets a turn used and the votes already counted.
Loading folds them in order, so what a store holds loads the same whatever rules wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from chanctx.context.playbook import Bullet, Delta

__all__ = ["PlaybookStore"]


class PlaybookStore(Protocol):
    """What the bot needs of a playbook store, whatever holds it.

    ``apply`` folds a curator's deltas into the channel's playbook and returns the ids it
    changed; ``record_use`` remembers which bullets a turn put in front of Claude (and, for the
    assistant pane, the channel whose playbook they came from), so ``vote`` can credit or blame
    them: each person's verdict on a turn counts once.
    """

    def bullets(self, channel: str) -> list[Bullet]: ...
    def channels(self) -> list[str]: ...
    def apply(self, channel: str, deltas: Sequence[Delta], now: float) -> list[str]: ...
    def record_use(
        self, channel: str, turn: str, ids: Sequence[str], *, answered_in: str | None = ...
    ) -> None: ...
    def used_by(self, channel: str, turn: str) -> list[str]: ...
    def vote(
        self, channel: str, turn: str, user: str, *, helpful: bool, now: float
    ) -> list[str]: ...
    def replace(self, channel: str, bullets: Sequence[Bullet]) -> None: ...
    def close(self) -> None: ...
