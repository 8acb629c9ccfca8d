"""Reactions on the bot's answers are recorded per turn, durably: :+1: / :white_check_mark: say an
answer helped, :-1: / :x: that it did not; taking a reaction back takes the vote back; the bot's
own :eyes: and reactions on anyone else's message are not votes."""

from __future__ import annotations

import copy
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import Answer, Turn, turn_id
from chanctx.bot.replay.offline import OfflineBot
from chanctx.manifest_store import FEEDBACK_FILE, LocalFeedbackStore

from tests.support.slack_events import (
    BOT_USER,
    CHANNEL,
    STATE,
    envelope,
    feedback_click,
    mention_pair,
    reaction,
    ts,
)

START = float(ts(0).split(".")[0])


class Answers:
    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        return Answer(text="The 14:00 deploy broke checkout; it is rolled back.")


def new_bot(data_dir: Path) -> OfflineBot:
    return OfflineBot(
        copy.deepcopy(STATE), responder=Answers(), start_time=START, data_dir=data_dir
    )


def answered(bot: OfflineBot, at: str) -> tuple[str, str]:
    """Ask at ``at``; the answer's ts and the turn's id."""
    for item in mention_pair(at, "what broke checkout?"):
        bot.dispatch(item)
    (posted,) = [p for p in bot.slack.posted if p.get("thread_ts") == at]
    return str(posted["ts"]), f"{CHANNEL}:{at}"


def react(bot: OfflineBot, target: str, name: str, *, user: str = "U2", added: bool = True) -> None:
    bot.dispatch(envelope(reaction(ts(50), target, name, user=user, added=added)))


def test_reactions_on_an_answer_are_votes_on_its_turn(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        answer_ts, turn = answered(bot, ts(10))
        assert turn == turn_id(bot.runtime.runner.results[0].turn)
        feedback = bot.runtime.feedback
        assert feedback is not None and feedback.turn_of(CHANNEL, answer_ts) == turn
        react(bot, answer_ts, "+1")
        react(bot, answer_ts, "white_check_mark", user="U3")
        react(bot, answer_ts, "+1::skin-tone-4", user="U3")  # U3 helpful once, not twice
        react(bot, answer_ts, "x", user="U4")
        assert feedback.tally(turn) == {"helpful": 2, "harmful": 1}
        react(bot, answer_ts, "+1", added=False)  # U2 takes it back
        assert feedback.tally(turn) == {"helpful": 1, "harmful": 1}


def test_what_is_not_a_vote_is_not_counted(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        answer_ts, turn = answered(bot, ts(10))
        react(bot, answer_ts, "eyes", user=BOT_USER)  # the bot's own working indicator
        react(bot, answer_ts, "+1", user=BOT_USER)  # the bot cannot vote for itself
        react(bot, answer_ts, "tada_not_a_verdict")
        react(bot, ts(10), "+1")  # on the question, not on an answer
        assert bot.runtime.feedback is not None
        assert bot.runtime.feedback.tally(turn) == {"helpful": 0, "harmful": 0}


def test_votes_survive_a_restart_and_a_damaged_line_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with new_bot(tmp_path) as bot:
        answer_ts, turn = answered(bot, ts(10))
        react(bot, answer_ts, "-1")
    path = tmp_path / FEEDBACK_FILE
    path.write_text(path.read_text() + '{"op": "vote", "turn": \n')  # a torn last line
    with caplog.at_level(logging.WARNING):
        store = LocalFeedbackStore(tmp_path)
    assert store.tally(turn) == {"helpful": 0, "harmful": 1}
    assert store.turn_of(CHANNEL, answer_ts) == turn
    store.close()
    assert [r.getMessage() for r in caplog.records] == [f"{path}:3: skipped an unreadable line"]
    with new_bot(tmp_path) as again:  # the restarted bot counts on from there
        react(again, answer_ts, "+1", user="U5")
        assert again.runtime.feedback is not None
        assert again.runtime.feedback.tally(turn) == {"helpful": 1, "harmful": 1}


def test_feedback_button_clicks_are_votes_on_the_turn_and_a_change_of_mind_counts_once(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        answer_ts, turn = answered(bot, ts(10))
        (message,) = [m for m in bot.slack.messages(CHANNEL) if m["ts"] == answer_ts]
        (block,) = message["blocks"]  # the buttons came with the answer
        assert block["block_id"] == f"chanctx_feedback:{turn}"
        assert bot.dispatch(feedback_click(answer_ts, helpful=True, turn=turn)).status == 200
        assert bot.dispatch(feedback_click(answer_ts, helpful=True, user="U1")).status == 200
        assert bot.runtime.feedback is not None
        assert bot.runtime.feedback.tally(turn) == {"helpful": 2, "harmful": 0}
        bot.dispatch(feedback_click(answer_ts, helpful=False, turn=turn))  # U2 changes their mind
        assert bot.runtime.feedback.tally(turn) == {"helpful": 1, "harmful": 1}
        # Reactions and clicks land in the same store, per turn.
        react(bot, answer_ts, "+1", user="U3")
        assert bot.runtime.feedback.tally(turn) == {"helpful": 2, "harmful": 1}
        sources = [v.source for v in bot.runtime.feedback.votes(turn)]
        assert sources[:2] == ["button:helpful", "button:helpful"]
        assert "reaction:+1" in sources
    with new_bot(tmp_path) as again:  # durable
        assert again.runtime.feedback is not None
        assert again.runtime.feedback.tally(turn) == {"helpful": 2, "harmful": 1}


def test_a_click_that_names_no_answer_of_ours_or_is_malformed_counts_nothing(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        answer_ts, turn = answered(bot, ts(10))
        store = bot.runtime.feedback
        assert store is not None
        # A message that is not an answer, and a block naming another channel's turn.
        assert bot.dispatch(feedback_click(ts(10), helpful=True, turn="C0OTHER:1.2")).status == 200
        broken = feedback_click(answer_ts, helpful=True)
        broken["actions"][0]["value"] = "maybe"
        assert bot.dispatch(broken).status == 200
        no_user = feedback_click(answer_ts, helpful=True)
        no_user["user"] = {}
        assert bot.dispatch(no_user).status == 200
        assert store.tally(turn) == {"helpful": 0, "harmful": 0}
        assert store.votes("C0OTHER:1.2") == []


# --- a bot that runs for years: the file stays bounded, nothing remembered is lost -------------


@pytest.mark.slow
def test_the_file_is_compacted_to_what_is_remembered_and_reloads_the_same(tmp_path: Path) -> None:
    store = LocalFeedbackStore(tmp_path, max_answers=100)
    for n in range(3_000):
        store.record_answer(CHANNEL, f"1700000000.{n:06d}", f"{CHANNEL}:{n}")
        store.record_reaction(CHANNEL, f"1700000000.{n:06d}", "U2", "+1", added=True)
        store.record_click(CHANNEL, f"1700000000.{n:06d}", "U3", helpful=n % 2 == 0)
    store.close()
    lines = (tmp_path / FEEDBACK_FILE).read_text().splitlines()
    # 9,000 lines were appended; 100 answers with 2 votes each are live; rewrites keep the
    # file within four times the live lines (or the 256-line floor).
    assert len(lines) <= 4 * 300 + 1
    again = LocalFeedbackStore(tmp_path, max_answers=100)
    for n in range(2_900, 3_000):  # the newest 100 are all there, votes and all
        assert again.turn_of(CHANNEL, f"1700000000.{n:06d}") == f"{CHANNEL}:{n}"
        helpful = 2 if n % 2 == 0 else 1
        assert again.tally(f"{CHANNEL}:{n}") == {"helpful": helpful, "harmful": n % 2}
    assert again.turn_of(CHANNEL, "1700000000.000000") is None  # forgotten, as in memory
    again.close()


_FEEDBACK_WRITER = """
import sys
from pathlib import Path
from chanctx.manifest_store import LocalFeedbackStore
store = LocalFeedbackStore(Path(sys.argv[1]), max_answers=50)
for n in range(1_000_000):
    store.record_answer("C0TEAM", f"1700000000.{n:06d}", f"C0TEAM:{n}")
    store.record_reaction("C0TEAM", f"1700000000.{n:06d}", "U2", "x", added=True)
    print(n, flush=True)
"""


@pytest.mark.slow
def test_a_kill_9_during_compactions_loses_no_remembered_vote(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", _FEEDBACK_WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    acknowledged = -1
    deadline = time.monotonic() + 60
    while acknowledged < 2_000 and time.monotonic() < deadline:  # dozens of rewrites by then
        acknowledged = int(writer.stdout.readline())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    # The writer may have printed past what was read before the kill (the pipe buffers it):
    # the last line in the pipe is the newest acknowledged vote.
    for line in writer.stdout:
        acknowledged = int(line)
    writer.stdout.close()
    assert acknowledged >= 2_000
    store = LocalFeedbackStore(tmp_path, max_answers=50)
    # One more answer and vote may be in the file, written but not yet printed: it takes one
    # of the 50 remembered turns, so the newest 49 acknowledged are the ones that must hold.
    for n in range(acknowledged - 48, acknowledged + 1):
        assert store.tally(f"C0TEAM:{n}") == {"helpful": 0, "harmful": 1}, n
    store.close()
