"""The import's fast path agrees with live intake: for any exported message, ``plain_row``
either gives exactly the row intake's message would be stored as, or steps aside (None) and
the importer asks intake. Fields come in the shapes Slack writes and in wrong ones."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chanctx.bot.export.reader import message_problem
from chanctx.bot.export.rows import plain_row
from chanctx.bot.export.typed_day import typed_day
from chanctx.bot.slack.intake import IntakeAction, Record, SelfIdentity, intake
from chanctx.cache.channel_store import index_words, row_of, row_words
from hypothesis import given, settings
from hypothesis import strategies as st

TS = st.sampled_from(["1700000000.000100", "1700000001.5", "1700000002.000300", "9.000001"])
ODD = st.one_of(
    st.none(),
    st.just(""),
    st.integers(-2, 3),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.sampled_from(["ts", "user", "name"]), st.text(max_size=4), max_size=2),
)
STRINGS = st.lists(st.sampled_from(["U1", "U2"]), max_size=3)
REACTION = st.fixed_dictionaries(
    {"name": st.sampled_from(["eyes", "+1"])},
    optional={"count": st.integers(0, 3), "users": STRINGS},
)


def good_fields() -> dict[str, st.SearchStrategy[Any]]:
    """Every field intake reads, in the shapes an export holds them."""
    return {
        "type": st.sampled_from(["message", "message", "file"]),
        "subtype": st.sampled_from(
            [
                "",
                "bot_message",
                "thread_broadcast",
                "me_message",
                "channel_join",
                "channel_topic",
                "message_changed",
                "file_share",
            ]
        ),
        "text": st.one_of(st.none(), st.text(max_size=12)),
        "user": st.one_of(st.none(), st.sampled_from(["", "U1", "U2"])),
        "username": st.one_of(st.none(), st.sampled_from(["", "deploybot"])),
        "bot_id": st.one_of(st.none(), st.sampled_from(["", "B1"])),
        "bot_profile": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {}, optional={"name": st.one_of(st.text(max_size=4), st.integers())}
            ),
        ),
        "thread_ts": st.one_of(st.none(), st.just(""), TS),
        "reply_count": st.integers(-1, 4),
        "reply_users": STRINGS,
        "latest_reply": st.one_of(st.none(), st.just(""), TS),
        "edited": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {}, optional={"user": st.just("U1"), "ts": st.one_of(TS, st.just(""))}
            ),
        ),
        "reactions": st.lists(REACTION, max_size=2),
        "files": st.lists(
            st.fixed_dictionaries(
                {"id": st.sampled_from(["F1", "F2"])},
                optional={
                    "name": st.one_of(st.none(), st.just("a.pdf")),
                    "title": st.one_of(st.none(), st.just("Plan ü")),
                    "mimetype": st.sampled_from(["", "application/pdf", None]),
                    "size": st.integers(-1, 3),
                    "url_private": st.sampled_from(["", "https://files.slack.com/a", None]),
                    "url_private_download": st.sampled_from(["", "https://files.slack.com/d"]),
                    "mode": st.sampled_from(["hosted", "tombstone", "hidden_by_limit", None]),
                },
            ),
            max_size=2,
        ),
        "client_msg_id": st.text(max_size=4),
    }


@st.composite
def exported(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"ts": draw(TS)}
    for name, good in good_fields().items():
        roll = draw(st.integers(0, 19))
        if roll < (17 if name in ("type", "subtype", "files") else 9):
            continue  # absent, as most fields of most messages
        message[name] = draw(ODD) if roll == 19 else draw(good)
    return message


def intake_action(raw: dict[str, Any]) -> IntakeAction:
    """What intake makes of ``raw`` arriving as a live event in channel C1 (a lone ``file``
    arrives as ``files``, as the export reader passes it)."""
    event = dict(raw)
    if "file" in event and "files" not in event and isinstance(event["file"], dict):
        event["files"] = [event["file"]]
    event["channel"] = "C1"
    event.setdefault("type", "message")
    return intake(event, SelfIdentity())


def intake_row(raw: dict[str, Any]) -> Any:
    action = intake_action(raw)
    return row_of(action.message) if isinstance(action, Record) else None


@pytest.mark.slow
@settings(max_examples=400)
@given(exported())
def test_plain_row_is_intakes_row_or_steps_aside(raw: dict[str, Any]) -> None:
    assert message_problem(raw, "x") is None
    fast = plain_row(raw)
    if fast is not None:
        assert fast == intake_row(raw)


def test_most_messages_are_plain() -> None:
    person = {"type": "message", "user": "U1", "text": "ça marche", "ts": "1700000000.000100",
              "client_msg_id": "x", "team": "T1", "user_profile": {"display_name": "ana"}}  # fmt: skip
    reply = dict(person, thread_ts="1700000000.000050", parent_user_id="U2")
    edited = dict(person, edited={"user": "U1", "ts": "1700000009.000000"})
    reacted = dict(person, reactions=[{"name": "eyes", "users": ["U2"], "count": 1}])
    bot = {"type": "message", "subtype": "bot_message", "bot_id": "B1", "username": "deploybot",
           "text": "deployed", "ts": "1700000001.000100"}  # fmt: skip
    broadcast = dict(reply, subtype="thread_broadcast")
    for raw in (person, reply, edited, reacted, bot, broadcast):
        fast = plain_row(raw)
        assert fast is not None and fast == intake_row(raw)
    joined = dict(person, subtype="channel_join")
    shared = dict(person, files=[{"id": "F1"}])
    assert plain_row(joined) is None and plain_row(shared) is None


def intake_files(raw: dict[str, Any]) -> list[Any]:
    """The (file, ts) pairs of the message intake records for ``raw`` (none for the rest)."""
    action = intake_action(raw)
    if not isinstance(action, Record):
        return []
    return [(f, action.message.ts) for f in action.message.files]


def slow_rows(day: list[dict[str, Any]]) -> list[Any]:
    """The rows the slower path gives for a day: ``plain_row``, else intake's."""
    rows = [plain_row(raw) or intake_row(raw) for raw in day]
    return [row for row in rows if row is not None]


def typed_intake(raw: dict[str, Any], index: int) -> tuple[Any, str] | None:
    row = intake_row(raw)
    return None if row is None else (row, row_words(row))


@pytest.mark.slow
@settings(max_examples=300)
@given(st.lists(exported(), min_size=1, max_size=4))
def test_typed_day_gives_the_slower_paths_rows_or_steps_aside(day: list[dict[str, Any]]) -> None:
    files: list[Any] = []

    def reading(raw: dict[str, Any], index: int) -> tuple[Any, str] | None:
        files.extend(intake_files(raw))  # what the importer's reader keeps of intake's
        return typed_intake(raw, index)

    found = typed_day(json.dumps(day).encode(), reading, files)
    if found is not None:
        rows, words, count = found
        assert count == len(day)
        assert rows == slow_rows(day)
        assert words == [row_words(row) for row in rows]
        assert files == [
            pair for raw in day if plain_row(raw) is None for pair in intake_files(raw)
        ]


def test_typed_day_takes_a_usual_day_and_leaves_an_odd_one() -> None:
    person = {"type": "message", "user": "U1", "text": "ça marche, v2.3", "ts": "1700000000.000100",
              "client_msg_id": "x", "user_profile": {"display_name": "ana"}}  # fmt: skip
    bot = {"type": "message", "subtype": "bot_message", "bot_id": "B1", "username": "deploybot",
           "text": "deployed", "ts": "1700000001.000100"}  # fmt: skip
    joined = dict(person, subtype="channel_join", ts="1700000002.000100")
    shared = dict(person, files=[{"id": "F1", "title": "Plan"}], ts="1700000003.000100")
    day = [person, bot, joined, shared]
    found = typed_day(json.dumps(day).encode(), typed_intake)
    assert found is not None
    rows, words, count = found
    assert count == 4 and rows == slow_rows(day)
    assert words == ["ça marche v2 3", "deployed deploybot", "ça marche v2 3 Plan"]
    assert index_words("Ünïcode—split_here 42") == "Ünïcode split here 42"
    for odd in ({**person, "reply_count": "2"}, {**person, "ts": "17.1.2"}, ["not", "a", "dict"]):
        assert typed_day(json.dumps([person, odd]).encode(), typed_intake) is None
    lone = b'[{"ts": "1700000000.000100", "text": "\\ud800"}]'  # a lone surrogate
    assert typed_day(lone, typed_intake) is None


def test_typed_day_reads_file_shares_as_intake_does() -> None:
    person = {"type": "message", "user": "U1", "text": "see the plan", "ts": "1700000000.000100"}
    hosted = {"id": "F1", "name": "plan.pdf", "title": "Plan ü", "mimetype": "application/pdf",
              "size": 2048, "url_private": "https://files.slack.com/p", "mode": "hosted",
              "url_private_download": "https://files.slack.com/d", "filetype": "pdf"}  # fmt: skip
    odd = {"id": "F2", "size": -1, "mimetype": "", "url_private_download": "",
           "url_private": "https://files.slack.com/q"}  # fmt: skip
    gone = {"id": "F3", "mode": "tombstone"}
    hidden = {"id": "F4", "mode": "hidden_by_limit", "name": "secret.txt"}
    day = [
        person,
        dict(person, subtype="file_share", files=[hosted, gone], ts="1700000001.000100"),
        dict(person, files=[odd, hidden], ts="1700000002.000100", thread_ts="1700000000.000100"),
        {
            "type": "message",
            "subtype": "bot_message",
            "bot_id": "B1",
            "username": "ci",
            "text": "",
            "files": [hosted],
            "ts": "1700000003.000100",
            "reactions": [{"name": "eyes", "count": 1, "users": ["U2"]}],
        },
        dict(person, subtype="thread_broadcast", files=[], ts="1700000004.000100"),
    ]
    files: list[Any] = []
    read_by_intake: list[int] = []

    def reading(raw: dict[str, Any], index: int) -> tuple[Any, str] | None:
        read_by_intake.append(index)
        return typed_intake(raw, index)

    found = typed_day(json.dumps(day).encode(), reading, files)
    assert found is not None and read_by_intake == []  # every one read here
    rows, words, count = found
    assert count == 5 and rows == slow_rows(day)
    assert words == [row_words(row) for row in rows]
    assert "plan pdf" in words[1].lower() and "secret" not in " ".join(words)
    assert files == [pair for raw in day for pair in intake_files(raw)]
    assert [f.artifact_id for f, _ in files] == ["F1", "F2", "F1"]
    # An old export's singular ``file``, and files of a system subtype, are intake's to read.
    for other in (dict(person, file=hosted), dict(person, subtype="channel_topic", files=[])):
        read_by_intake.clear()
        assert typed_day(json.dumps([person, other]).encode(), reading, []) is not None
        assert read_by_intake == [1]
