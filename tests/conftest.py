"""Test-wide settings."""

from __future__ import annotations

from hypothesis import settings

# No timing asserts in tests: Hypothesis' per-example deadline is one, and it fails at random
# on a loaded 2-core machine. Speed is measured in bench/, not here.
settings.register_profile("chanctx", deadline=None)
settings.load_profile("chanctx")

# pytester runs small pytest sessions inside tests (tests/test_suite_rules.py).
pytest_plugins = ["pytester"]
