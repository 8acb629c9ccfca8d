"""bench/: every module is registered for ``python -m bench all`` and has its RESULTS.md section.

Reads the sources and RESULTS.md only: no benchmark runs here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench._registry import BENCHES
from bench._results import sections
from tests.support.paths import ROOT

BENCH = ROOT / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_"))


def test_every_bench_module_is_registered_and_every_registered_one_exists() -> None:
    assert MODULES, "no bench modules found"
    assert sorted(BENCHES) == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_each_module_has_its_sections_in_results(module: str) -> None:
    written = sections()
    source = (BENCH / f"{module}.py").read_text()
    for title in BENCHES.get(module, ()):
        assert f'"{title}"' in source, f"bench/{module}.py never writes the section {title!r}"
        assert title in written, (
            f"bench/RESULTS.md has no section {title!r} (run python -m bench {module})"
        )
    assert BENCHES.get(module), f"bench/{module}.py registers no section in bench/_registry.py"


def test_every_section_belongs_to_a_registered_module() -> None:
    registered = {title for titles in BENCHES.values() for title in titles}
    assert set(sections()) <= registered


def test_sections_are_found_the_way_write_section_writes_them(tmp_path: Path) -> None:
    text = (
        "# Benchmark results\n\n<!-- A:start -->\n## A\n\n_Measured x._\n\nbody a\n<!-- A:end -->\n"
        "\n<!-- B (two):start -->\n## B (two)\n\nbody b\n<!-- B (two):end -->\n"
    )
    found = sections(text)
    assert list(found) == ["A", "B (two)"]
    assert "body a" in found["A"] and "body a" not in found["B (two)"]


@pytest.mark.slow
def test_the_runner_lists_every_registered_module_and_refuses_an_unknown_one() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "bench", "list"], cwd=ROOT, capture_output=True, text=True
    )
    assert listed.returncode == 0
    assert [line.split(":")[0] for line in listed.stdout.splitlines()] == list(BENCHES)
    unknown = subprocess.run(
        [sys.executable, "-m", "bench", "no_such_bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert unknown.returncode == 2
    assert "unknown bench 'no_such_bench'" in unknown.stderr


def test_every_section_says_when_at_which_commit_and_on_what_machine() -> None:
    stamp = re.compile(
        r"^_Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC at commit [0-9a-f]{7,}( with local changes)? "
        r"on \d+ cores \(.+\), [\d.]+ GiB, \S+ \S+, Python \d+\.\d+\.\d+\._$",
        re.M,
    )
    for name, body in sections().items():
        assert stamp.search(body), f"section {name!r} has no full stamp (rerun python -m bench all)"
