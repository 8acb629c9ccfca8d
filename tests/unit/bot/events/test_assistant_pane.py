"""The assistant pane: answers from the channel the user is viewing, only if they are a member.

Replays fixtures/assistant_pane through the real app against the fake Slack and Messages APIs,
and reads what was sent to Claude and what was posted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.stores.pane_threads.local import LocalPaneThreads
from chanctx.tools import read_context_output

from tests.support.paths import ROOT

FIXTURE = ROOT / "fixtures" / "assistant_pane"
PAYMENTS, DEPLOYS, KIM_DM = "C0PAYMENTS", "C0DEPLOYS1", "D0KIMDM001"
PAYMENTS_TEXTS = ("1,240 tickets", "310 after the batch rerun", "EU batch job stalled")


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OfflineBot]:
    fixture = load_fixture(FIXTURE)
    start = float(fixture.envelopes[0]["event_time"])
    data_dir = tmp_path_factory.mktemp("pane")
    with OfflineBot(
        fixture.slack_api, claude=True, start_time=start, data_dir=data_dir
    ) as replayed:
        for envelope in fixture.envelopes:
            replayed.dispatch(envelope)
        yield replayed


def results(bot: OfflineBot) -> list[Any]:
    return sorted(bot.runtime.runner.results, key=lambda r: float(r.turn.anchor_ts))


def calls(bot: OfflineBot, method: str) -> list[dict[str, Any]]:
    return [dict(c.params) for c in bot.slack.calls if c.method == method]


def test_the_pane_greets_with_prompts_for_the_channel_in_view(bot: OfflineBot) -> None:
    greetings = [p for p in calls(bot, "chat.postMessage") if "text" in p]
    assert [g["text"].split(":")[0] for g in greetings] == ["Hi! I can answer from #payments"] * 2
    prompts = calls(bot, "assistant.threads.setSuggestedPrompts")
    assert len(prompts) == 2
    titles = [p["title"] for p in json.loads(json.dumps(prompts[0]["prompts"]))]
    assert titles and all("#payments" in title for title in titles)


def test_a_member_is_answered_from_the_viewed_channel(bot: OfflineBot) -> None:
    sam = results(bot)[0]
    assert sam.turn.viewed_channel == PAYMENTS and sam.error is None
    assert sam.context.snapshot.channel.id == PAYMENTS
    (search,) = sam.tool_calls
    # The tool searched #payments; its matches are in the #payments snapshot Claude was given,
    # so they are named by ts, not repeated.
    rows = read_context_output(search.output)
    assert rows and all(row["held"] for row in rows)
    assert {row["ts"] for row in rows} <= {a.message_id for a in sam.context.snapshot.adjacent}
    assert "310 after the batch rerun" in sam.reply
    titles = calls(bot, "assistant.threads.setTitle")
    assert titles[0]["title"] == "How big is the refunds backlog now?"


def test_a_non_member_gets_no_content_of_that_channel_anywhere(bot: OfflineBot) -> None:
    kim = results(bot)[1]
    assert kim.turn.viewed_channel is None  # refused before any context was built
    assert kim.reply.startswith("_You're viewing #payments, which you are not a member of")
    assert bot.anthropic is not None
    sent = [json.dumps(r.body) for r in bot.anthropic.requests if KIM_DM in json.dumps(r.body)]
    assert sent  # Kim's turn did reach Claude, with the DM as its only context
    for body in sent:
        assert not any(text in body for text in PAYMENTS_TEXTS)
    posted = [p for p in bot.slack.posted if p["channel"] == KIM_DM]
    assert posted and not any(t in p["text"] for p in posted for t in PAYMENTS_TEXTS)


def test_nothing_of_the_viewed_channel_is_anywhere_in_what_was_sent_for_a_non_member(
    bot: OfflineBot,
) -> None:
    """The issue's words: no content of the channel anywhere in what was sent. Every message of
    #payments, against every request to Claude in Kim's turn and every Slack call made for it."""
    fixture = load_fixture(FIXTURE)
    texts = [m["text"] for m in fixture.slack_api["history"][PAYMENTS]]
    texts += [e["event"].get("text", "") for e in fixture.envelopes
              if e["event"].get("channel") == PAYMENTS]  # fmt: skip
    probes = [text[:30] for text in texts if text]
    assert len(probes) >= 3
    assert bot.anthropic is not None
    kim = results(bot)[1]
    to_claude = [json.dumps(r.body) for r in bot.anthropic.requests if KIM_DM in json.dumps(r.body)]
    to_slack = [json.dumps(c.params) for c in bot.slack.calls if KIM_DM in json.dumps(c.params)]
    shown = [json.dumps(c) for c in bot.slack.sent if c["channel"] == KIM_DM]
    assert to_claude and to_slack and shown
    for sent in (*to_claude, *to_slack, *shown, json.dumps(kim.reply)):
        assert not any(probe in sent for probe in probes)
    # And nothing of it was read for Kim: no Slack read names the channel after her question.
    kim_at = next(i for i, c in enumerate(bot.slack.calls) if KIM_DM in json.dumps(c.params))
    later = bot.slack.calls[kim_at:]
    until = next(i for i, c in enumerate(later) if c.method == "chat.stopStream")
    reads = [c for c in later[:until] if c.params.get("channel") == PAYMENTS]
    assert [c.method for c in reads] in ([], ["conversations.members"])


def test_a_context_change_moves_the_next_question_to_the_new_channel(bot: OfflineBot) -> None:
    later = results(bot)[2]
    assert later.turn.viewed_channel == DEPLOYS
    assert later.context.snapshot.channel.id == DEPLOYS
    assert "Deploy #2230" in later.reply
    assert len(calls(bot, "assistant.threads.setTitle")) == 2  # one per thread, first question


def test_the_viewed_channel_survives_a_restart_and_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "assistant_threads.jsonl"
    threads = LocalPaneThreads(path)
    threads.save(channel_id="D1", thread_ts="1.000001", context={"channel_id": "C1"})
    threads.save(channel_id="D1", thread_ts="1.000001", context={"channel_id": "C2"})
    assert threads.first_question("D1", "1.000001") is True
    with path.open("a") as handle:
        handle.write('{"channel_id": "D1", "thread_')  # a crash mid-write
    again = LocalPaneThreads(path)
    assert again.viewed("D1", "1.000001") == "C2"  # the last word wins
    assert again.first_question("D1", "1.000001") is False  # titled once, ever
    assert again.viewed("D9", "1.000001") is None


@pytest.mark.slow
def test_the_store_is_bounded_and_rewrites_itself(tmp_path: Path) -> None:
    path = tmp_path / "assistant_threads.jsonl"
    threads = LocalPaneThreads(path, max_threads=10)
    for n in range(2_000):
        threads.save(channel_id="D1", thread_ts=f"{n}.000001", context={"channel_id": "C1"})
    assert threads.viewed("D1", "1999.000001") == "C1"
    assert threads.viewed("D1", "0.000001") is None  # the oldest forgotten
    assert len(path.read_text().splitlines()) < 1_100  # rewritten, not grown without bound
