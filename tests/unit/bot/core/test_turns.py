"""Every acknowledged question answered exactly once: the turn journal, restarts, Slack faults.

The "crash" here is an answer worker that dies mid-turn (a BaseException the runtime does not
catch) and a bot that is then dropped; the restart is a new bot on the same data directory.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import Answer, Turn, turn_id
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.slack.poster import EVENT_TYPE
from chanctx.manifest_store import TurnJournal
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.slack_events import BOT_ID, BOT_USER, CHANNEL, STATE, mention_pair, ts

START = float(ts(0).split(".")[0])


class Crash(BaseException):
    """The process dies: nothing in the runtime catches it."""


class DiesMidTurn:
    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        raise Crash


class Answers:
    def __init__(self, text: str = "The deploy broke it; rolled back.") -> None:
        self.text = text
        self.calls = 0

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        self.calls += 1
        return Answer(text=self.text)


def new_bot(data_dir: Path, responder: Any, *, stream: bool = False) -> OfflineBot:
    """Answers posted in one message each (where Slack does not stream); streamed answers
    through crashes and faults are tests/unit/bot/slack/test_streaming.py's."""
    return OfflineBot(
        copy.deepcopy(STATE), responder=responder, start_time=START, data_dir=data_dir,
        stream=stream,
    )  # fmt: skip


def answers_in(bot: OfflineBot) -> list[dict[str, Any]]:
    return [p for p in bot.slack.posted if p.get("thread_ts")]


def test_a_question_acknowledged_before_a_crash_is_answered_after_the_restart(
    tmp_path: Path,
) -> None:
    pair = mention_pair(ts(10), "what broke checkout?")
    with new_bot(tmp_path, DiesMidTurn()) as first:
        for envelope in pair:
            assert first.dispatch(envelope, wait=False).status == 200  # acknowledged
        first.runtime.runner.close()  # the worker died with the question unanswered
        assert answers_in(first) == []
    answering = Answers()
    with new_bot(tmp_path, answering) as second:
        second.slack.mirror_event(pair[0]["event"])  # the channel as Slack still has it
        assert second.runtime.recover() == 1
        second.runtime.runner.drain(10)
        for envelope in pair:  # Slack's retries of both events, delivered after the restart
            second.dispatch(envelope)
        posted = answers_in(second)
    assert [p["text"] for p in posted] == ["The deploy broke it; rolled back."]
    assert answering.calls == 1
    assert posted[0]["metadata"]["event_payload"]["turn"] == f"{CHANNEL}:{ts(10)}"


def test_a_reply_posted_just_before_a_crash_is_not_posted_again(tmp_path: Path) -> None:
    turn = Turn(channel=CHANNEL, thread_ts=ts(10), anchor_ts=ts(10), user="U1")
    journal = TurnJournal(tmp_path)
    journal.enqueue(turn_id(turn), {**turn.__dict__}, "Ev1")
    journal.write_reply(turn_id(turn), ["first part", "second part"])
    journal.close()  # crash: part 0 reached Slack, the journal never heard
    answering = Answers()
    with new_bot(tmp_path, answering) as bot:
        bot.slack.add_message(CHANNEL, {"type": "message", "ts": ts(10), "user": "U1", "text": "q"})
        bot.slack.add_message(
            CHANNEL,
            {
                "type": "message", "ts": ts(11), "thread_ts": ts(10), "user": BOT_USER,
                "bot_id": BOT_ID, "text": "first part",
                "metadata": {"event_type": EVENT_TYPE,
                             "event_payload": {"turn": turn_id(turn), "part": 0}},
            },
        )  # fmt: skip
        assert bot.runtime.recover() == 1
        assert [p["text"] for p in bot.slack.posted] == ["second part"]
        assert answering.calls == 0  # the answer came from the outbox, not from Claude again
        assert bot.runtime.turns.outbox() == [] and bot.runtime.turns.pending() == []


@pytest.mark.slow
@pytest.mark.parametrize(("status", "retry_after"), [(500, None), (503, None), (429, 1)])
def test_a_failed_post_is_retried_until_it_lands_once(
    tmp_path: Path, status: int, retry_after: int | None
) -> None:
    with new_bot(tmp_path, Answers()) as bot:
        bot.slack.fail_next("chat.postMessage", 2, status=status, retry_after=retry_after)
        for envelope in mention_pair(ts(10), "status?"):
            bot.dispatch(envelope)
        assert [p["text"] for p in answers_in(bot)] == ["The deploy broke it; rolled back."]
        assert bot.slack.call_counts()["chat.postMessage"] == 3
        assert bot.runtime.turns.outbox() == []


@pytest.mark.slow
def test_when_every_retry_fails_the_turn_ends_and_the_bot_goes_on(tmp_path: Path) -> None:
    with new_bot(tmp_path, Answers()) as bot:
        bot.slack.fail_next("chat.postMessage", 10, status=500)  # 5 tries, then 5 for the notice
        for envelope in mention_pair(ts(10), "status?"):
            bot.dispatch(envelope)
        (result,) = bot.runtime.runner.results
        assert result.error is not None and bot.runtime.turns.pending() == []
        for envelope in mention_pair(ts(20), "and now?"):  # Slack is back
            bot.dispatch(envelope)
        assert [p["text"] for p in answers_in(bot)] == ["The deploy broke it; rolled back."]


def test_a_damaged_journal_line_is_skipped_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = TurnJournal(tmp_path)
    for n in range(3):
        journal.enqueue(f"C:{n}", {"n": n}, f"Ev{n}")
    journal.finish("C:0")
    journal.close()
    lines = (tmp_path / "turns.jsonl").read_text().splitlines()
    lines[1] = lines[1][:17]  # the middle of the file, not only the last line
    (tmp_path / "turns.jsonl").write_text("\n".join(lines) + '\n{"op": "qu')
    with caplog.at_level(logging.WARNING, logger="chanctx.turns"):
        again = TurnJournal(tmp_path)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all("turns.jsonl:" in w for w in warnings)
    assert [t.turn_id for t in again.pending()] == ["C:2"]  # C:1's line was the damaged one
    assert again.seen_event("Ev0") and not again.enqueue("C:0", {}, None)
    again.close()


def test_an_entry_written_after_a_torn_line_is_not_lost(tmp_path: Path) -> None:
    journal = TurnJournal(tmp_path)
    journal.enqueue("C:1", {"n": 1}, "Ev1")
    journal.close()
    with (tmp_path / "turns.jsonl").open("a") as file:
        file.write('{"op": "queued", "turn": "C:2", "pay')  # killed mid-write
    again = TurnJournal(tmp_path)  # the restart...
    again.enqueue("C:3", {"n": 3}, "Ev3")  # ...queues the next question
    again.close()
    third = TurnJournal(tmp_path)  # and the one after that still knows it
    assert [t.turn_id for t in third.pending()] == ["C:1", "C:3"]
    third.close()


ops = st.lists(
    st.tuples(st.sampled_from(["enqueue", "reply", "post", "finish"]), st.integers(0, 5)),
    max_size=60,
)


@settings(max_examples=40)
@given(ops)
def test_a_reopened_journal_knows_exactly_what_the_running_one_knew(
    tmp_path_factory: pytest.TempPathFactory, sequence: list[tuple[str, int]]
) -> None:
    directory = tmp_path_factory.mktemp("journal")
    clock = iter(range(1, 10_000))
    journal = TurnJournal(directory, clock=lambda: float(next(clock)))
    for op, n in sequence:
        key = f"C:{n}"
        if op == "enqueue":
            journal.enqueue(key, {"n": n}, f"Ev{n}")
        elif op == "reply":
            journal.write_reply(key, [f"answer {n}", "more"])
        elif op == "post":
            journal.mark_posted(key, n % 2, f"1.{n}")
        else:
            journal.finish(key)
    keys = [f"C:{n}" for n in range(6)]
    before = (
        journal.pending(),
        journal.outbox(),
        [journal.is_done(k) for k in keys],
        [journal.seen_event(f"Ev{n}") for n in range(6)],
    )
    journal.close()
    again = TurnJournal(directory, clock=lambda: 500.0)  # within the retry window
    after = (
        again.pending(),
        again.outbox(),
        [again.is_done(k) for k in keys],
        [again.seen_event(f"Ev{n}") for n in range(6)],
    )
    assert after == before
    again.close()


@pytest.mark.slow
def test_done_turns_are_forgotten_after_the_retry_window_and_the_file_stays_small(
    tmp_path: Path,
) -> None:
    now = [0.0]
    journal = TurnJournal(tmp_path, remember_seconds=60, clock=lambda: now[0])
    for n in range(2_000):
        now[0] = float(n)
        journal.enqueue(f"C:{n}", {"n": n}, f"Ev{n}")
        journal.finish(f"C:{n}")
    assert not journal.seen_event("Ev0") and journal.seen_event("Ev1999")
    # Memory holds the last minute of done turns and nothing else.
    assert journal.counts() == {"pending": 0, "outbox": 0, "done": 61, "event_ids": 61}
    journal.close()
    again = TurnJournal(tmp_path, remember_seconds=60, clock=lambda: now[0])
    assert again.counts() == {"pending": 0, "outbox": 0, "done": 61, "event_ids": 61}
    assert again.is_done("C:1999") and not again.enqueue("C:1999", {}, "Ev1999")
    again.close()
    assert len((tmp_path / "turns.jsonl").read_text().splitlines()) < 1_000
    assert json.loads((tmp_path / "turns.jsonl").read_text().splitlines()[-1])["op"] == "done"


# --- bounded resources -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_slow_claude_ends_in_an_honest_reply_and_never_starves_other_threads(
    tmp_path: Path,
) -> None:
    from chanctx.bot.claude.session import SessionSettings

    with OfflineBot(
        copy.deepcopy(STATE),
        claude=True,
        claude_latency_ms=1_500,  # every Messages API answer takes 1.5 s
        start_time=START,
        data_dir=tmp_path,
        session_settings=SessionSettings(deadline_seconds=1.0),
    ) as bot:
        started = time.monotonic()
        for envelope in mention_pair(ts(10), "what broke?"):
            bot.dispatch(envelope)
        elapsed = time.monotonic() - started
        (result,) = bot.runtime.runner.results
    assert "did not answer within 1 s" in str(result.error)
    (posted,) = [p["text"] for p in bot.slack.posted]
    assert posted.startswith("Sorry, I couldn't answer this one: Claude did not answer within 1 s")
    assert elapsed < 8  # bounded by the deadline, not the model


def test_per_thread_state_does_not_grow_with_the_number_of_threads(tmp_path: Path) -> None:
    from chanctx.bot.core.turns import AnswerRunner, TurnResult

    runner = AnswerRunner(lambda turn: TurnResult(turn=turn), workers=2, keep_results=50)
    for n in range(2_000):
        runner.submit(
            Turn(channel=CHANNEL, thread_ts=f"{n}.000001", anchor_ts=f"{n}.000001", user="U1")
        )
    runner.drain(30)
    assert runner.idle() and len(runner.results) == 50
    runner.close()


def test_recovery_never_answers_again_what_the_live_path_is_answering(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    class Slow(Answers):
        def respond(self, turn: Turn, context: BuiltContext) -> Answer:
            release.wait(10)
            return super().respond(turn, context)

    slow = Slow()
    with new_bot(tmp_path, slow) as bot:
        for envelope in mention_pair(ts(10), "what broke?"):
            bot.dispatch(envelope, wait=False)  # queued, and being answered
        assert [t.turn_id for t in bot.runtime.turns.pending()] == [f"{CHANNEL}:{ts(10)}"]
        assert bot.runtime.recover() == 0  # a start-up recovery racing the live answer
        release.set()
        bot.runtime.runner.drain(10)
        assert slow.calls == 1 and len(answers_in(bot)) == 1


def test_a_question_the_disk_refused_is_not_acknowledged_and_its_retry_is_answered_once(
    tmp_path: Path,
) -> None:
    answering = Answers()
    message_event, app_mention = mention_pair(ts(10), "what broke checkout?")
    with new_bot(tmp_path, answering) as bot:
        journal = bot.runtime.turns
        assert isinstance(journal, TurnJournal) and journal._handle is not None
        journal._handle.close()
        journal._handle = open("/dev/full", "a", encoding="utf-8")  # noqa: SIM115 - the disk is full
        # Not acknowledged (HTTP: 503, Socket Mode: no ack), so Slack delivers it again.
        assert bot.dispatch(app_mention).status == 503
        assert answers_in(bot) == [] and journal.pending() == [] and journal.outbox() == []
        assert bot.dispatch(app_mention).status == 200  # the retry, once there is room
        assert bot.dispatch(message_event).status == 200  # the same question's other event
        assert [p["text"] for p in answers_in(bot)] == [answering.text]
        assert answering.calls == 1
    lines = (tmp_path / "turns.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert [e["op"] for e in entries] == ["queued", "reply", "posted", "done"]
    assert entries[0]["event"] == app_mention["event_id"]  # no trace of the refused attempt
