"""Floor 1, the core: the turn vocabulary (``Turn``, ``TurnResult``, ``AnswerRunner``), the
context engine a channel's history is kept in, the runtime that answers a turn, the read-only
channel view, the recipe runner and embedding similarity."""

from __future__ import annotations

__all__: list[str] = []
