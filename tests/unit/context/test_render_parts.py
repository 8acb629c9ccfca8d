"""The parts a block's line is made of, taken the fast way: a remembered ISO time and an
author's name without the ``Author`` model are what the slow way gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from chanctx.context import InvalidTimestamp, Message, Names, iso_from_ts
from chanctx.context.render import author_of, display_name_of
from hypothesis import given, settings
from hypothesis import strategies as st

SECONDS = st.integers(min_value=0, max_value=253_402_300_799)  # up to 9999-12-31T23:59:59Z


@settings(max_examples=300, deadline=None)
@given(second=SECONDS, micros=st.integers(0, 999_999), again=st.booleans())
def test_an_iso_time_remembered_or_not_is_the_formatted_second(
    second: int, micros: int, again: bool
) -> None:
    ts = f"{second}.{micros:06d}"
    expected = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert iso_from_ts(ts) == expected
    if again:
        assert iso_from_ts(ts) == expected
        assert iso_from_ts(str(second)) == expected


@pytest.mark.parametrize("bad", ["yesterday", "", "1.2.3", "-5"])
def test_a_bad_timestamp_is_refused_every_time(bad: str) -> None:
    for _ in range(2):
        with pytest.raises(InvalidTimestamp):
            iso_from_ts(bad)


NAMES = Names(users={"U1": "ana", "U2": ""})


@given(
    user_id=st.sampled_from(["", "U1", "U2", "U9"]),
    bot_id=st.sampled_from([None, "", "B1"]),
    author_name=st.sampled_from([None, "", "deploy-bot"]),
)
def test_the_display_name_is_the_authors(
    user_id: str, bot_id: str | None, author_name: str | None
) -> None:
    message = Message(
        channel="C1", ts="1700000000.000100", user_id=user_id, bot_id=bot_id,
        author_name=author_name,
    )  # fmt: skip
    assert display_name_of(message, NAMES) == author_of(message, NAMES).display_name
