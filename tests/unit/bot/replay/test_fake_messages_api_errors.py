"""The fake Messages API refuses a request without a key as the real one does (401
authentication_error) and names the request in every error body, in Anthropic's shape."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI

BODY = {"model": "claude-opus-4-8", "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello"}]}  # fmt: skip


def post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(f"{url}/v1/messages", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_no_api_key_is_401_authentication_error_with_a_request_id() -> None:
    with FakeAnthropicAPI() as fake:
        status, headers, body = post(
            fake.url, {"content-type": "application/json"}, json.dumps(BODY).encode()
        )
        assert status == 401
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
        assert body["request_id"] == headers["request-id"] and body["request_id"]
        keyed = {"content-type": "application/json", "x-api-key": "k"}
        status, _, answer = post(fake.url, keyed, json.dumps(BODY).encode())
        assert status == 200 and answer["type"] == "message"


def test_every_error_body_names_its_request() -> None:
    with FakeAnthropicAPI() as fake:
        client = anthropic.Anthropic(api_key="k", base_url=fake.url, max_retries=0)
        fake.fail_next(1, status=529)
        seen = set()
        for send in (
            lambda: client.messages.create(**BODY),  # the injected 529
            lambda: client.messages.create(model="m", max_tokens=0, messages=[]),  # refused
            lambda: client.get("/v1/nowhere", cast_to=object),  # no route
        ):
            with pytest.raises(anthropic.APIStatusError) as error:
                send()
            body = error.value.body
            assert isinstance(body, dict) and body["request_id"] == error.value.request_id
            assert body["type"] == "error" and body["error"]["type"]
            seen.add(body["request_id"])
        assert len(seen) == 3
        status, _, body = post(fake.url, {"x-api-key": "k"}, b"{not json")
        assert status == 400 and body["request_id"]
