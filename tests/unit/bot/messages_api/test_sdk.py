"""The deferred anthropic client: built once, from the options it was given, however many
threads ask at once; a client that was never deferred passes through; the error classes looked
up lazily are the SDK's own."""

from __future__ import annotations

import threading

import anthropic
from chanctx.bot.messages_api.sdk import (
    DeferredClient,
    anthropic_error,
    api_error,
    resolved,
    timeout_error,
)


def test_a_deferred_client_is_built_once_with_its_options() -> None:
    deferred = DeferredClient(
        api_key="sk-ant-deferred", base_url="http://127.0.0.1:9", max_retries=3
    )
    assert not deferred.built
    got: list[anthropic.Anthropic] = []
    askers = [threading.Thread(target=lambda: got.append(deferred.get())) for _ in range(8)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert deferred.built
    assert len({id(client) for client in got}) == 1
    client = got[0]
    assert isinstance(client, anthropic.Anthropic)
    assert (client.api_key, str(client.base_url), client.max_retries) == (
        "sk-ant-deferred",
        "http://127.0.0.1:9",
        3,
    )
    assert resolved(deferred) is client


def test_a_client_built_by_the_caller_passes_through() -> None:
    client = anthropic.Anthropic(api_key="sk-ant-direct")
    assert resolved(client) is client


def test_the_error_classes_are_the_sdks() -> None:
    assert api_error() is anthropic.APIError
    assert anthropic_error() is anthropic.AnthropicError
    assert timeout_error() is anthropic.APITimeoutError
    assert issubclass(timeout_error(), api_error())
