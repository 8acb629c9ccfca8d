"""ExactCounter against the fake Anthropic API over loopback, with the real SDK client."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator

import anthropic
import pytest
from chanctx.bot.messages_api.exact_tokens import COOL_DOWN_SECONDS, ExactCounter, make_counter
from chanctx.bot.replay.fake_anthropic import FRAME_TOKENS, FakeAnthropicAPI
from chanctx.context.tokens import PieceCounter, TokenCounter, default_counter

MODEL = "claude-opus-4-8"
API_KEY = "sk-ant-test-SECRET-0123456789"
ESTIMATE = default_counter(MODEL)  # what the fake counts content with
TEXTS = ["hello world", "Deploy failed 🔥 — see <@U123>", "a", '{"k": [1, 2, 3]}', "日本語"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI() as api:
        yield api


@pytest.fixture
def client(fake: FakeAnthropicAPI) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key=API_KEY, base_url=fake.url) as api:
        yield api  # closed after the test: its pool holds loopback sockets


def answer(text: str) -> int:
    """What the fake returns for one user message holding ``text``."""
    return FRAME_TOKENS + ESTIMATE.count(text)


def test_fake_speaks_the_count_tokens_api(
    fake: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    result = client.messages.count_tokens(
        model=MODEL,
        system="be brief",
        messages=[{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    )
    assert result.input_tokens == FRAME_TOKENS + ESTIMATE.count("be briefhello")
    (request,) = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/messages/count_tokens")
    assert request.body["model"] == MODEL
    assert "x-api-key" not in request.headers
    assert API_KEY not in json.dumps(request.headers)


def test_fake_answers_unknown_paths_with_an_anthropic_error(fake: FakeAnthropicAPI) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        keyed = urllib.request.Request(f"{fake.url}/v1/nothing", headers={"x-api-key": API_KEY})
        urllib.request.urlopen(keyed, timeout=5)
    assert err.value.code == 404
    body = json.loads(err.value.read())
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"


def test_exact_counts_are_content_tokens(
    fake: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    counter = ExactCounter(client, model=MODEL)
    frame = answer("a") - 1  # the frame as the counter measures it: count("a") minus 1
    for text in TEXTS:
        assert counter.count(text) == answer(text) - frame
    # One probe for the frame, then one request per distinct text.
    assert fake.count == 1 + len(TEXTS)
    assert all(r.body["messages"] == [{"role": "user", "content": r.body["messages"][0]["content"]}]
               for r in fake.requests)  # fmt: skip


def test_repeated_text_hits_the_cache(fake: FakeAnthropicAPI, client: anthropic.Anthropic) -> None:
    counter = ExactCounter(client, model=MODEL, cache_size=2)
    first = counter.count("the same text")
    sent = fake.count
    assert [counter.count("the same text") for _ in range(5)] == [first] * 5
    assert fake.count == sent
    counter.count("second")
    counter.count("third")  # evicts "the same text" (LRU of 2)
    counter.count("the same text")
    assert fake.count == sent + 3


def test_empty_text_is_zero_without_a_call(
    fake: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    assert ExactCounter(client, model=MODEL).count("") == 0
    assert fake.count == 0


@pytest.mark.parametrize(("status", "retry_after"), [(500, None), (529, None), (429, 1.0)])
def test_api_error_falls_back_without_raising(
    fake: FakeAnthropicAPI,
    client: anthropic.Anthropic,
    caplog: pytest.LogCaptureFixture,
    status: int,
    retry_after: float | None,
) -> None:
    fallback = PieceCounter("claude_v3")
    counter = ExactCounter(client, model=MODEL, fallback=fallback)
    fake.fail_next(1, status=status, retry_after=retry_after)
    with caplog.at_level(logging.WARNING, logger="chanctx.bot.messages_api.exact_tokens"):
        assert counter.count("incident report") == fallback.count("incident report")
    assert fake.count == 1  # no retries: one attempt, then the fallback
    warnings = [r for r in caplog.records if r.name == "chanctx.bot.messages_api.exact_tokens"]
    assert len(warnings) == 1 and f"HTTP {status}" in warnings[0].getMessage()


def test_slow_answer_beyond_the_timeout_falls_back(
    fake: FakeAnthropicAPI, client: anthropic.Anthropic
) -> None:
    counter = ExactCounter(client, model=MODEL, timeout=0.2)
    fake.slow_next(1, seconds=1.0)
    assert counter.count("slow path") == ESTIMATE.count("slow path")


def test_after_a_failure_the_api_rests_for_a_cool_down(
    fake: FakeAnthropicAPI, client: anthropic.Anthropic, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    counter = ExactCounter(client, model=MODEL, clock=clock)
    fake.fail_next(1, status=500)
    with caplog.at_level(logging.WARNING, logger="chanctx.bot.messages_api.exact_tokens"):
        for i in range(20):
            counter.count(f"piece {i}")
    assert fake.count == 1  # one failed attempt, then offline answers only
    assert (
        len([r for r in caplog.records if r.name == "chanctx.bot.messages_api.exact_tokens"]) == 1
    )
    clock.now += COOL_DOWN_SECONDS + 1
    assert counter.count("piece 0") == answer("piece 0") - (answer("a") - 1)
    assert fake.count == 3  # the frame probe and the text, the API is back in use


def test_api_key_never_reaches_the_logs(
    fake: FakeAnthropicAPI, client: anthropic.Anthropic, caplog: pytest.LogCaptureFixture
) -> None:
    counter = ExactCounter(client, model=MODEL, timeout=0.2)
    with caplog.at_level(logging.DEBUG):
        counter.count("fine")
        fake.fail_next(1, status=401)
        counter.count("refused")
        counter._retry_at = 0.0
        fake.slow_next(1, seconds=1.0)
        counter.count("timed out")
    assert caplog.records, "expected the failures to be logged"
    assert API_KEY not in caplog.text
    assert all(API_KEY not in str(r.args) for r in caplog.records)


def test_make_counter_is_offline_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    counter = make_counter(MODEL)
    assert isinstance(counter, PieceCounter) and counter.family == "claude_v4_8"
    assert isinstance(make_counter("claude-3-5-sonnet-20241022"), PieceCounter)


def test_make_counter_is_exact_with_a_key(
    fake: FakeAnthropicAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    counter = make_counter(MODEL, api_key=API_KEY, base_url=fake.url)
    assert isinstance(counter, ExactCounter) and isinstance(counter, TokenCounter)
    assert counter.count("hello world") == answer("hello world") - (answer("a") - 1)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    assert isinstance(make_counter(MODEL, base_url=fake.url), ExactCounter)
