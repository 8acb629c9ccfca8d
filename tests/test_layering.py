"""The dependency rule of DESIGN.md, checked on the source: context <- cache <- tools <- bot."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "context": set(),
    "cache": {"context"},
    "tools": {"context", "cache"},
    "manifest_store": {"context"},
    "bot": {"context", "cache", "tools", "manifest_store"},
}
SDKS = {"slack_bolt", "slack_sdk", "anthropic"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_dependencies_point_one_way(package: str) -> None:
    own = set(ALLOWED)
    for path in sorted((ROOT / package).rglob("*.py")):
        roots = imported_roots(path)
        forbidden = (roots & own) - ALLOWED[package] - {package}
        assert not forbidden, f"{path.relative_to(ROOT)} imports {sorted(forbidden)}"
        if package != "bot":
            assert not roots & SDKS, (
                f"{path.relative_to(ROOT)} imports an SDK: {sorted(roots & SDKS)}"
            )
