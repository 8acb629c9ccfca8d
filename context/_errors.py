"""The errors chanctx raises for bad input.

* ChanctxError          -- base of every error chanctx raises on purpose
  + InvalidTimestamp    -- a Slack ts that is not "<seconds>.<micros>"
  + BudgetError         -- a budget that cannot be honoured (negative, absurd)
"""

from __future__ import annotations

__all__ = ["BudgetError", "ChanctxError", "InvalidTimestamp"]


class ChanctxError(Exception):
    """Base class: catch this to catch every error chanctx raises on purpose."""


class InvalidTimestamp(ChanctxError, ValueError):
    def __init__(self, value: object) -> None:
        super().__init__(f"Slack timestamp {value!r} is not of the form '<seconds>.<micros>'.")
        self.value = value


class BudgetError(ChanctxError, ValueError):
    pass
