"""No module of the installed packages grows past 500 lines: one past it holds two concepts,
and is split along the seam a reader would name (``bot/slack/web_calls.py`` out of
``slack_api.py``, ``bot/launch/option_values.py`` out of ``options.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("bot", "context", "tools", "cache", "manifest_store", "fixtures")
MOST = 500


def too_long(root: Path, packages: tuple[str, ...] = PACKAGES, most: int = MOST) -> list[str]:
    """Each Python file under ``packages`` longer than ``most`` lines, with its length."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > most:
                found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_no_product_module_is_over_500_lines() -> None:
    assert too_long(ROOT) == []


def test_the_rule_names_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "short.py").write_text("x = 1\n" * MOST)
    (tmp_path / "bot" / "long.py").write_text("x = 1\n" * (MOST + 1))
    assert too_long(tmp_path, ("bot",)) == [f"bot/long.py: {MOST + 1} lines"]
