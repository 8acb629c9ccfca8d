"""Rules the suite holds itself to: what it reads lives in the project, an empty
parametrization fails instead of passing silently, every test lives in its kind's folder, and the
markers that pick the fast subset are the ones pytest knows."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.support.paths import ROOT


@pytest.mark.slow
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


TESTS = ROOT / "tests"
KINDS = {"unit", "process", "browser", "repo"}
# The one module that turns this file's place into the checkout's root (tests/support/paths.py).
PATHS = TESTS / "support" / "paths.py"


def _suite_files() -> list[Path]:
    """Every Python file of the suite but its data (tests/data holds what the tests read)."""
    return [p for p in TESTS.rglob("*.py") if not p.is_relative_to(TESTS / "data")]


def _files_matching(pattern: str) -> list[str]:
    found = re.compile(pattern)
    return [
        p.relative_to(TESTS).as_posix() for p in _suite_files()
        if p.resolve() != Path(__file__).resolve() and found.search(p.read_text())
    ]  # fmt: skip


def test_no_test_reads_outside_the_project() -> None:
    """The suite must pass in a clone with nothing beside it: no path climbs out of the repo, and
    only tests/support/paths.py works out where the checkout is from where a file sits."""
    beside = "sha" + "red"  # the folder beside the checkout, spelled so this file is no match
    offenders = _files_matching(rf"\.\./{beside}|\"{beside}\"|'{beside}'")
    assert not offenders, f"tests reading outside the project: {offenders}"
    climbing = [f for f in _files_matching(r"__file__\)\S*\.parents?\b") if TESTS / f != PATHS]
    assert not climbing, f"paths from __file__ (use tests.support.paths): {climbing}"
    from tests.support.paths import ROOT as root

    assert (root / "pyproject.toml").is_file() and root / "tests" == TESTS


def test_every_test_lives_in_its_kinds_folder() -> None:
    """tests/unit, tests/process, tests/browser or tests/repo (tests/README.md says which): a test
    file left flat in tests/ would run without the markers its kind gives."""
    misplaced = [
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("test_*.py")
        if not p.is_relative_to(TESTS / "data") and p.relative_to(TESTS).parts[0] not in KINDS
    ]
    assert not misplaced, f"test files outside tests/{{{','.join(sorted(KINDS))}}}: {misplaced}"


def bot_rooms() -> set[str]:
    """The rooms of bot/: its folders that hold Python (``cli.py``, a module at the top, belongs
    with ``launch``, the floor it sits on)."""
    bot = ROOT / "bot"
    return {p.name for p in bot.iterdir() if p.is_dir() and any(p.rglob("*.py"))}


def misplaced_bot_tests(tests: Path, rooms: set[str]) -> list[str]:
    """Test files of tests/<kind>/bot/ that sit in no room folder: flat in bot/, or in a folder
    named for no room of bot/ (an old room's name, a typo)."""
    misplaced = []
    for kind in sorted(KINDS):
        for path in sorted((tests / kind / "bot").rglob("test_*.py")):
            inside = path.relative_to(tests / kind / "bot").parts
            if len(inside) == 1 or inside[0] not in rooms:
                misplaced.append(path.relative_to(tests).as_posix())
    return misplaced


def test_every_bot_test_lives_in_the_room_it_tests() -> None:
    """tests/unit/bot/, tests/process/bot/ and tests/browser/bot/ mirror bot/'s rooms
    (tests/README.md says which room a test belongs to): a test file left flat in bot/, or in a
    folder named for a room bot/ no longer has, is found here."""
    misplaced = misplaced_bot_tests(TESTS, bot_rooms())
    assert not misplaced, f"bot tests outside a room folder of bot/: {misplaced}"


def test_a_flat_bot_test_or_a_folder_of_no_room_is_found(tmp_path: Path) -> None:
    # The rule above, on a made-up suite: it must be able to fail.
    for name in (
        "unit/bot/slack/test_ok.py",
        "unit/bot/test_flat.py",
        "process/bot/shared/test_old.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert misplaced_bot_tests(tmp_path, {"slack", "stores"}) == [
        "process/bot/shared/test_old.py",
        "unit/bot/test_flat.py",
    ]
    assert {"slack", "events", "replicas", "launch"} <= bot_rooms() and "shared" not in bot_rooms()


def test_every_folder_of_the_suite_is_a_package() -> None:
    """Test modules are named by their full path (tests.unit.bot.launch.test_cli), so two kinds may hold
    a file of the same name; that needs an __init__.py in every folder."""
    folders = {p.parent for p in _suite_files()}
    missing = [f.relative_to(ROOT).as_posix() for f in folders if not (f / "__init__.py").is_file()]
    assert not missing, f"folders without __init__.py: {sorted(missing)}"


@pytest.mark.slow
def test_a_marker_pytest_does_not_know_fails_the_run(pytester: pytest.Pytester) -> None:
    """`-m "not slow"` must never drop or keep a test because of a misspelt marker."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--strict-markers" in options["addopts"].split()
    assert {m.split(":")[0] for m in options["markers"]} >= {"slow", "process", "browser"}
    pytester.makepyprojecttoml(
        f'[tool.pytest.ini_options]\naddopts = "{options["addopts"]}"\nmarkers = ["slow: x"]\n'
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.slwo
        def test_misspelt():
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*'slwo' not found in `markers` configuration option*"])


def test_process_and_browser_tests_are_marked_by_their_folder() -> None:
    """The fast subset leaves out every test that starts a process or a browser, with no marker
    written by hand: the suite's own conftest marks them from where they live."""
    from tests.conftest import KIND_MARKERS, kind_of

    for kind in ("process", "browser"):
        files = list((TESTS / kind).rglob("test_*.py"))
        assert files, f"tests/{kind}/ holds no test"
        assert {kind_of(f) for f in files} == {kind}
        assert set(KIND_MARKERS[kind]) == {kind, "slow"}
    assert {kind_of(f) for f in (TESTS / "unit").rglob("test_*.py")} == {"unit"}


@pytest.mark.slow
def test_the_fast_subset_collects_no_process_or_browser_test(pytester: pytest.Pytester) -> None:
    smallest = [
        min((TESTS / kind).rglob("test_*.py"), key=lambda p: p.stat().st_size)
        for kind in ("process", "browser")
    ]
    common = ["--collect-only", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
    config = ["-c", str(ROOT / "pyproject.toml")]
    fast = pytester.runpytest_subprocess(*map(str, smallest), *common, *config, "-m", "not slow")
    assert fast.ret == pytest.ExitCode.NO_TESTS_COLLECTED, fast.stdout.str()
    slow = pytester.runpytest_subprocess(*map(str, smallest), *common, *config, "-m", "slow")
    assert slow.ret == pytest.ExitCode.OK
    assert {line.split("::")[0] for line in slow.stdout.lines if "::" in line} == {
        p.relative_to(ROOT).as_posix() for p in smallest
    }
