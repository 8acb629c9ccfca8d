"""Agent profiles for the query API: saved query settings by name."""

from __future__ import annotations

__all__: list[str] = []
