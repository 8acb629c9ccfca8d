"""A replay gives the same report every time: it starts from a fresh data dir unless told to
continue one, and then it counts the mentions it skipped and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chanctx.bot.cli import main


def replay(args: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["replay", "--demo", "--json", *args], env=env) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_chanctx_data_dir_in_the_environment_does_not_change_a_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"CHANCTX_DATA_DIR": str(tmp_path / "bot")}
    first = replay([], env, capsys)
    second = replay([], env, capsys)
    assert len(first["turns"]) == len(second["turns"]) == 2
    assert [t["reply"] for t in first["turns"]] == [t["reply"] for t in second["turns"]]
    assert first["answers_from"] == "chanctx's offline model"
    assert not (tmp_path / "bot").exists()  # the operator's data dir was never touched


@pytest.mark.slow
def test_a_used_data_dir_needs_continue_and_then_the_skips_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "kept")
    assert len(replay(["--data-dir", data], {}, capsys)["turns"]) == 2
    assert main(["replay", "--demo", "--data-dir", data], env={}) == 2
    err = capsys.readouterr().err
    assert f"--data-dir {data} holds an earlier run's state; add --continue" in err
    continued = replay(["--data-dir", data, "--continue"], {}, capsys)
    assert continued["turns"] == []
    assert len(continued["skipped_mentions"]) == 2
    assert {s["why"] for s in continued["skipped_mentions"]} == {
        "answered before into this --data-dir (its turn journal holds it)"
    }
    assert main(["replay", "--demo", "--data-dir", data, "--continue"], env={}) == 0
    text = capsys.readouterr().out
    assert text.count("Skipped the mention") == 2


@pytest.mark.slow
def test_the_transcript_says_where_answers_come_from_and_what_requests_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", "--demo"], env={}) == 0
    head = capsys.readouterr().out.splitlines()[1]
    assert head.startswith("Answers from chanctx's offline model, against loopback fakes")
    assert '"requests" at the end counts Messages API requests' in head
