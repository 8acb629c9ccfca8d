"""The Messages API's documented request rules: each one refuses what the real API refuses, the
repair makes any conversation valid again, and the fake answers a broken request 400."""

from __future__ import annotations

import base64
import io
from typing import Any

import anthropic
import pytest
from chanctx.bot.messages_api.request_rules import (
    IMAGE_MAX_SIDE_MANY,
    REQUEST_MAX_BYTES,
    pdf_pages,
    problems,
    repaired,
)
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from tests.support.media_files import pdf_bytes


def request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-5", "max_tokens": 100, "messages": messages, **extra}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "channel_context", "input": {}}


def result(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "found"}


def png(width: int, height: int) -> dict[str, Any]:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    data = base64.b64encode(out.getvalue()).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


VALID = [
    user(text("what broke?")),
    assistant(text("Looking."), use("t1")),
    user(result("t1"), text("and?")),
    assistant(text("The deploy.")),
]


def test_a_valid_conversation_has_no_problems() -> None:
    assert problems(request(VALID)) == []
    assert problems(request([*VALID, {"role": "assistant", "content": []}])) == []  # prefill


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "at least one message"),
        ([assistant(text("hi"))], "first message must use the 'user' role"),
        ([user(text("q")), assistant(), user(text("q2"))], "non-empty content"),
        ([user(text(""))], "text content blocks must be non-empty"),
        ([user(text("q")), assistant(use("t1")), user(text("q2"))], "without tool_result"),
        ([user(text("q")), assistant(use("t1"))], "without tool_result"),
        ([user(text("q")), assistant(use("t1")), user(text("x"), result("t1"))], "come first"),
        ([user(result("t9"))], "unexpected tool_use_id"),
        (
            [user(text("q")), assistant(use("t1")), user(result("t1")), assistant(use("t1"))],
            "unique",
        ),
    ],
)
def test_each_rule_refuses_what_the_api_refuses(messages: list[dict[str, Any]], says: str) -> None:
    found = problems(request(messages))
    assert any(says in p for p in found), found


def test_image_sides_depend_on_how_many_images_there_are() -> None:
    big = png(IMAGE_MAX_SIDE_MANY + 100, 10)
    assert problems(request([user(big, text("look"))])) == []
    many = [png(10, 10) for _ in range(20)] + [big]
    found = problems(request([user(*many, text("look"))]))
    assert found and "many-image" in found[0]


def test_a_breakpoint_too_many_and_a_body_too_large_are_refused() -> None:
    marked = [text("x") | {"cache_control": {"type": "ephemeral"}} for _ in range(5)]
    assert any("cache_control" in p for p in problems(request([user(*marked)])))
    huge = text("x" * (REQUEST_MAX_BYTES + 1))
    assert any(p.startswith("request_too_large") for p in problems(request([user(huge)])))


def test_pdf_pages_are_counted_in_compressed_object_streams() -> None:
    data = pdf_bytes(150, compressed=True)
    assert b"/Type /Page\n" not in data and b"/Type/Page\n" not in data  # hidden in streams
    assert pdf_pages(data) == 150
    block = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf",
                   "data": base64.b64encode(data).decode()},
    }  # fmt: skip
    assert any("100 PDF pages" in p for p in problems(request([user(block, text("read"))])))


# -- the repair: any conversation, made valid --------------------------------------------------

ids = st.sampled_from(["t1", "t2", "t3"])
blocks = st.one_of(
    st.builds(text, st.sampled_from(["", "ok", "the deploy"])),
    st.builds(use, ids),
    st.builds(result, ids),
)
messages = st.lists(
    st.builds(
        lambda role, content: {"role": role, "content": content},
        st.sampled_from(["user", "assistant"]),
        st.lists(blocks, max_size=4),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=400)
@given(messages)
def test_repaired_conversations_obey_every_message_rule(raw: list[dict[str, Any]]) -> None:
    # The session's conversations alternate and start with the user: that is what it repairs.
    alternating = [{**m, "role": "user" if i % 2 == 0 else "assistant"} for i, m in enumerate(raw)]
    # Tool-use ids are unique in a real conversation (the API makes them).
    seen: set[str] = set()
    for message in alternating:
        kept = []
        for block in message["content"]:
            if block["type"] == "tool_use":
                if block["id"] in seen:
                    continue
                seen.add(block["id"])
            kept.append(block)
        message["content"] = kept
    fixed = repaired(alternating)
    assert problems(request(fixed)) == []
    assert [m["role"] for m in fixed] == [m["role"] for m in alternating]
    # Nothing valid is thrown away: a conversation that had no problems comes back unchanged.
    if problems(request(alternating)) == [] and all(m["content"] for m in alternating):
        assert fixed == alternating


def test_the_fake_answers_a_broken_request_400_like_the_real_api() -> None:
    with FakeAnthropicAPI() as fake:
        client = anthropic.Anthropic(api_key="test-key", base_url=fake.url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(
                model="claude-sonnet-5",
                max_tokens=100,
                messages=[user(text("q")), assistant(use("t1")), user(text("q2"))],  # type: ignore[list-item]
            )
        client.close()
    assert caught.value.status_code == 400
    assert "without tool_result" in str(caught.value)
    assert fake.rejected and "without tool_result" in fake.rejected[0][0]
