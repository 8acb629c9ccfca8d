"""The dependency rules of DESIGN.md, checked on the source.

- context <- cache <- tools <- bot (manifest_store is used by bot and uses context only);
- only bot/ imports the Slack and Anthropic SDKs;
- production code never imports the replay harness (bot/replay/) except the CLI's commands
  that run it (replay, record, fakes), which import it lazily inside the command;
- inside bot/, floors (``FLOORS``, bottom first): a module imports from its own floor and the
  floors below, never from a floor above, at module level or inside a function;
- no import cycle between any two modules of chanctx, function-level imports included;
- a ``_private`` module of bot/ is imported only from its own room.
Each failure names the file, the line and the arrow.
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# Floors inside bot/, bottom first. A module may import from its own floor and the floors below;
# an import running back up a floor (at module level or inside a function) fails, and so does a
# cycle between modules anywhere in chanctx. A room is a folder of bot/ (or a module at its top).
FLOORS: list[set[str]] = [
    {
        "slack",
        "messages_api",
        "stores",
    },  # the Slack client, the Messages API edge, the bot's stores
    {"core", "playbooks", "export"},  # turns, engine, runtime; playbooks; Slack export import
    {"events", "claude", "replicas"},  # the Bolt app and listeners; the Claude session; replicas
    {"server", "replay"},  # HTTP (events, query API, inspector); fakes and offline runs
    {"launch", "cli"},  # options, settings, wiring a run; the command line
]
FLOOR_OF = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["chanctx", *parts])


def imports_with_lines(path: Path) -> list[tuple[int, str, bool]]:
    """(line, module, at module level) for every chanctx import in ``path``; a ``from X import
    y`` counts as ``X.y`` when that is a module, else as ``X``."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        found += [(node.lineno, n, id(node) in top) for n in names if n.startswith("chanctx.")]
    return found


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for package in ALLOWED for p in sources(package)}


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def room_of(module: str) -> str:
    parts = module.split(".")  # chanctx.bot.<room>...
    return parts[2] if len(parts) > 2 else "__init__"


def test_every_room_of_bot_is_on_a_floor() -> None:
    rooms = {p.name for p in (ROOT / "bot").iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    rooms |= {p.stem for p in (ROOT / "bot").glob("*.py") if p.stem != "__init__"}
    assert rooms - {"__pycache__"} == set(FLOOR_OF), "a room of bot/ is missing from FLOORS"


@pytest.mark.slow
def test_no_import_runs_back_up_a_floor() -> None:
    modules = all_modules()
    arrows = []
    for name, path in modules.items():
        if not name.startswith("chanctx.bot.") or room_of(name) not in FLOOR_OF:
            continue
        for line, imported, _ in imports_with_lines(path):
            target = resolve(imported, modules)
            if target is None or not target.startswith("chanctx.bot."):
                continue
            here, there = FLOOR_OF[room_of(name)], FLOOR_OF.get(room_of(target), -1)
            if there > here:
                arrows.append(
                    f"{path.relative_to(ROOT)}:{line}: {room_of(name)} (floor {here}) -> "
                    f"{imported} ({room_of(target)}, floor {there})"
                )
    assert not arrows, "imports running back up a floor:\n" + "\n".join(arrows)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.slow
def test_no_import_cycle_between_modules() -> None:
    """Module-level and function-level imports alike: a cycle hidden in a function is still
    a cycle a reader has to untie."""
    modules = all_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    where: dict[tuple[str, str], str] = {}
    for name, path in modules.items():
        for line, imported, _ in imports_with_lines(path):
            target = resolve(imported, modules)
            # A package's __init__ re-exporting its own modules is not an arrow back.
            if target and target != name and not target.startswith(name + "."):
                graph[name].add(target)
                where.setdefault((name, target), f"{path.relative_to(ROOT)}:{line}")
    found = cycles(graph)
    lines = []
    for component in found:
        members = set(component)
        lines += [
            f"{where[(a, b)]}: {a} -> {b}" for a in component for b in sorted(graph[a] & members)
        ]
    assert not found, "import cycles:\n" + "\n".join(lines)


def test_a_cycle_and_a_back_arrow_are_caught() -> None:
    """The checks above can fail: a made-up graph with a cycle, and a made-up arrow up."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert FLOOR_OF["slack"] < FLOOR_OF["core"] < FLOOR_OF["events"] < FLOOR_OF["server"]
    assert FLOOR_OF["server"] < FLOOR_OF["launch"]


@pytest.mark.slow
def test_no_room_of_bot_imports_another_rooms_private_module() -> None:
    """What another room uses is public: a ``_private`` module stays inside its own room."""
    modules = all_modules()
    offenders = []
    for name, path in modules.items():
        if not name.startswith("chanctx.bot."):
            continue
        for line, imported, _ in imports_with_lines(path):
            target = resolve(imported, modules)
            if target is None or not target.startswith("chanctx.bot."):
                continue
            private = any(part.startswith("_") for part in target.split(".")[2:])
            if private and room_of(target) != room_of(name):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name} -> {target}")
    assert not offenders, "private modules used outside their room:\n" + "\n".join(offenders)
