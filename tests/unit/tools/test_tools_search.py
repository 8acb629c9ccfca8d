"""channel_context: ranking, signals, since/authors/max_results, coverage, determinism."""

from __future__ import annotations

import random
from typing import Any

from chanctx.cache import ChannelHistory
from chanctx.context import Message, iso_from_ts
from chanctx.tools._context_tool import minute
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.tools.test_tools_data import (
    C1,
    FLAG_THREAD,
    INCIDENT,
    build_history,
    c1_messages,
    c2_messages,
    ok,
    ranked,
    signals,
    tools_for,
    ts,
)

POOL_TEXT = "Found it: the DB connection pool size was set to 5"


def search(args: dict[str, Any], **options: Any) -> dict[str, Any]:
    return ok(tools_for(**options).call("channel_context", args))


def texts(answer: dict[str, Any]) -> list[str]:
    return [result["text"] for result in answer["results"]]


def test_why_question_finds_the_reply_that_answers_it() -> None:
    answer = search({"intent": "why did checkout fail?"})
    found = texts(answer)
    # The root that names the failure, then the reply that explains it: both near the top.
    assert found[0].startswith("Checkout is failing")
    pool = next(i for i, text in enumerate(found) if text.startswith(POOL_TEXT))
    assert pool <= 2
    result = answer["results"][pool]
    assert result["thread"] == f"thread {INCIDENT}"
    why = signals(ranked(intent="why did checkout fail?"))[result["text"]]
    assert "thread:checkout,fail" in why and "states_cause" in why


def test_relevance_signal_names_the_matched_keywords() -> None:
    answer = search({"intent": "pay-v2 feature flag plan"})
    top = answer["results"][0]
    assert top["text"].startswith("Proposal: ship the new payment provider")
    hit = ranked(intent="pay-v2 feature flag plan")[0]
    assert hit.signal.split("; ")[0] == "keyword:pay-v2,feature,flag"


def test_identifiers_match_whole_not_by_their_parts() -> None:
    found = texts(search({"intent": "v2.30.4"}))
    assert found and all("v2.30.4" in text for text in found)  # never v2.30.3 or pay-v2
    assert texts(search({"intent": "9931"})) == texts(search({"intent": "#9931"}))
    assert texts(search({"intent": "#9931"}))[0].startswith(POOL_TEXT)


def test_file_titles_and_names_are_searchable() -> None:
    top = search({"intent": "grafana"})["results"][0]
    assert top["text"] == "[shared checkout-api 502 rate]"
    assert ranked(intent="grafana")[0].signal.startswith("keyword:grafana")


def test_a_root_with_replies_says_how_many_and_when_the_last_came() -> None:
    results = search({"intent": "checkout failing 502s"})["results"]
    root = next(r for r in results if r["message_id"] == INCIDENT)
    assert root["thread"] == f"5 replies, last {minute(ts(4_200, 100))}"
    assert root["when"] == minute(INCIDENT) and root["who"] == "Priya"
    plain = search({"intent": "lunch offsite"})["results"][0]
    assert plain["thread"] is None


def test_no_match_says_so_instead_of_guessing() -> None:
    answer = search({"intent": "kubernetes helm chart"})
    assert answer["results"] == []
    assert "No message matched the keywords 'kubernetes', 'helm', 'chart'" in answer["note"]
    assert "truncated" not in answer


def test_an_intent_without_keywords_lists_recent_activity() -> None:
    answer = search({"intent": "what's going on?", "max_results": 3})
    assert len(answer["results"]) == 3
    newest_reply = answer["results"][0]
    assert newest_reply["text"].startswith("Rollback done")
    assert ranked(intent="what's going on?")[0].signal == "recent_activity"


def test_since_filters_out_older_messages_and_coverage_is_exact() -> None:
    c1 = sorted(c1_messages(), key=lambda m: float(m.ts))
    cutoff = iso_from_ts(INCIDENT)  # the incident root's second
    answer = search({"intent": "checkout", "since": cutoff})
    kept = [m for m in c1 if float(m.ts) >= float(INCIDENT.split(".")[0])]
    assert answer["searched"] == len(kept)
    assert answer["range"] == [minute(kept[0].ts), minute(kept[-1].ts)]
    assert all(int(float(r["message_id"])) >= int(float(INCIDENT)) for r in answer["results"])
    assert not any(t.startswith("Deploy v2.30.4") for t in texts(answer))
    # A Slack ts works the same way; a date alone means midnight UTC.
    same = search({"intent": "checkout", "since": INCIDENT})
    assert (same["searched"], same["range"]) == (answer["searched"], answer["range"])
    whole = search({"intent": "checkout", "since": "2026-01-01"})
    assert whole["searched"] == len(c1)
    assert whole["range"] == [minute(c1[0].ts), minute(c1[-1].ts)]


def test_since_after_everything_scans_nothing() -> None:
    answer = search({"intent": "checkout", "since": "2030-01-01T00:00:00+02:00"})
    assert answer == {"results": [], "searched": 0}


def test_authors_boost_their_messages_by_name_or_id() -> None:
    plain = search({"intent": "deploy"})["results"]
    assert plain[0]["who"] == "deploybot (bot)"
    for who in (["Dev"], ["U2DEV"], ["@dev"]):
        boosted = search({"intent": "deploy", "authors": who})["results"]
        assert boosted[0]["who"] == "Dev"
        assert boosted[0]["text"].startswith(POOL_TEXT)
        assert "author:Dev" in ranked(intent="deploy", authors=tuple(who))[0].signal
    unknown = search({"intent": "deploy", "authors": ["Nobody"]})
    assert unknown["results"] == plain


def test_authors_alone_find_their_messages_when_no_keyword_matches() -> None:
    results = search({"intent": "zeppelin", "authors": ["Lee"]})["results"]
    assert results and {r["who"] for r in results} == {"Lee"}


@given(st.integers(1, 50))
@settings(max_examples=15, deadline=None)
def test_max_results_bounds_the_results(limit: int) -> None:
    answer = search({"intent": "anything new?", "max_results": limit})
    # Every message is a candidate, but at most 3 per thread: the incident thread has 6.
    reachable = len(c1_messages()) - 3
    assert len(answer["results"]) == min(limit, reachable)
    ids = [r["message_id"] for r in answer["results"]]
    assert len(set(ids)) == len(ids)


def test_one_thread_never_takes_more_than_three_slots() -> None:
    answer = search({"intent": "checkout fail", "max_results": 8})
    in_incident = [
        r for r in answer["results"] if INCIDENT in (r["message_id"], (r["thread"] or "")[7:])
    ]
    assert len(in_incident) == 3
    assert "at most 3 per thread" in answer["note"]


def test_deleted_messages_never_appear() -> None:
    history = build_history()
    pool_ts = ts(3_900, 100)
    history.delete(C1, pool_ts)
    history.delete(C1, INCIDENT)  # a root with replies: a tombstone remains
    for intent in ("pool size", "checkout failing", "what's up?"):
        answer = search({"intent": intent, "max_results": 50}, history=history)
        ids = {r["message_id"] for r in answer["results"]}
        assert pool_ts not in ids and INCIDENT not in ids
        assert not any(POOL_TEXT in t for t in texts(answer))


def test_same_call_same_answer_whatever_the_insertion_order() -> None:
    args = {"intent": "checkout rollback 502 flag", "max_results": 20}
    expected = tools_for().call("channel_context", args).content
    messages = c1_messages() + c2_messages()
    for seed in range(5):
        random.Random(seed).shuffle(messages)
        history = ChannelHistory()
        for message in messages:
            history.record(message)
        assert tools_for(history).call("channel_context", args).content == expected


def test_equal_scores_are_ordered_newest_first() -> None:
    history = ChannelHistory()
    for offset in (0, 60, 120):
        history.record(Message(channel=C1, ts=ts(offset), user_id="U4LEE", text="standup notes"))
    answer = search({"intent": "standup"}, history=history, now=lambda: float(ts(120)))
    assert [r["message_id"] for r in answer["results"]] == [ts(120), ts(60), ts(0)]


def test_recency_is_relative_to_now_when_given() -> None:
    # The flag thread was live two days before the newest message: "recent" only back then.
    old_now = ranked(intent="flag staging", now=float(FLAG_THREAD) + 1_000)
    assert "recent_activity" in old_now[0].signal
    assert "recent_activity" not in ranked(intent="flag staging")[0].signal


def test_an_empty_channel_answers_with_empty_coverage() -> None:
    answer = search({"intent": "anything"}, history=ChannelHistory())
    assert answer == {"results": [], "searched": 0}
