"""A grammar of what Slack sends, for Hypothesis: event_callback envelopes of the event types the
bot handles (and some it does not), interactivity and slash-command forms, each field valid,
missing or poisoned. Poisons are the values that once got past intake: ``abc``, ``NaN``,
``True``, ``123``, a 29-digit ts, non-ASCII digits, lists and objects where strings belong."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from hypothesis import strategies as st

from tests.support.slack_events import BOT_USER, CHANNEL, DM, TEAM

MISSING = object()  # a field left out of its object

POISON: list[Any] = [
    None, "", "abc", "NaN", True, 123, 1.5, "123", "99999999999999999999999999999", [], {},
    {"id": 3}, ["U1"], "٣٤٥٦٧٨٩٠١٢.000001", "1781020800.1234567", "é\x00", "x" * 3000,
]  # fmt: skip

ts_valid = st.integers(1_781_000_000, 1_790_000_000).flatmap(
    lambda s: st.integers(0, 999_999).map(lambda m: f"{s}.{m:06d}")
)
channels = st.sampled_from([CHANNEL, DM, "C0OTHER001", "G0PRIVATE1"])
users = st.sampled_from(["U1", "U2", BOT_USER, "W0ENTERPR1"])
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from([f"<@{BOT_USER}> what broke?", "hi", "<!channel> deploy", "```x```"]),
)


def field(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's value: mostly valid, sometimes missing, sometimes poisoned."""
    return st.one_of(valid, valid, st.just(MISSING), st.sampled_from(POISON))


@st.composite
def objects(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, strategy in fields.items():
        value = draw(strategy)
        if value is not MISSING:
            out[key] = value
    return out


def _message_fields() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "type": st.just("message"),
        "channel": field(channels),
        "user": field(users),
        "text": field(texts),
        "ts": field(ts_valid),
        "thread_ts": st.one_of(st.just(MISSING), ts_valid, st.sampled_from(POISON)),
        "subtype": st.one_of(
            st.just(MISSING),
            st.sampled_from(
                [
                    "message_changed",
                    "message_deleted",
                    "bot_message",
                    "file_share",
                    "thread_broadcast",
                    "channel_join",
                    "channel_topic",
                    "weird_new_subtype",
                ]
            ),
            st.sampled_from(POISON),
        ),
        "channel_type": field(st.sampled_from(["channel", "im", "group", "mpim"])),
        "bot_id": st.one_of(st.just(MISSING), st.sampled_from(POISON)),
        "edited": st.one_of(st.just(MISSING), st.sampled_from(POISON)),
        "files": st.one_of(st.just(MISSING), st.sampled_from(POISON)),
        "event_ts": field(ts_valid),
    }


def events() -> st.SearchStrategy[dict[str, Any]]:
    message = objects(_message_fields())
    mention = objects({**_message_fields(), "type": st.just("app_mention")})
    item = objects({"type": field(st.just("message")), "channel": field(channels),
                    "ts": field(ts_valid)})  # fmt: skip
    reaction = objects({
        "type": st.sampled_from(["reaction_added", "reaction_removed"]),
        "user": field(users), "reaction": field(st.sampled_from(["+1", "-1", "eyes"])),
        "item": field(item), "event_ts": field(ts_valid),
    })  # fmt: skip
    pin = objects({
        "type": st.sampled_from(["pin_added", "pin_removed"]), "channel_id": field(channels),
        "item": field(objects({"type": field(st.just("message")), "channel": field(channels),
                               "message": field(message)})),
    })  # fmt: skip
    context = objects({"channel_id": field(channels), "team_id": field(st.just(TEAM))})
    pane = objects({
        "type": st.sampled_from(["assistant_thread_started", "assistant_thread_context_changed"]),
        "assistant_thread": field(objects({
            "user_id": field(users), "channel_id": field(st.just(DM)),
            "thread_ts": field(ts_valid), "context": field(context),
        })),
        "event_ts": field(ts_valid),
    })  # fmt: skip
    other = objects({
        "type": st.one_of(st.sampled_from([
            "member_joined_channel", "app_home_opened", "file_shared", "channel_rename",
            "tokens_revoked", "app_uninstalled", "never_heard_of_it",
        ]), st.sampled_from(POISON)),
        "user": field(users), "channel": field(channels), "event_ts": field(ts_valid),
    })  # fmt: skip
    return st.one_of(message, mention, reaction, pin, pane, other)


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    return draw(objects({
        "token": st.just("REDACTED"),
        "team_id": field(st.just(TEAM)),
        "api_app_id": field(st.just("A0TEST0001")),
        "type": field(st.just("event_callback")),
        "event": field(events()),
        "event_id": field(st.uuids().map(lambda u: f"Ev{u.hex[:10].upper()}")),
        "event_time": field(st.integers(1_781_000_000, 1_790_000_000)),
        "authorizations": field(st.just([{"team_id": TEAM, "user_id": BOT_USER,
                                          "is_bot": True}])),
    }))  # fmt: skip


@st.composite
def interactions(draw: st.DrawFn) -> dict[str, Any]:
    """A feedback button click (``block_actions``), fields fuzzed like events'."""
    action = objects({
        "action_id": field(st.just("chanctx_feedback")),
        "value": field(st.sampled_from(["helpful", "unhelpful", "helpful|C0GENERAL1:1.2"])),
    })  # fmt: skip
    return draw(objects({
        "type": field(st.just("block_actions")),
        "team": field(st.just({"id": TEAM})),
        "user": field(objects({"id": field(users)})),
        "channel": field(objects({"id": field(channels)})),
        "message": field(objects({"ts": field(ts_valid), "text": field(texts)})),
        "actions": field(st.lists(action, max_size=2)),
        "api_app_id": field(st.just("A0TEST0001")),
    }))  # fmt: skip


commands = objects({
    "command": field(st.just("/chanctx")),
    "text": field(st.sampled_from(["status", "help", "forget 1781020800.000100", "forget x"])),
    "channel_id": field(channels), "user_id": field(users), "team_id": field(st.just(TEAM)),
})  # fmt: skip


def _form_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@st.composite
def slack_bodies(draw: st.DrawFn) -> tuple[bytes, str]:
    """(body, content type) of something shaped like what Slack sends."""
    kind = draw(st.sampled_from(["event", "event", "event", "interaction", "command"]))
    if kind == "event":
        return json.dumps(draw(envelopes())).encode(), "application/json"
    if kind == "interaction":
        payload = json.dumps(draw(interactions()))
        return urlencode({"payload": payload}).encode(), "application/x-www-form-urlencoded"
    fields = {k: _form_value(v) for k, v in draw(commands).items()}
    return urlencode(fields).encode(), "application/x-www-form-urlencoded"
