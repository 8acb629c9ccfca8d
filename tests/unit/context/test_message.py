"""context.Message: a slotted, frozen value that validates and dumps like the pydantic model
it replaced, and keeps every field it is given."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from chanctx.context import FileRef, Message, Reaction
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

TS = st.builds(
    lambda whole, frac: f"{whole}.{frac:06d}",
    st.integers(10**9, 2 * 10**9),
    st.integers(0, 999_999),
)
TEXT = st.text(max_size=40)
FIELDS = st.fixed_dictionaries(
    {"channel": st.sampled_from(["C1", "C2"]), "ts": TS},
    optional={
        "thread_ts": st.none() | TS,
        "user_id": TEXT,
        "author_name": st.none() | TEXT,
        "is_bot": st.booleans(),
        "is_self": st.booleans(),
        "mentions_self": st.booleans(),
        "bot_id": st.none() | TEXT,
        "text": TEXT,
        "subtype": st.none() | TEXT,
        "files": st.lists(st.builds(FileRef, artifact_id=TEXT, title=st.none() | TEXT), max_size=2).map(tuple),
        "reactions": st.lists(st.builds(Reaction, name=TEXT, count=st.integers(0, 9)), max_size=2).map(tuple),
        "reply_count": st.integers(0, 10**6),
        "reply_users": st.lists(TEXT, max_size=3).map(tuple),
        "latest_reply": st.none() | TS,
        "edited_ts": st.none() | TS,
        "deleted": st.booleans(),
        "is_broadcast": st.booleans(),
    },
)  # fmt: skip
DEFAULTS = Message(channel="C", ts="1.1").model_dump()


@given(FIELDS)
@settings(max_examples=200, deadline=None)
def test_every_field_reads_back_and_survives_dump_copy_and_pickle(fields: dict[str, Any]) -> None:
    message = Message(**fields)
    for name, default in DEFAULTS.items():
        if name not in ("channel", "ts"):
            assert getattr(message, name) == fields.get(name, default), name
    assert Message.model_validate(message.model_dump(mode="json")) == message
    assert Message.model_validate(message.model_dump()) == message
    assert pickle.loads(pickle.dumps(message)) == message
    assert hash(pickle.loads(pickle.dumps(message))) == hash(message)
    copied = message.model_copy(update={"text": "changed", "deleted": True})
    assert copied.text == "changed" and copied.deleted
    assert {n: getattr(copied, n) for n in DEFAULTS if n not in ("text", "deleted")} == {
        n: getattr(message, n) for n in DEFAULTS if n not in ("text", "deleted")
    }


def test_bad_values_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="ts"):
        Message(channel="C", ts="yesterday")
    with pytest.raises(ValidationError, match="reply_count"):
        Message(channel="C", ts="1.1", reply_count=-1)
    with pytest.raises(ValidationError, match="channel"):
        Message(ts="1.1")


def test_it_is_frozen_and_small() -> None:
    message = Message(channel="C", ts="1.1", text="hi")
    with pytest.raises(AttributeError):
        message.text = "changed"  # type: ignore[misc]
    assert not hasattr(message, "__dict__")
    assert len(Message.__slots__) == 8


def test_it_can_be_a_field_of_a_pydantic_model() -> None:
    class Holder(BaseModel):
        message: Message

    held = Holder(message=Message(channel="C", ts="1.1", files=(FileRef(artifact_id="F"),)))
    assert Holder.model_validate_json(held.model_dump_json()) == held


def test_dumping_without_defaults_keeps_only_what_was_set_and_round_trips() -> None:
    # The Redis change stream sends messages this way: every default left out (a third of the
    # bytes of a typical chat message).
    message = Message(channel="C1", ts="1781020800.000100", user_id="U1", text="hi", reply_count=2)
    assert message.model_dump(mode="json", exclude_defaults=True) == {
        "channel": "C1", "ts": "1781020800.000100", "user_id": "U1", "text": "hi", "reply_count": 2,
    }  # fmt: skip
    assert json.loads(message.model_dump_json(exclude_defaults=True)) == message.model_dump(
        mode="json", exclude_defaults=True
    )
    assert Message.model_validate(message.model_dump(exclude_defaults=True)) == message
