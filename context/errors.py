"""The errors chanctx raises for bad input.

* ChanctxError          -- base of every error chanctx raises on purpose
  + InvalidTimestamp    -- a Slack ts that is not "<seconds>.<micros>"
  + BudgetError         -- a budget that cannot be honoured (negative, absurd)
  + RecipeError         -- an invalid context.yaml, or a recipe source that failed to load
"""

from __future__ import annotations

__all__ = ["BudgetError", "ChanctxError", "InvalidTimestamp", "RecipeError"]


class ChanctxError(Exception):
    """Base class: catch this to catch every error chanctx raises on purpose."""


class InvalidTimestamp(ChanctxError, ValueError):
    def __init__(self, value: object) -> None:
        super().__init__(f"Slack timestamp {value!r} is not of the form '<seconds>.<micros>'.")
        self.value = value


class BudgetError(ChanctxError, ValueError):
    pass


class RecipeError(ChanctxError, ValueError):
    """An invalid context.yaml, or a source with ``on_missing: error`` that could not be loaded.

    The message names the file, the source's index and the field; ``problems`` holds one line per
    problem when validation found several.
    """

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) if problems else (message,)
