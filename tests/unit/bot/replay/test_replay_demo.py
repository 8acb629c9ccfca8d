"""`chanctx replay` on the demo fixture: the real app, recorded Slack events, the context core."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.cli import main
from chanctx.context import ChannelSnapshot, ThreadContext, default_counter, wire_json

from tests.support.paths import ROOT

DEMO = ROOT / "fixtures" / "demo"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["replay", str(DEMO), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    # A roomy snapshot budget, so every adjacent message can be inspected; the default
    # budget is tested on its own below.
    with redirect_stdout(out):
        assert main(["replay", str(DEMO), "--json", "--snapshot-budget", "20000"]) == 0
    return json.loads(out.getvalue())


def test_one_turn_per_mention(report: dict[str, Any]) -> None:
    # Each mention arrives as a message event and an app_mention event.
    assert len(report["turns"]) == 2
    assert report["events"] == 54


def test_thread_mention_gets_the_whole_thread_without_repeating_the_anchor(
    report: dict[str, Any],
) -> None:
    turn = report["turns"][0]
    thread = ThreadContext.model_validate(turn["context"]["thread"])
    snapshot = ChannelSnapshot.model_validate(turn["context"]["snapshot"])
    assert thread.root.text.startswith("Seeing elevated 502s")
    assert turn["thread_ts"] == thread.thread_id == snapshot.anchor.thread_id
    assert snapshot.anchor.text.startswith("@chanctx can you summarize the incident")
    assert snapshot.anchor.message_id not in [r.message_id for r in thread.replies]
    assert thread.truncation.total_replies == thread.truncation.included_replies == 29
    # The thread root is not repeated among the adjacent messages either.
    assert thread.thread_id not in [a.message_id for a in snapshot.adjacent]


def test_edits_deletions_reactions_and_files_are_reflected(report: dict[str, Any]) -> None:
    text = json.dumps(report)
    assert "3,140 failed checkout requests" in text and "3,100" not in text  # the edit
    assert "pasted into the wrong window" not in text  # the deleted reply
    thread = ThreadContext.model_validate(report["turns"][0]["context"]["thread"])
    grafana = next(r for r in thread.replies if r.text.startswith("Looking. Grafana"))
    assert [m.artifact_id for m in grafana.media] == ["F0GRAPH502"]
    snapshot = ChannelSnapshot.model_validate(report["turns"][1]["context"]["snapshot"])
    rollback = next(
        a for a in snapshot.adjacent if a.snippet.startswith("Rollback complete")
    )  # broadcast
    assert rollback.reactions == [":white_check_mark: 3", ":tada: 1"]
    freeze = next(a for a in snapshot.adjacent if a.snippet.startswith("Reminder: change freeze"))
    assert freeze.reactions == [":+1: 2", ":eyes: 2"]


def test_top_level_mention_sees_adjacent_threads(report: dict[str, Any]) -> None:
    turn = report["turns"][1]
    assert turn["context"]["thread"] is None
    assert turn["thread_ts"] == turn["anchor_ts"]  # answered in a new thread under the mention
    snapshot = ChannelSnapshot.model_validate(turn["context"]["snapshot"])
    staging = next(a for a in snapshot.adjacent if "staging database" in a.snippet)
    assert staging.thread_activity is not None and staging.thread_activity.reply_count == 3
    incident = next(a for a in snapshot.adjacent if a.snippet.startswith("Seeing elevated"))
    assert incident.thread_activity is not None and incident.thread_activity.reply_count == 30
    assert snapshot.channel.name == "incidents"
    deploybot = next(a for a in snapshot.adjacent if a.author.display_name == "deploybot")
    assert deploybot.author.is_bot


def test_budgets_are_honoured_and_reported(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "--thread-budget", "900", "--snapshot-budget", "400")
    counter = default_counter()
    turn = report["turns"][0]
    thread = ThreadContext.model_validate(turn["context"]["thread"])
    snapshot = ChannelSnapshot.model_validate(turn["context"]["snapshot"])
    assert counter.count(wire_json(thread)) == turn["context"]["tokens"]["thread"] <= 900
    assert counter.count(wire_json(snapshot)) == turn["context"]["tokens"]["snapshot"] <= 400
    assert 0 < thread.truncation.included_replies < 29
    assert thread.replies[-1].text.startswith("Will do.")  # the newest reply is kept


@pytest.mark.slow
def test_default_budgets_keep_the_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys)
    for turn in report["turns"]:
        snapshot = ChannelSnapshot.model_validate(turn["context"]["snapshot"])
        assert 0 < len(snapshot.adjacent) <= 20
        assert turn["context"]["tokens"]["snapshot"] <= 1_500
        assert turn["context"]["tokens"]["thread"] <= 8_000
    nearest = ChannelSnapshot.model_validate(report["turns"][1]["context"]["snapshot"]).adjacent[-1]
    assert nearest.snippet.startswith("Lunch order")  # the message right before the mention


@pytest.mark.slow
def test_report_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(DEMO), "--json"]) == 0
    first = capsys.readouterr().out
    assert main(["replay", str(DEMO), "--json"]) == 0
    assert capsys.readouterr().out == first


@pytest.mark.slow
def test_readable_output_names_people_and_budgets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert "Turn 1: #incidents, in a thread, Cara" in out
    assert "ThreadContext: root + 29/29 replies" in out
    assert "Slack Web API calls: " in out
    assert "@chanctx did the staging database come back" in out


def test_missing_fixture_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    assert f"Fixture {tmp_path} has no events.jsonl." in capsys.readouterr().err


def test_malformed_line_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = (DEMO / "events.jsonl").read_text().splitlines()[0]
    (tmp_path / "events.jsonl").write_text(good + "\n{not json\n")
    assert main(["replay", str(tmp_path)]) == 2
    assert "events.jsonl:2: not JSON" in capsys.readouterr().err
