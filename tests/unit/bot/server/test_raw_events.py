"""The events path's bare ASGI pieces: the head read from a scope, the body from ``receive``
within its limits, and the answers as an HTTP server gets them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from chanctx.bot.server.bodies import BodyRefused
from chanctx.bot.server.raw_events import Head, read_head, receive_body, send_answer
from hypothesis import given
from hypothesis import strategies as st

Message = dict[str, Any]
_NAMES = st.sampled_from(
    [b"content-type", b"content-length", b"x-slack-signature", b"x-slack-request-timestamp", b"x-a"]
)


def _receiver(messages: list[Message]) -> Callable[[], Awaitable[Message]]:
    queue = list(messages)

    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()  # a client that never sends the rest
        raise AssertionError("unreachable")

    return receive


def _body(messages: list[Message], head: Head | None = None, limit: int = 100) -> bytes:
    return asyncio.run(receive_body(_receiver(messages), head or Head(), limit, timeout=5))


@given(st.lists(st.tuples(_NAMES, st.binary(max_size=20)), max_size=8))
def test_the_head_is_the_first_of_each_header_and_counts_every_byte(
    headers: list[tuple[bytes, bytes]],
) -> None:
    head = read_head({"headers": headers})
    first: dict[bytes, str] = {}
    for name, value in headers:
        first.setdefault(name, value.decode("latin-1"))
    assert head.size == sum(len(name) + len(value) for name, value in headers)
    assert head.content_type == first.get(b"content-type", "")
    assert head.content_length == first.get(b"content-length")
    assert head.signature == first.get(b"x-slack-signature")
    assert head.timestamp == first.get(b"x-slack-request-timestamp")


def test_a_body_in_one_message_or_in_chunks_is_read_whole() -> None:
    assert _body([{"type": "http.request", "body": b"abc"}]) == b"abc"
    chunks = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"", "more_body": True},
        {"type": "http.request", "body": b"cd"},
    ]
    assert _body(chunks) == b"abcd"


@pytest.mark.parametrize(
    ("messages", "declared", "status"),
    [
        ([{"type": "http.request", "body": b"x" * 101}], None, 413),
        ([{"type": "http.request", "body": b"x" * 60, "more_body": True}] * 2, None, 413),
        ([], "101", 413),
        ([], "12a", 400),
        (
            [
                {"type": "http.request", "body": b"x", "more_body": True},
                {"type": "http.disconnect"},
            ],
            None,
            400,
        ),
        ([{"type": "http.disconnect"}], None, 400),
    ],
)
def test_a_body_out_of_bounds_is_refused_with_its_status(
    messages: list[Message], declared: str | None, status: int
) -> None:
    with pytest.raises(BodyRefused) as refused:
        _body(messages, Head(content_length=declared))
    assert refused.value.status == status


def test_a_body_that_does_not_arrive_in_time_is_a_408() -> None:
    partial = [{"type": "http.request", "body": b"x", "more_body": True}]

    async def read() -> bytes:
        return await receive_body(_receiver(partial), Head(), 100, timeout=0.05)

    with pytest.raises(BodyRefused) as refused:
        asyncio.run(read())
    assert refused.value.status == 408


@pytest.mark.parametrize(
    ("status", "error"), [(200, None), (401, "invalid or stale signature"), (413, "größer")]
)
def test_answers_are_complete_http_responses(status: int, error: str | None) -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(send_answer(send, status, error))
    start, body = sent
    assert start["type"] == "http.response.start" and start["status"] == status
    headers = dict(start["headers"])
    assert int(headers[b"content-length"]) == len(body["body"])
    assert not body.get("more_body", False)
    if error is None:
        assert body["body"] == b""
    else:
        assert headers[b"content-type"] == b"application/json"
        assert json.loads(body["body"]) == {"ok": False, "error": error}
