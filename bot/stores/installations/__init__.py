"""Slack OAuth installations: each workspace's bot token."""

from __future__ import annotations

__all__: list[str] = []
