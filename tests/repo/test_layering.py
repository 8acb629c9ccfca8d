"""The dependency rules of DESIGN.md, checked on the source.

- context <- cache <- tools <- bot (manifest_store is used by bot and uses context only);
- only bot/ imports the Slack and Anthropic SDKs;
- production code never imports the replay harness (bot/replay/) except the CLI's commands
  that run it (replay, record, fakes), which import it lazily inside the command.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import ROOT

ALLOWED = {
    "context": set(),
    "cache": {"context"},
    "tools": {"context", "cache"},
    "manifest_store": {"context"},
    "bot": {"context", "cache", "tools", "manifest_store"},
}
SDKS = {"slack_bolt", "slack_sdk", "anthropic"}
# Modules allowed to import chanctx.bot.replay: the harness itself and the CLI entry point.
REPLAY_USERS = {ROOT / "bot" / "cli.py"}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (chanctx uses absolute imports)"
            modules.add(node.module or "")
    return modules


def layers(modules: set[str]) -> set[str]:
    return {m.split(".")[1] for m in modules if m.startswith("chanctx.") and m.count(".") >= 1}


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_dependencies_point_one_way(package: str) -> None:
    files = sources(package)
    assert files, f"{package}/ has no Python files"
    for path in files:
        modules = imported_modules(path)
        forbidden = layers(modules) - ALLOWED[package] - {package}
        assert not forbidden, f"{path.relative_to(ROOT)} imports {sorted(forbidden)}"
        roots = {m.split(".")[0] for m in modules}
        assert "bot" not in roots and "context" not in roots, (
            f"{path.relative_to(ROOT)} imports a pre-namespace name; use chanctx.*"
        )
        if package != "bot":
            assert not roots & SDKS, (
                f"{path.relative_to(ROOT)} imports an SDK: {sorted(roots & SDKS)}"
            )


def test_production_code_never_imports_the_replay_harness() -> None:
    harness = ROOT / "bot" / "replay"
    offenders = []
    for package in ALLOWED:
        for path in sources(package):
            if path.is_relative_to(harness) or path in REPLAY_USERS:
                continue
            if any(m.startswith("chanctx.bot.replay") for m in imported_modules(path)):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"production modules import bot/replay/: {offenders}"


def test_the_cli_imports_the_harness_only_inside_its_commands() -> None:
    tree = ast.parse((ROOT / "bot" / "cli.py").read_text())
    top_level = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert not [n.module for n in top_level if (n.module or "").startswith("chanctx.bot.replay")]
