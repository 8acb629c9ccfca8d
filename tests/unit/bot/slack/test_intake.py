"""Intake decides once what each Slack event means for the caches."""

from __future__ import annotations

import logging

import pytest
from chanctx.bot.slack.intake import Delete, Edit, Ignore, React, Record, SelfIdentity, intake

ME = SelfIdentity(user_id="U0BOT", bot_id="B0BOT")
BASE = {"channel": "C1", "ts": "1781020800.000100", "user": "U1", "text": "hi"}


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        ({"type": "message", **BASE}, Record),
        (
            {"type": "message", **BASE, "subtype": "bot_message", "bot_id": "B9", "username": "ci"},
            Record,
        ),
        ({"type": "message", **BASE, "subtype": "me_message"}, Record),
        (
            {
                "type": "message",
                **BASE,
                "subtype": "thread_broadcast",
                "thread_ts": "1781020700.000100",
            },
            Record,
        ),
        (
            {
                "type": "message",
                **BASE,
                "subtype": "file_share",
                "files": [{"id": "F1", "mimetype": "image/png"}],
            },
            Record,
        ),
        (
            {"type": "message", **BASE, "subtype": "channel_topic", "topic": "Incident bridge"},
            Record,
        ),
        ({"type": "message", **BASE, "subtype": "channel_join"}, Ignore),
        ({"type": "message", **BASE, "subtype": "bot_add"}, Ignore),
        ({"type": "message", **BASE, "subtype": "huddle_thread"}, Ignore),
        (
            {
                "type": "message",
                "subtype": "message_changed",
                "channel": "C1",
                "message": {
                    **BASE,
                    "text": "hi!",
                    "edited": {"user": "U1", "ts": "1781020801.000000"},
                },
            },
            Edit,
        ),
        (
            {
                "type": "message",
                "subtype": "message_deleted",
                "channel": "C1",
                "deleted_ts": BASE["ts"],
            },
            Delete,
        ),
        (
            {
                "type": "reaction_added",
                "user": "U2",
                "reaction": "eyes",
                "item": {"type": "message", "channel": "C1", "ts": BASE["ts"]},
            },
            React,
        ),
        (
            {
                "type": "reaction_added",
                "user": "U2",
                "reaction": "eyes",
                "item": {"type": "file", "file": "F1"},
            },
            Ignore,
        ),
        ({"type": "app_mention", **BASE}, Record),
        ({"type": "pin_added", **BASE}, Ignore),
    ],
)
def test_every_subtype_is_handled_on_purpose(event: dict[str, object], kind: type) -> None:
    assert isinstance(intake(event, ME), kind)


def test_our_own_messages_are_the_assistants_and_other_bots_are_bots() -> None:
    ours = intake({"type": "message", **BASE, "user": "U0BOT", "bot_id": "B0BOT"}, ME)
    theirs = intake(
        {"type": "message", **BASE, "subtype": "bot_message", "bot_id": "B9", "username": "ci"}, ME
    )
    assert isinstance(ours, Record) and ours.message.is_self
    assert isinstance(theirs, Record) and theirs.message.is_bot and not theirs.message.is_self
    assert theirs.message.author_name == "ci"


def test_a_message_that_mentions_the_bot_is_marked_as_a_question_to_it() -> None:
    asked = intake({"type": "message", **BASE, "text": "<@U0BOT> why is CI red?"}, ME)
    other = intake({"type": "message", **BASE, "text": "<@U0BOTX> <@U7> why is CI red?"}, ME)
    assert isinstance(asked, Record) and asked.message.mentions_self
    assert isinstance(other, Record) and not other.message.mentions_self


def test_app_mention_only_fills_a_gap() -> None:
    action = intake({"type": "app_mention", **BASE}, ME)
    assert isinstance(action, Record) and action.only_if_new


@pytest.mark.parametrize(
    "event",
    [
        {"type": "message", "channel": "C1", "ts": "", "text": "placeholder ts"},
        {"type": "message", "channel": "C1", "ts": "yesterday"},
        {"type": "message", "subtype": "message_deleted", "channel": "C1", "deleted_ts": "x"},
        {
            "type": "message",
            "channel": "C1",
            "ts": "1781020800.000100",
            "files": [{"name": "no id"}],
        },
        {"type": "reaction_added", "item": {"type": "message"}},
        {"type": "message", "ts": "1781020800.000100"},
    ],
)
def test_malformed_events_are_ignored_with_a_clear_reason(
    event: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="chanctx.intake"):
        action = intake(event, ME)
    assert isinstance(action, Ignore)
    assert action.reason and ("malformed" in action.reason or "without a channel" in action.reason)
