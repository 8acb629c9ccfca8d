"""Token counting. INTERIM: a deliberately pessimistic estimator until the calibrated one lands."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["TokenCounter", "default_counter"]


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class _Interim:
    def count(self, text: str) -> int:
        return (len(text.encode("utf-8")) + 1) // 2


def default_counter(model: str | None = None) -> TokenCounter:
    return _Interim()
