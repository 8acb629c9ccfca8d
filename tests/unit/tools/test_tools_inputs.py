"""Bad tool calls get one clear sentence naming the field; definitions are valid and agree."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from chanctx.context import BudgetError
from chanctx.tools import ChannelContextInput, ChannelMessagesInput, ChannelTools, HistoryView
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.unit.tools.test_tools_data import INCIDENT, NAMES, build_history, tools_for

TOOLS = tools_for()


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("channel_context", {}, "'intent' is required"),
        ("channel_context", {"intent": ""}, "'intent': string should have at least 1 character"),
        ("channel_context", {"intent": "   "}, "'intent': must say what you are looking for"),
        ("channel_context", {"intent": "x" * 2001}, "'intent': string should have at most 2000"),
        ("channel_context", {"intent": 42}, "'intent': input should be a valid string (got 42)"),
        ("channel_context", {"intent": "a", "max_results": "eight"}, "'max_results': input should be a valid integer (got 'eight')"),
        ("channel_context", {"intent": "a", "max_results": True}, "'max_results': input should be a valid integer (got True)"),
        ("channel_context", {"intent": "a", "since": "yesterday"}, "'since': 'yesterday' is neither an ISO 8601 date/time"),
        ("channel_context", {"intent": "a", "authors": "Dev"}, "'authors': input should be a valid list (got 'Dev')"),
        ("channel_context", {"intent": "a", "authors": [""]}, "'authors.0': string should have at least 1 character"),
        ("channel_context", {"intent": "a", "channel": "C2"}, "unknown field 'channel' (allowed: intent, since, authors, max_results)"),
        ("channel_messages", {}, "give exactly one of thread_id, message_ids, media_artifact_id (got none of them)"),
        ("channel_messages", {"thread_id": INCIDENT, "message_ids": [INCIDENT]}, "(got thread_id and message_ids)"),
        ("channel_messages", {"thread_id": "yesterday"}, "'thread_id': 'yesterday' is not a Slack message ts"),
        ("channel_messages", {"thread_id": "0"}, "'thread_id': '0' is not a Slack message ts"),
        ("channel_messages", {"thread_id": "1781024400.1234567"}, "'thread_id': '1781024400.1234567' is not a Slack message ts"),
        ("channel_messages", {"thread_id": "١٧٨١٠٢٤٤٠٠.١٢٣٤٥٦"}, "is not a Slack message ts"),
        ("channel_messages", {"message_ids": []}, "'message_ids': list should have at least 1 item"),
        ("channel_messages", {"message_ids": ["1.1"] * 51}, "'message_ids': list should have at most 50 items"),
        ("channel_messages", {"message_ids": [INCIDENT, "p1781024400000100"]}, "'message_ids': 'p1781024400000100' is not a Slack message ts"),
        ("channel_messages", {"media_artifact_id": "../etc/passwd"}, "'media_artifact_id': '../etc/passwd' is not a file id"),
        ("channel_messages", {"thread_id": INCIDENT, "channel_id": "C2"}, "unknown field 'channel_id'"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named_in_a_tool_error(
    name: str, arguments: dict[str, Any], expected: str
) -> None:
    result = TOOLS.call(name, arguments)
    assert result.is_error
    assert result.content.startswith(f"Invalid input for {name}: ")
    assert expected in result.content
    assert result.content.endswith(".")


def test_every_problem_is_reported_at_once() -> None:
    result = TOOLS.call("channel_context", {"max_results": "ten", "extra": 1})
    assert "'intent' is required" in result.content
    assert "'max_results'" in result.content and "unknown field 'extra'" in result.content


def test_counts_out_of_range_are_clamped_not_refused() -> None:
    many = TOOLS.call("channel_context", {"intent": "deploy", "max_results": 500})
    none = TOOLS.call("channel_context", {"intent": "deploy", "max_results": 0})
    assert not many.is_error and not none.is_error
    assert len(json.loads(none.content)["results"]) == 1
    replies = TOOLS.call("channel_messages", {"thread_id": INCIDENT, "max_replies": 10_000})
    assert not replies.is_error


def test_unknown_tools_and_non_object_inputs_are_errors() -> None:
    unknown = TOOLS.call("channel.context", {"intent": "x"})
    assert unknown.is_error
    assert unknown.content == (
        "Unknown tool 'channel.context': the tools are channel_context and channel_messages."
    )
    for raw in (None, "intent=x", ["x"], 3):
        result = TOOLS.call("channel_context", raw)
        assert result.is_error and "expected a JSON object" in result.content


@given(st.dictionaries(st.text(max_size=12), st.recursive(st.none() | st.integers() | st.text(), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=6), max_size=5))  # fmt: skip
@settings(max_examples=150, deadline=None)
def test_any_input_gets_an_answer_never_an_exception(arguments: dict[str, Any]) -> None:
    for name in ("channel_context", "channel_messages"):
        result = TOOLS.call(name, arguments)
        assert isinstance(result.content, str) and result.content


def test_a_budget_below_the_minimum_is_refused_up_front() -> None:
    view = HistoryView(build_history(), "C1")
    with pytest.raises(BudgetError, match="output_budget_tokens must be >= 300"):
        ChannelTools(view, names=NAMES, output_budget_tokens=299)


# -- definitions ------------------------------------------------------------------------------

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEFINITIONS = {d["name"]: d for d in ChannelTools.definitions()}
MODELS: dict[str, type[BaseModel]] = {
    "channel_context": ChannelContextInput,
    "channel_messages": ChannelMessagesInput,
}
JSON_TYPES = {"string", "integer", "array", "object", "boolean", "number"}


def test_definitions_are_valid_tool_definitions() -> None:
    assert list(DEFINITIONS) == ["channel_context", "channel_messages"]
    for name, definition in DEFINITIONS.items():
        assert NAME.fullmatch(name)
        assert set(definition) == {"name", "description", "input_schema"}
        assert len(definition["description"]) > 200  # says what it is for and when to use it
        schema = definition["input_schema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for prop in schema["properties"].values():
            assert prop["type"] in JSON_TYPES and prop["description"]
            if prop["type"] == "array":
                assert prop["items"]["type"] in JSON_TYPES
            if "pattern" in prop:
                re.compile(prop["pattern"])
    assert DEFINITIONS["channel_context"]["input_schema"]["required"] == ["intent"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_schemas_and_input_models_agree(name: str) -> None:
    schema = DEFINITIONS[name]["input_schema"]
    fields = MODELS[name].model_fields
    assert set(schema["properties"]) == set(fields)
    assert set(schema["required"]) == {f for f, info in fields.items() if info.is_required()}
    for field, prop in schema["properties"].items():
        if "default" in prop:
            assert fields[field].default == prop["default"]
        if prop["type"] != "integer":
            continue
        valid = {"channel_context": {"intent": "x"}, "channel_messages": {"thread_id": INCIDENT}}
        # Out of range is clamped to the schema's bound: the same answer as the bound.
        for outside, bound in [
            (prop["minimum"] - 1, prop["minimum"]),
            (prop["maximum"] + 1, prop["maximum"]),
        ]:
            clamped = TOOLS.call(name, {**valid[name], field: outside})
            at_bound = TOOLS.call(name, {**valid[name], field: bound})
            assert not at_bound.is_error, (field, bound, at_bound.content)
            assert clamped.content == at_bound.content, (field, outside)


def test_schema_patterns_accept_what_the_models_accept() -> None:
    props = DEFINITIONS["channel_messages"]["input_schema"]["properties"]
    ts_pattern = re.compile(props["thread_id"]["pattern"])
    candidates = (INCIDENT, "1781024400", "1781024400.1", "yesterday", "1.2.3", "",
                  "0", "1781024400.1234567", "١٧٨١٠٢٤٤٠٠.١٢٣٤٥٦")  # fmt: skip
    for candidate in candidates:
        model_ok = not TOOLS.call("channel_messages", {"thread_id": candidate}).is_error or (
            "not found" in TOOLS.call("channel_messages", {"thread_id": candidate}).content
        )
        assert bool(ts_pattern.fullmatch(candidate)) == model_ok, candidate
