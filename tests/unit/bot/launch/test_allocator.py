"""bot/launch/allocator.py: the glibc malloc settings `chanctx run` makes from inside the process."""

from __future__ import annotations

import pytest
from chanctx.bot.launch.allocator import limit_arenas


def test_arenas_are_capped_unless_the_environment_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_arenas() is True  # Debian's glibc takes mallopt(M_ARENA_MAX, 2)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas() is False  # the operator's setting stands
