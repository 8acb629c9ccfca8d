"""The small fixtures (fixtures/build_small.py), replayed: one Slack-edge behaviour each.

Every expectation is read off the report of ``replay(load_fixture(...))`` (the interface in
fixtures/README.md); timestamps come from the fixture's own events, never hard-coded.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from chanctx.bot.messages_api.request_rules import NO_ANSWER, problems
from chanctx.bot.replay.fake_claude import OFFLINE_MARK
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.replay.runner import ReplayOptions, replay
from chanctx.fixtures._old_threads import OLD_THREAD, OLDER_CHANNEL
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from . import test_replay_demo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALL_FIXTURES = sorted(p.parent.name for p in FIXTURES.glob("*/events.jsonl"))
PAGE = 15  # conversations.replies messages per page (SlackFetcher's page_size)


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_small", FIXTURES / "build_small.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _load_builder()
SMALL: list[str] = sorted(BUILD.BUILDERS)


@functools.cache
def report(name: str) -> dict[str, Any]:
    """The replay report of ``name`` (cached: treat as read-only)."""
    return replay(load_fixture(FIXTURES / name))


def envelopes(name: str) -> list[dict[str, Any]]:
    return load_fixture(FIXTURES / name).envelopes


def ts_of(name: str, fragment: str) -> str:
    """The ts of the one posted message (a ``message`` event) whose text contains ``fragment``."""
    found = {
        str(e["event"]["ts"])
        for e in envelopes(name)
        if e["event"].get("type") == "message"
        and not e["event"].get("subtype", "").startswith("message_")
        and fragment in e["event"].get("text", "")
    }
    assert len(found) == 1, f"{fragment!r} names {len(found)} messages in {name}"
    return found.pop()


def turns(name: str) -> list[tuple[str, str, str]]:
    return [(t["channel"], t["thread_ts"], t["anchor_ts"]) for t in report(name)["turns"]]


def calls(name: str, method: str) -> int:
    return int(report(name)["slack_api_calls"].get(method, 0))


def context(turn: dict[str, Any]) -> dict[str, Any]:
    assert turn["error"] is None, turn["error"]
    assert turn["context"] is not None
    return dict(turn["context"])


def snapshot_texts(turn: dict[str, Any]) -> list[str]:
    snapshot = context(turn)["snapshot"]
    return [snapshot["anchor"]["text"], *(a["snippet"] for a in snapshot["adjacent"])]


def thread_texts(turn: dict[str, Any]) -> list[str]:
    thread = context(turn)["thread"]
    assert thread is not None
    return [r["text"] for r in thread["replies"]]


# --- every fixture -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_fixture_replays_deterministically(name: str) -> None:
    again = replay(load_fixture(FIXTURES / name))
    assert json.dumps(again, sort_keys=True) == json.dumps(report(name), sort_keys=True)


def test_every_fixture_directory_is_tested() -> None:
    # A fixture is tested here by tests named test_<fixture>_..., or by a module of its own.
    from . import test_native_fixtures  # the Slack-native fixtures (fixtures/build_native.py)

    names = [*globals(), *vars(test_native_fixtures)]
    tested = {n for n in ALL_FIXTURES if any(f.startswith(f"test_{n}_") for f in names)}
    tested |= {p.name for p in (test_replay_demo.DEMO,) if p.parent == FIXTURES}
    assert {"demo", *SMALL} <= set(ALL_FIXTURES)
    assert set(ALL_FIXTURES) <= tested, f"fixtures without a test: {set(ALL_FIXTURES) - tested}"


@pytest.mark.parametrize("name", SMALL)
def test_build_small_regenerates_each_fixture_exactly(name: str) -> None:
    for file_name, text in BUILD.render(name).items():
        assert (FIXTURES / name / file_name).read_text() == text, f"{name}/{file_name} is stale"


@pytest.mark.parametrize("name", SMALL)
def test_small_fixtures_hold_no_secrets(name: str) -> None:
    for envelope in envelopes(name):
        assert envelope["token"] == "REDACTED"
    text = "".join(p.read_text() for p in (FIXTURES / name).iterdir())
    assert "xox" not in text and "xapp" not in text


# --- retries/ ----------------------------------------------------------------------------


def test_retries_fixture_redelivers_event_ids() -> None:
    ids = [e["event_id"] for e in envelopes("retries")]
    repeated = {i: ids.count(i) for i in ids if ids.count(i) > 1}
    # The first mention's app_mention once more; the second's message once, app_mention twice.
    assert sorted(repeated.values()) == [2, 2, 3]


def test_retries_one_turn_per_mention() -> None:
    first = ts_of("retries", "is the p99 bump after 2201 expected")
    root = ts_of("retries", "Rollout plan for search-api v4.3.0")
    second = ts_of("retries", "what did we decide about the canary")
    assert turns("retries") == [
        ("C0DEPLOYS1", first, first),  # top level: answered in a new thread under it
        ("C0DEPLOYS1", root, second),  # in a thread: answered there
    ]
    top, threaded = report("retries")["turns"]
    assert context(top)["thread"] is None
    assert thread_texts(threaded) == ["Canary first please, 5% for an hour."]


def test_retries_show_the_working_indicator_once_per_mention() -> None:
    assert calls("retries", "reactions.add") == calls("retries", "reactions.remove") == 2
    assert calls("retries", "assistant.threads.setStatus") == 0
    assert calls("retries", "conversations.history") == 1  # the cold start, once
    assert calls("retries", "conversations.replies") == 0  # the thread was seen live


# --- dm/ ---------------------------------------------------------------------------------


def test_dm_each_question_is_answered_once_and_the_edit_not_at_all() -> None:
    question = ts_of("dm", "Who is on call for payments this week?")
    mention = ts_of("dm", "and who owns the refunds runbook?")
    assistant = ts_of("dm", "Draft a short status update")
    (started,) = [e["event"] for e in envelopes("dm") if e["event"]["type"].startswith("assist")]
    thread_ts = started["assistant_thread"]["thread_ts"]
    assert turns("dm") == [
        ("D0SAMDM001", question, question),
        ("D0SAMDM001", mention, mention),  # message + app_mention: one turn
        ("D0SAMDM001", thread_ts, assistant),  # the assistant thread: answered in it
    ]


def test_dm_assistant_thread_shows_status_instead_of_a_reaction() -> None:
    assert calls("dm", "assistant.threads.setStatus") == 2  # set, then cleared: one turn
    # :eyes: only on the two plain DMs, never on the assistant-thread message.
    assert calls("dm", "reactions.add") == calls("dm", "reactions.remove") == 2


def test_dm_edit_reaches_the_later_context() -> None:
    texts = snapshot_texts(report("dm")["turns"][-1])
    assert "Who is on call for payments this week and next?" in texts
    assert "Who is on call for payments this week?" not in texts


# --- cold_thread/ ------------------------------------------------------------------------

OLD_REPLIES = [text for _, _, text in OLD_THREAD]
OLD_PAGES = math.ceil((1 + len(OLD_REPLIES) + 1) / PAGE)  # root + old replies + the mention


def test_cold_thread_fixture_shape() -> None:
    history = load_fixture(FIXTURES / "cold_thread").slack_api["history"]["C0PAYMENTS"]
    (root,) = [m for m in history if m.get("reply_count")]
    assert root["reply_count"] == len(OLD_REPLIES) == 40
    assert len([m for m in history if m.get("thread_ts") == root["ts"]]) == 41  # root + 40
    assert OLD_PAGES == 3


# A turn waits at most a minute for Slack: with conversations.replies at one call a minute
# for new apps, that is two calls per mention, and the rest comes on later mentions.
CALLS_PER_TURN = 2


def test_cold_thread_is_fetched_in_pages_a_minute_of_waiting_per_mention() -> None:
    assert calls("cold_thread", "conversations.history") == 1
    turns = report("cold_thread")["turns"]
    assert calls("cold_thread", "conversations.replies") == CALLS_PER_TURN * len(turns)
    assert all(t["waited_s"] <= 60 for t in turns)


def test_cold_thread_first_mention_answers_with_what_a_minute_fetched_and_says_so() -> None:
    first = report("cold_thread")["turns"][0]
    root_ts = first["thread_ts"]
    assert first["anchor_ts"] == ts_of("cold_thread", "summarize what happened in this thread")
    thread = context(first)["thread"]
    assert thread["thread_id"] == root_ts
    assert thread["root"]["text"].startswith("Nightly settlement reconciliation failed")
    got = thread_texts(first)
    assert got and set(got) <= set(OLD_REPLIES)
    # Slack's reply count, not what happened to be fetched: the reader sees the gap.
    assert thread["truncation"]["total_replies"] == 40 > thread["truncation"]["included_replies"]
    (note,) = context(first)["notes"]
    assert "could not be fetched yet" in note and "later answers fetch the rest" in note
    # ... and the older channel messages come from that one conversations.history.
    adjacent = snapshot_texts(first)[1:]
    for _, _, text in OLDER_CHANNEL:
        assert text in adjacent


def test_cold_thread_later_mentions_fetch_more_and_stay_current_from_events() -> None:
    first, second = report("cold_thread")["turns"]
    assert second["thread_ts"] == first["thread_ts"]
    assert second["anchor_ts"] == ts_of("cold_thread", "what is still open from this thread")
    old_first = [t for t in thread_texts(first) if t in OLD_REPLIES]
    old_second = [t for t in thread_texts(second) if t in OLD_REPLIES]
    assert set(old_first) < set(old_second)  # the second mention went on where the first ended
    assert thread_texts(second)[-2:] == [
        "@chanctx can you summarize what happened in this thread for the incident note?",
        "Adding: the incident note is in review, link in the wiki.",
    ]  # seen live, never fetched


# --- rate_limited/ -----------------------------------------------------------------------


def test_rate_limited_fixture_declares_one_429() -> None:
    faults = load_fixture(FIXTURES / "rate_limited").slack_api["faults"]
    assert faults == [
        {
            "method": "conversations.replies",
            "n": 1,
            "status": 429,
            "retry_after": 30,
            "error": None,
        }
    ]


def test_rate_limited_thread_waits_its_retry_after_within_the_minute_and_says_so() -> None:
    turns = report("rate_limited")["turns"]
    assert all(t["waited_s"] <= 60 for t in turns)
    # The 429's 30 s come out of the first mention's minute: it gets less than without it...
    cold = report("cold_thread")["turns"]
    assert len(thread_texts(turns[0])) < len(thread_texts(cold[0]))
    assert all("could not be fetched yet" in n for t in turns for n in context(t)["notes"])
    # ... and the second mention still goes on from there.
    assert len(thread_texts(turns[1])) > len(thread_texts(turns[0]))


# --- big_cold_thread/ --------------------------------------------------------------------


def test_big_cold_thread_a_mention_at_its_end_gets_the_newest_replies() -> None:
    found = report("big_cold_thread")
    (turn,) = found["turns"]
    thread = context(turn)["thread"]
    texts = [r["text"] for r in thread["replies"]]
    assert texts[-1].startswith("Update 300:")  # the newest reply, what the question is about
    numbers = [int(t.split(":")[0].removeprefix("Update ")) for t in texts]
    assert numbers == list(range(numbers[0], 301))  # the newest ones, with no gap
    assert thread["truncation"]["total_replies"] == 300
    assert turn["waited_s"] <= 60
    assert found["slack_api_calls"]["conversations.replies"] == CALLS_PER_TURN
    (note,) = context(turn)["notes"]
    assert "300" in note or "301" in note


def test_big_cold_thread_partial_is_never_cached_as_the_whole_thread() -> None:
    fixture = load_fixture(FIXTURES / "big_cold_thread")
    with OfflineBot(fixture.slack_api, start_time=float(fixture.envelopes[0]["event_time"])) as bot:
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
        (turn,) = bot.runtime.runner.results
        assert turn.context is not None and turn.context.thread is not None
        root_ts = turn.context.thread.thread_id
        assert bot.engine.threads is not None
        assert bot.engine.threads.peek("C0DEPLOYS1", root_ts) is None
        assert not bot.engine.thread_is_cached("C0DEPLOYS1", root_ts)


def test_fake_slack_reads_faults_from_its_state() -> None:
    state = {
        "channels": {"C1": {"id": "C1", "name": "general"}},
        "faults": [
            {"method": "conversations.info", "n": 1, "status": 429, "retry_after": 30},
            {"method": "users.info", "status": 200, "error": "user_not_visible"},
        ],
    }
    with FakeSlackAPI(state) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        with pytest.raises(SlackApiError) as limited:
            client.conversations_info(channel="C1")
        assert limited.value.response.status_code == 429
        assert limited.value.response.headers.get("Retry-After") in ("30", ["30"])
        assert client.conversations_info(channel="C1")["channel"]["name"] == "general"
        with pytest.raises(SlackApiError) as failed:
            client.users_info(user="U1")
        assert failed.value.response["error"] == "user_not_visible"
    with pytest.raises(ValueError):
        FakeSlackAPI({"faults": [{"n": 1}]})


# --- edits_no_answer/ --------------------------------------------------------------------

DELETED = "ledger export rows 1-500"


def test_edits_no_answer_fixture_is_delivered_as_slack_does() -> None:
    events = [e["event"] for e in envelopes("edits_no_answer")]
    kinds = [(e["type"], e.get("subtype")) for e in events]
    assert kinds.count(("message", "message_changed")) == 2
    assert kinds.count(("message", "message_deleted")) == 1
    # Slack re-sends an app_mention (with "edited") for an edit that mentions the app, and an
    # app_mention (with bot_id) for another bot's message; none for the app's own messages.
    mentions = [e for e in events if e["type"] == "app_mention"]
    assert [("edited" in m, m.get("bot_id")) for m in mentions] == [
        (True, None),
        (False, "B0DEPLOYBT"),
        (False, None),
    ]


def test_edits_no_answer_only_the_real_mention_is_answered() -> None:
    final = ts_of("edits_no_answer", "what changed in ingest today")
    answered = {
        t["anchor_ts"]: snapshot_texts(t)[0] if t["context"] else t["error"]
        for t in report("edits_no_answer")["turns"]
    }
    # Not the edit (message_changed + app_mention "edited"), the deletion, deploybot's
    # bot_message (+ app_mention with bot_id), nor our own message naming us.
    assert list(answered) == [final], f"answered: {answered}"
    assert turns("edits_no_answer") == [("C0PLATFORM", final, final)]
    assert calls("edits_no_answer", "reactions.add") == 1


def test_edits_no_answer_context_has_the_edits_and_not_the_deletion() -> None:
    final = report("edits_no_answer")["turns"][-1]
    texts = snapshot_texts(final)
    assert "eu-west ingest queue depth is 14k and climbing." in texts
    assert "@chanctx what's the max batch size for the ingest v2 API?" in texts
    assert not [t for t in texts if "12k and climbing" in t or "for the ingest API?" in t]
    # Deleted: absent from every context built after the deletion, in full JSON.
    deleted_at = next(
        float(e["event"]["ts"])
        for e in envelopes("edits_no_answer")
        if e["event"].get("subtype") == "message_deleted"
    )
    later = [t for t in report("edits_no_answer")["turns"] if float(t["anchor_ts"]) > deleted_at]
    assert later and all(DELETED not in json.dumps(t) for t in later)
    # Our own message and the other bot's stay in the channel's context.
    assert "Changelog questions go to @chanctx in a thread, please." in texts
    assert any(t.startswith("Deploy #318 finished") for t in texts)


# --- assistant_pane/ (what was sent and posted: tests/test_assistant_pane.py) ----------------


def test_assistant_pane_answers_each_pane_question_once_from_its_viewed_channel() -> None:
    turns = report("assistant_pane")["turns"]
    assert [t["context"]["snapshot"]["channel"]["id"] for t in turns] == [
        "C0PAYMENTS",
        "D0KIMDM001",  # not a member of #payments: the DM itself, nothing of #payments
        "C0DEPLOYS1",
    ]
    assert all(t["reply"] and t["error"] is None for t in turns)


# --- broken_answers/ -------------------------------------------------------------------------


def test_broken_answers_are_told_honestly_and_each_thread_keeps_working(tmp_path: Path) -> None:
    requests_out = tmp_path / "requests.jsonl"
    found = replay(
        load_fixture(FIXTURES / "broken_answers"),
        options=ReplayOptions(requests_out=requests_out),
    )
    turns = found["turns"]
    assert [t["error"] for t in turns] == [None] * 4
    empty, after_empty, cut, after_cut = (t["reply"] for t in turns)
    assert "empty reply" in empty  # said so, not silence
    assert after_empty.startswith("Check the health endpoint")  # the thread works again
    assert cut.startswith("Let me search") and "cut off at the output limit" in cut
    assert OFFLINE_MARK in after_cut and "40k" in after_cut  # a real answer, with a tool call
    assert turns[3]["tool_calls"] and not turns[3]["tool_calls"][0]["is_error"]
    # Every request the replay sent passed the fake's check of the API's rules.
    assert found["claude"]["rejected"] == 0
    # What each user saw is in the report: one message per turn, streamed, the reply itself.
    for turn in turns:
        calls = turn["posted"]
        assert calls[0]["method"] == "chat.startStream"
        assert calls[-1]["method"] == "chat.stopStream" and len({c["ts"] for c in calls}) == 1
        assert "".join(c["markdown_text"] or "" for c in calls) == turn["reply"]
        assert calls[-1]["text"] == turn["reply"]
    sent = [json.loads(line) for line in requests_out.read_text().splitlines()]
    assert len(sent) == found["claude"]["requests"] == 5
    assert all(problems(body) == [] for body in sent)
    # The second mention of each thread carries the earlier exchange, repaired, not dropped.
    second = sent[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == [{"type": "text", "text": NO_ANSWER}]
    in_cut_thread = sent[3]["messages"]
    cut_reply = in_cut_thread[1]["content"]
    assert [b["type"] for b in cut_reply] == ["text"]  # the unanswered tool_use is gone


# --- channel_knowledge/ --------------------------------------------------------------------


def test_channel_knowledge_reads_the_old_pins_once_and_answers_from_the_channel() -> None:
    # The query API's side of this fixture (files, recipe, pins) is tests/test_query_sources.py.
    (turn,) = report("channel_knowledge")["turns"]
    assert turn["error"] is None and turn["channel"] == "C0PLATFORM"
    assert calls("channel_knowledge", "pins.list") == 0  # answers do not use pins
    assert calls("channel_knowledge", "conversations.history") == 1
    assert calls("channel_knowledge", "files.info") == 0  # no file is read for an answer
    assert any("Failover runbook" in text for text in snapshot_texts(turn))


# --- playbook/ -----------------------------------------------------------------------------


def _playbook_blocks(body: dict[str, Any]) -> list[str]:
    return [
        block["text"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "text" and block["text"].startswith("CHANNEL PLAYBOOK")
    ]


def test_playbook_learns_merges_quarantines_and_supersedes(tmp_path: Path) -> None:
    requests_out = tmp_path / "requests.jsonl"
    found = replay(
        load_fixture(FIXTURES / "playbook"), options=ReplayOptions(requests_out=requests_out)
    )
    turns = found["turns"]
    assert len(turns) == 5 and all(t["error"] is None for t in turns)
    bullets = {b["id"]: b for b in found["playbook"]["C0OPSTEAM1"]}
    # Five planted facts, each in its section; the chatter ("Lunch is at noon") is not.
    assert {b["id"].split("-")[0] for b in bullets.values()} == {
        "owners", "conventions", "runbooks", "pitfalls", "glossary"}  # fmt: skip
    assert not any("Lunch" in b["content"] for b in bullets.values())
    # The duplicate merged into the first statement: one bullet, both provenances.
    staging = bullets["conventions-00001"]
    assert len(staging["sources"]) == 2 and staging["state"] == "superseded"
    # The poisoned claim: two people marked the answer that cited it harmful.
    poisoned = bullets["conventions-00002"]
    assert "hardcode" in poisoned["content"]
    assert (poisoned["harmful"], poisoned["state"]) == (2, "quarantined")
    # A person's :+1: on the answer that cited the owner; then a newer owner supersedes it.
    assert (bullets["owners-00001"]["helpful"], bullets["owners-00001"]["state"]) == (
        1,
        "superseded",
    )
    assert bullets["owners-00002"]["content"].startswith("Sam owns payments-api")
    # Each turn's context holds the bullets that existed when it started: none for the first.
    assert turns[0]["playbook"] == []
    assert "owners-00001" in turns[1]["playbook"] and "owners-00002" in turns[4]["playbook"]
    sent = [json.loads(line) for line in requests_out.read_text().splitlines()]
    blocks = [_playbook_blocks(body) for body in sent]
    assert all(len(b) <= 1 for b in blocks)  # attached once per session
    final = blocks[-1][0] if blocks[-1] else next(b[0] for b in reversed(blocks) if b)
    assert "Sam owns payments-api now" in final and "Kim owns payments-api" not in final
    assert "no longer read-only" in final and "after 14:00 UTC" not in final
    # A quarantined or superseded bullet never reaches a request after it changed state:
    # the poisoned claim is in the sessions of turns 3 (cited, marked harmful) and no later.
    assert "[conventions-00002]" in turns[2]["reply"]
    assert "conventions-00002" not in turns[3]["playbook"] + turns[4]["playbook"]
    for text in (t for turn_blocks in blocks for t in turn_blocks):
        if "Sam owns payments-api now" in text:  # sessions after the supersession
            assert "hardcode" not in text and "Kim owns" not in text
    assert "hardcode" not in turns[4]["reply"].split("Here is what this channel says")[0]


def test_playbook_curated_by_claude_through_the_fake_matches_the_rules(tmp_path: Path) -> None:
    offline = report("playbook")
    requests_out = tmp_path / "requests.jsonl"
    live = replay(
        load_fixture(FIXTURES / "playbook"),
        options=ReplayOptions(curator="claude", requests_out=requests_out),
    )
    strip = [{k: b[k] for k in ("id", "content", "state", "helpful", "harmful")}
             for b in live["playbook"]["C0OPSTEAM1"]]  # fmt: skip
    assert strip == [{k: b[k] for k in ("id", "content", "state", "helpful", "harmful")}
                     for b in offline["playbook"]["C0OPSTEAM1"]]  # fmt: skip
    # One curator request per answered turn with something new to read, each one valid,
    # forcing the structured tool; the answers' own requests are as before.
    sent = [json.loads(line) for line in requests_out.read_text().splitlines()]
    curating = [b for b in sent if (b.get("tool_choice") or {}).get("type") == "tool"]
    assert len(curating) == 5 and len(sent) == offline["claude"]["requests"] + 5
    assert all(problems(body) == [] for body in curating)
    assert all(b["model"] == "claude-haiku-4-5" for b in curating)
    assert live["claude"]["rejected"] == 0
