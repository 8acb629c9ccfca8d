"""The depth guard on a JSON body: the bracket count lets most bodies skip the walk, and
whatever the shortcut skips could not have been too deep."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chanctx.bot.slack.envelope import MAX_DEPTH, depth_over, parse_json_payload
from hypothesis import given
from hypothesis import strategies as st

# Strings full of brackets: they count toward the shortcut's tally but nest nothing.
_TEXT = st.text(alphabet='{}[]ab"\\', max_size=6)
_LEAVES = st.none() | st.booleans() | st.integers() | _TEXT


def _nest(value: Any, levels: int, in_list: bool) -> Any:
    for _ in range(levels):
        value = [value] if in_list else {"k": value}
    return value


@given(
    st.recursive(
        _LEAVES,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=12,
    ),
    st.integers(min_value=0, max_value=MAX_DEPTH + 3),
    st.booleans(),
)
def test_a_body_is_refused_as_too_deep_exactly_when_it_nests_too_deep(
    core: Any, levels: int, in_list: bool
) -> None:
    value = {"type": "event_callback", "event": _nest(core, levels, in_list)}
    text = json.dumps(value)
    if depth_over(value):
        with pytest.raises(ValueError, match="levels deep"):
            parse_json_payload(text)
    else:
        body, _ = parse_json_payload(text)
        assert body == value
