"""Test-wide settings, and the markers a test gets from the folder it lives in.

A test under tests/process/ starts real processes (chanctx, redis-server, a writer killed with
kill -9) or fuzzes a served API; one under tests/browser/ drives Chromium. Both kinds are marked
by where they live, not by hand, so a file moved between kinds changes its markers with it; a
slow test elsewhere carries ``@pytest.mark.slow`` itself. tests/README.md says where a new test
goes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.support.paths import ROOT

# No timing asserts in tests: Hypothesis' per-example deadline is one, and it fails at random
# on a loaded 2-core machine. Speed is measured in bench/, not here.
settings.register_profile("chanctx", deadline=None)
# The fast subset (`-m "not slow"`) asks each property of fewer examples; the whole suite, the
# one CI runs, keeps Hypothesis' default of 100 and every count a test asks for itself.
FAST_EXAMPLES = 10
settings.register_profile("fast", deadline=None, max_examples=FAST_EXAMPLES)
settings.load_profile("chanctx")


def fast_subset(config: pytest.Config) -> bool:
    return (config.getoption("markexpr", "") or "").replace(" ", "") == "notslow"


def pytest_configure(config: pytest.Config) -> None:
    if fast_subset(config):
        settings.load_profile("fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the fast subset, a property that asks for more examples than the profile's gets the
    profile's: a test's own ``@settings(max_examples=300)`` outranks any profile, and those
    counts were most of the fast subset's time. The whole suite runs them in full."""
    if not fast_subset(config):
        return
    for item in items:
        test = getattr(item, "obj", None)
        test = getattr(test, "__func__", test)  # a test method: its function holds the settings
        chosen = getattr(test, "_hypothesis_internal_use_settings", None)
        if isinstance(chosen, settings) and chosen.max_examples > FAST_EXAMPLES:
            test._hypothesis_internal_use_settings = fewer(chosen)  # type: ignore[union-attr]
        # A state machine's TestCase carries its settings on the class.
        case = getattr(item, "cls", None)
        chosen = getattr(case, "settings", None)
        if isinstance(chosen, settings) and chosen.max_examples > FAST_EXAMPLES:
            case.settings = fewer(chosen)  # type: ignore[union-attr]


def fewer(chosen: settings) -> settings:
    return settings(chosen, max_examples=FAST_EXAMPLES)


# pytester runs small pytest sessions inside tests (tests/repo/test_suite_rules.py).
pytest_plugins = ["pytester"]

TESTS = ROOT / "tests"
# The kind folders whose tests are slow by nature, and the markers each gives its tests.
KIND_MARKERS = {"process": ("process", "slow"), "browser": ("browser", "slow")}


def kind_of(path: Path) -> str | None:
    """The kind folder (``unit``, ``process``, ``browser``, ``repo``) a test file lives in."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:  # a pytester session's file, outside the suite
        return None
    return parts[0] if len(parts) > 1 else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast subset does not even import the slow kinds' folders: every test there would be
    deselected, and importing them (Playwright, schemathesis, the process helpers) on each
    worker was most of the subset's time."""
    if fast_subset(config) and collection_path.is_dir() and collection_path.parent == TESTS:
        return collection_path.name in KIND_MARKERS or None
    return None


def pytest_itemcollected(item: pytest.Item) -> None:
    # Marked as each test is collected, before any plugin's pytest_collection_modifyitems (where
    # `-m "not slow"` deselects).
    for name in KIND_MARKERS.get(kind_of(item.path) or "", ()):
        item.add_marker(name)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: `-p no:xdist` runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadgroup`, a kind's tests run one after another on one worker, the unit
    tests spread over all the workers one by one.

    Each process test starts processes (or a browser) that must come up within their deadlines;
    two cores shared by several of them at once missed those deadlines, while one at a time they
    mostly wait, and the other workers take the unit tests meanwhile. pytest-xdist's own
    `xdist_group` marker would say this per test, but under pytest 9.2 it has no effect (xdist
    3.8 renames the test's node id through an attribute pytest no longer reads), so the grouping
    is by folder, here.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByKind(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            parts = nodeid.split("/")
            kind = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
            return kind if kind in KIND_MARKERS else nodeid

    return ByKind(config, log)
