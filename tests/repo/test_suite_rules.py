"""Rules the suite holds itself to: what it reads lives in the project, and an empty
parametrization fails instead of passing silently."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_a_parametrization_with_zero_cases_fails_the_run(pytester: pytest.Pytester) -> None:
    # The project's own setting, as pyproject.toml holds it.
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    mark = options["empty_parameter_set_mark"]
    pytester.makepyprojecttoml(f'[tool.pytest.ini_options]\nempty_parameter_set_mark = "{mark}"\n')
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("sample", [])
        def test_each_sample(sample):
            assert sample
        """
    )
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*Empty parameter set*test_each_sample*"])


def _files_matching(pattern: str) -> list[str]:
    found = re.compile(pattern)
    return [
        p.name for p in (ROOT / "tests").glob("*.py")
        if p.name != Path(__file__).name and found.search(p.read_text())
    ]  # fmt: skip


def test_no_test_reads_outside_the_project() -> None:
    """The suite must pass in a clone with nothing beside it: no path climbs out of the repo."""
    beside = "sha" + "red"  # the folder beside the checkout, spelled so this file is no match
    offenders = _files_matching(rf"parents\[2\]|\.\./{beside}|\"{beside}\"|'{beside}'")
    assert not offenders, f"tests reading outside the project: {offenders}"


def test_nothing_is_skipped() -> None:
    """Missing things are installed or started by the suite, never a reason to skip."""
    offenders = _files_matching(
        r"pytest\.skip\(|mark\.skipif|mark\.skip\b|importorskip|mark\.xfail"
    )
    assert not offenders, f"tests that skip: {offenders}"
