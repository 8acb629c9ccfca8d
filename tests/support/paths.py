"""Where the suite finds the checkout: the one place that knows how deep tests/ sits, so a test
file can move between tests/unit, tests/process and tests/browser without a path changing."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA", "DEMO", "FIXTURES", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
DEMO = FIXTURES / "demo"
# Everything the suite reads that is not a fixture (calibration texts, Slack's payload samples).
DATA = ROOT / "tests" / "data"
