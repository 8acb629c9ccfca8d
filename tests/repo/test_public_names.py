"""Public names are public: what one package uses of another is a public module with ``__all__``.

A module whose name starts with ``_`` is its package's own business: the package (and its
subpackages) may import it, no other package may, so it can be renamed or split without
touching anyone else. A module another package needs is public, and says with ``__all__``
what it offers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PRODUCT = ("bot", "context", "tools", "cache", "manifest_store", "fixtures")
# The packages whose public modules must each declare ``__all__``.
DECLARED = ("context", "tools", "cache", "manifest_store")


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def package_of(path: Path) -> str:
    """The dotted package a product file belongs to, e.g. ``chanctx.cache.rate_limit``."""
    return ".".join(("chanctx", *path.relative_to(ROOT).parent.parts))


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """Every ``chanctx`` name an import reaches, with its line (``from a import b`` gives a.b)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "chanctx"]


def owning_package(parts: list[str]) -> str:
    """The package of ``chanctx.a.b``: itself if it is a folder, else the folder its module is in
    (a private name in a module belongs to that module's package)."""
    if len(parts) > 1 and not (ROOT.joinpath(*parts[1:])).is_dir():
        parts = parts[:-1]
    return ".".join(parts)


def private_crossings(package: str, tree: ast.AST) -> list[str]:
    """Imports in ``package`` of a ``_private`` module (or name) that belongs to another package.

    The owner of ``chanctx.a.b._x.y`` is package ``chanctx.a.b`` (of ``chanctx.a.b.mod._name``,
    the package of ``mod``); the owner itself and its subpackages may import it.
    """
    crossings = []
    for line, name in imported(tree):
        parts = name.split(".")
        for index, part in enumerate(parts):
            if _is_private(part):
                owner = owning_package(parts[:index])
                if package != owner and not package.startswith(owner + "."):
                    crossings.append(f"line {line}: {name}")
                break
    return crossings


def declares_all(tree: ast.Module) -> bool:
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def product_files(*packages: str) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


def is_public(path: Path) -> bool:
    """A public module: no ``_private`` part in its path (``__init__.py`` counts as public)."""
    parts = (*path.relative_to(ROOT).parent.parts, path.stem)
    return not any(_is_private(part) for part in parts)


@pytest.mark.slow
def test_no_private_module_is_imported_across_packages() -> None:
    offenders = []
    for path in product_files(*PRODUCT):
        crossings = private_crossings(package_of(path), ast.parse(path.read_text(), str(path)))
        offenders += [f"{path.relative_to(ROOT)} {c}" for c in crossings]
    assert not offenders, "private modules used by another package:\n" + "\n".join(offenders)


def test_every_public_module_of_the_lower_packages_declares_all() -> None:
    files = [path for path in product_files(*DECLARED) if is_public(path)]
    assert len(files) > len(DECLARED), "the lower packages should have public modules"
    missing = [
        str(path.relative_to(ROOT))
        for path in files
        if not declares_all(ast.parse(path.read_text(), str(path)))
    ]
    assert not missing, f"public modules without __all__: {missing}"


@pytest.mark.parametrize(
    ("package", "source", "crossing"),
    [
        ("chanctx.tools", "from chanctx.context._render import text_of", True),
        ("chanctx.tools", "from chanctx.context import _render", True),
        ("chanctx.tools", "import chanctx.context._render", True),
        ("chanctx.bot.slack", "from chanctx.bot.claude._x import y", True),
        ("chanctx.bot", "from chanctx.bot.claude._x import y", True),
        ("chanctx.context", "from chanctx.context._render import text_of", False),
        ("chanctx.cache.rate_limit", "from chanctx.cache._clock import Clock", False),
        ("chanctx.tools", "from chanctx.context.render import text_of", False),
        ("chanctx.tools", "from chanctx.context import __version__", False),
        ("chanctx.tools", "from os import _exit", False),
        ("chanctx.tools", "from chanctx.tools._index import ChannelIndex", False),
        ("chanctx.tools", "from chanctx.context.budget import _private_name", True),
        ("chanctx.context.recipe", "from chanctx.context.recipe._models import _BY_TYPE", False),
        ("chanctx.context", "from chanctx.context.recipe._models import Recipe", True),
        ("chanctx.bot", "from chanctx.context.recipe._models import Recipe", True),
    ],
)
def test_the_rule_sees_what_crosses(package: str, source: str, crossing: bool) -> None:
    assert bool(private_crossings(package, ast.parse(source))) is crossing


@pytest.mark.parametrize(
    ("source", "declared"),
    [
        ('__all__ = ["a"]', True),
        ('__all__: list[str] = ["a"]', True),
        ("all_ = []", False),
        ('def f() -> None:\n    __all__ = ["a"]', False),
    ],
)
def test_all_is_found_only_at_module_level(source: str, declared: bool) -> None:
    assert declares_all(ast.parse(source)) is declared


# A planning document cited by name ("seed 003", "DESIGN.md") is one a reader of this repository
# cannot open; docs/design.md says where each part comes from.
# (docs/design.md, lower case, is this repository's own and may be cited.)
PLANNING = re.compile(r"(?i:\bseeds? \d{3}\b|\bseeds? \d{3}/\d{3}\b)|\bDESIGN\.md\b")


def test_the_lower_packages_state_their_contracts_in_their_own_words() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in product_files(*DECLARED, "fixtures")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if PLANNING.search(line)
    ]
    assert not cited, "planning documents cited in code:\n" + "\n".join(cited)


def test_the_citation_rule_sees_a_seed() -> None:
    assert PLANNING.search("Token budgeting (seed 003) with seed 001's rules")
    assert PLANNING.search("see DESIGN.md")
    assert not PLANNING.search("docs/design.md says why")
    assert not PLANNING.search("a random seed for the fixture, 42")
