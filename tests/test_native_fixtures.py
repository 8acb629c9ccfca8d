"""The Slack-native fixtures (fixtures/build_native.py), replayed: a streamed answer, feedback
clicks, /chanctx, and two workspaces with no state crossing between them."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from chanctx.bot.replay.fixture import Fixture, load_fixture
from chanctx.bot.replay.offline_teams import OfflineWorkspaces
from chanctx.bot.replay.runner import ReplayOptions, replay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_native", FIXTURES / "build_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _load_builder()
NATIVE: list[str] = sorted(BUILD.BUILDERS)


@functools.cache
def report(name: str) -> dict[str, Any]:
    return replay(load_fixture(FIXTURES / name))


@pytest.mark.parametrize("name", NATIVE)
def test_build_native_regenerates_each_fixture_exactly(name: str) -> None:
    for file_name, text in BUILD.render(name).items():
        assert (FIXTURES / name / file_name).read_text() == text, f"{name}/{file_name} is stale"


@pytest.mark.parametrize("name", NATIVE)
def test_native_fixtures_hold_no_secrets_and_replay_deterministically(name: str) -> None:
    text = "".join(p.read_text() for p in (FIXTURES / name).iterdir())
    assert "xox" not in text and "xapp" not in text
    again = replay(load_fixture(FIXTURES / name))
    assert json.dumps(again, sort_keys=True) == json.dumps(report(name), sort_keys=True)


# --- streamed_answer/ -------------------------------------------------------------------------


def test_streamed_answer_grows_in_one_message_and_a_broken_stream_is_replaced_whole() -> None:
    broken, streamed = report("streamed_answer")["turns"]
    # The first answer's append failed (500): stopped, then replaced whole, one message.
    assert [p["method"] for p in broken["posted"]] == [
        "chat.startStream",
        "chat.stopStream",
        "chat.update",
    ]
    assert len({p["ts"] for p in broken["posted"]}) == 1
    assert broken["posted"][-1]["text"] == broken["reply"] == BUILD.ROLLBACK.strip()
    # The checklist streamed: start, several appends, stop; the user saw it grow.
    methods = [p["method"] for p in streamed["posted"]]
    assert methods[0] == "chat.startStream" and methods[-1] == "chat.stopStream"
    assert methods.count("chat.appendStream") >= 3
    lengths = [len(p["text"]) for p in streamed["posted"]]
    assert lengths == sorted(lengths) and lengths[0] < 100
    assert "".join(p["markdown_text"] or "" for p in streamed["posted"]) == streamed["reply"]
    assert streamed["posted"][-1]["text"] == streamed["reply"] == BUILD.CHECKLIST.strip()
    assert broken["error"] is None and streamed["error"] is None


# --- feedback_click/ --------------------------------------------------------------------------


def test_feedback_click_votes_are_counted_per_turn_with_the_reaction() -> None:
    found = report("feedback_click")
    (turn,) = found["turns"]
    # Ana: helpful; Dev: not helpful, then helpful (changed their mind); Kim reacted :-1:.
    assert turn["feedback"] == {"helpful": 2, "harmful": 1}
    clicks = found["interactions"]
    assert [c["kind"] for c in clicks] == ["block_actions"] * 3
    answer_ts = turn["posted"][-1]["ts"]
    assert all(c["input"].endswith(f"on {answer_ts}") for c in clicks)  # on the answer itself
    assert all(c["response"] is None for c in clicks)  # acknowledged, nothing said back


# --- slash_commands/ --------------------------------------------------------------------------


def test_slash_commands_answer_the_person_and_forget_really_forgets(tmp_path: Path) -> None:
    requests_out = tmp_path / "requests.jsonl"
    found = replay(
        load_fixture(FIXTURES / "slash_commands"), options=ReplayOptions(requests_out=requests_out)
    )
    status, ask, confirmed, helped = (c["response"] for c in found["interactions"])
    assert "3 messages of this channel in memory" in status
    assert "last answer here:" in status and "read from the prompt cache" in status
    assert "confirm` to do it" in ask
    assert confirmed.startswith("Forgotten: thread ")
    assert "`/chanctx forget <message link>`" in helped
    # The thread's next question starts afresh: its first request carries no earlier exchange,
    # where without the forget it carries the earlier question and answer.
    sent = [json.loads(line) for line in requests_out.read_text().splitlines()]
    assert [m["role"] for m in sent[2]["messages"]] == ["user"]
    fixture = load_fixture(FIXTURES / "slash_commands")
    unforgotten = tmp_path / "unforgotten.jsonl"
    replay(
        Fixture(fixture.path, [e for e in fixture.envelopes if "command" not in e],
                fixture.slack_api),
        options=ReplayOptions(requests_out=unforgotten),
    )  # fmt: skip
    kept = [json.loads(line) for line in unforgotten.read_text().splitlines()]
    assert [m["role"] for m in kept[2]["messages"]][:2] == ["user", "assistant"]
    assert [t["error"] for t in found["turns"]] == [None, None]


# --- two_workspaces/ --------------------------------------------------------------------------

ACME_FACTS = ("payments database", "40 payments", "Rita", "Tom")
GLOBEX_FACTS = ("mobile login", "mobile-auth", "Lena", "Omar")


def test_two_workspaces_are_answered_each_from_its_own_state_only(tmp_path: Path) -> None:
    found = report("two_workspaces")
    acme, globex = found["turns"]
    assert (acme["team"], globex["team"]) == (BUILD.ACME, BUILD.GLOBEX)
    for turn, own, other in ((acme, ACME_FACTS, GLOBEX_FACTS), (globex, GLOBEX_FACTS, ACME_FACTS)):
        seen = json.dumps(turn)  # its context, tool calls, reply and what was posted
        assert all(fact in seen for fact in own[:2]), turn["reply"]
        assert not any(fact in seen for fact in other)
    assert set(found["workspaces"]) == {BUILD.ACME, BUILD.GLOBEX}
    # The same run, looked at from inside: every Slack call and every Claude request of a team
    # names only its own channel and facts; each team keeps its files in its own directory.
    fixture = load_fixture(FIXTURES / "two_workspaces")
    start = float(fixture.envelopes[0]["event_time"])
    with OfflineWorkspaces(
        fixture.slack_api["workspaces"], start_time=start, data_dir=tmp_path
    ) as teams:
        for envelope in fixture.envelopes:
            teams.dispatch(envelope)
        for team, channel, own, other in (
            (BUILD.ACME, BUILD.ACME_INC, ACME_FACTS, GLOBEX_FACTS),
            (BUILD.GLOBEX, BUILD.GLOBEX_INC, GLOBEX_FACTS, ACME_FACTS),
        ):
            other_channel = BUILD.GLOBEX_INC if channel == BUILD.ACME_INC else BUILD.ACME_INC
            calls = json.dumps([c.params for c in teams.fakes.teams[team].calls])
            assert channel in calls and other_channel not in calls
            assert not any(fact in calls for fact in other)
            bot = teams.bots[team]
            assert bot.anthropic is not None
            requests = json.dumps([r.body for r in bot.anthropic.requests])
            assert own[0] in requests and not any(fact in requests for fact in other)
            kept = "".join(
                p.read_text(errors="replace")
                for p in (tmp_path / "teams" / team).rglob("*")
                if p.is_file()
            )
            assert own[0] in kept and not any(fact in kept for fact in other)
