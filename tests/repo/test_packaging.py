"""The wheel is what a user installs: one top-level name, every subpackage, the demo fixture, and
a `chanctx` that works from a directory outside the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests.support.paths import ROOT

# Builds a wheel and installs it in a fresh virtualenv from the registry: slow throughout.
pytestmark = pytest.mark.slow

PACKAGES = ["bot", "bot/slack", "bot/messages_api", "bot/stores", "bot/stores/installations",
            "bot/stores/pane_threads", "bot/stores/profiles", "bot/core", "bot/playbooks",
            "bot/export", "bot/events", "bot/events/listeners", "bot/claude", "bot/replicas",
            "bot/server", "bot/replay", "bot/launch", "context", "context/recipe", "tools",
            "cache", "cache/rate_limit", "cache/channel_store", "manifest_store",
            "manifest_store/turns", "manifest_store/sessions", "manifest_store/feedback",
            "manifest_store/playbook"]  # fmt: skip


def copy_of_the_sources(into: Path) -> Path:
    """What the build reads, copied: setuptools writes build/ and an .egg-info beside the sources
    it builds, and the checkout is being read by the other tests (and other xdist workers)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    meta = project["project"]
    for name in ["pyproject.toml", meta["readme"], *meta["license-files"]]:
        shutil.copy2(ROOT / name, into / name)
    for folder in set(project["tool"]["setuptools"]["package-dir"].values()):
        shutil.copytree(ROOT / folder, into / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    sources = copy_of_the_sources(tmp_path_factory.mktemp("sources"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(sources)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("chanctx-*.whl")
    return built


def test_the_only_top_level_name_is_chanctx(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "chanctx",
        wheel.name.split("-py3")[0] + ".dist-info",
    }
    top_level = [n for n in names if n.endswith("top_level.txt")]
    assert [zipfile.ZipFile(wheel).read(n).decode().split() for n in top_level] == [["chanctx"]]
    # The installed distribution this suite runs on says the same.
    assert (metadata.distribution("chanctx").read_text("top_level.txt") or "").split() == [
        "chanctx"
    ]


def test_every_subpackage_typing_marker_and_the_demo_are_in_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in PACKAGES:
        assert f"chanctx/{package}/__init__.py" in names, package
    for package in ["bot", "context", "tools", "cache", "manifest_store"]:
        assert f"chanctx/{package}/py.typed" in names
    sources = {p.relative_to(ROOT).as_posix() for d in ["bot", "context", "tools", "cache",
               "manifest_store"] for p in (ROOT / d).rglob("*.py")}  # fmt: skip
    assert {f"chanctx/{s}" for s in sources} <= names  # no module left behind
    assert {"chanctx/fixtures/demo/events.jsonl", "chanctx/fixtures/demo/slack_api.json"} <= names
    # The token counter's vocabularies and their license (the demo replay below counts with them).
    assert {f"chanctx/context/data/{n}" for n in ["pieces_v3.json.gz", "pieces_v4_7.json.gz",
            "LICENSE-ctok", "README.md"]} <= names  # fmt: skip
    assert "LICENSE" in {Path(n).name for n in names if ".dist-info/" in n}


def test_the_wheel_replays_the_demo_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    """A fresh virtualenv, the wheel and its dependencies from the registry, run from elsewhere:
    the same transcript as the checkout's `chanctx replay fixtures/demo`."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, capture_output=True
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    chanctx = str(venv / "bin" / "chanctx")
    version = subprocess.run(
        [chanctx, "--version"], cwd=outside, capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == f"chanctx {metadata.version('chanctx')}"
    installed = subprocess.run(
        [chanctx, "replay", "--demo"], cwd=outside, capture_output=True, text=True, check=True
    )
    assert "site-packages/chanctx/fixtures/demo" in installed.stdout.splitlines()[0]
    here = subprocess.run(
        [sys.executable, "-m", "chanctx.bot.cli", "replay", str(ROOT / "fixtures" / "demo")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.splitlines()[1:] == here.stdout.splitlines()[1:]
    assert "Turn 2:" in installed.stdout
