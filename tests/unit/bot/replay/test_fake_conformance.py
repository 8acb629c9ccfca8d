"""The fake Slack against Slack's own references, and the fake Messages API against the
`anthropic` SDK's types.

For every Web API method chanctx calls, the fake's success answer (over loopback HTTP, through
slack_sdk) has the keys Slack's OpenAPI description requires, and no key that neither Slack's
recorded answer (slackapi/java-slack-sdk's samples, vendored in tests/data/slack_samples/api)
nor its OpenAPI lists, at the top level and in the main objects (message, channel, user, file,
listed messages and pins). Every error the fake answers is one the method's documentation lists.
Then every Messages API request the demo replay writes validates as the SDK's
MessageCreateParams, and every answer of the fake as the SDK's Message.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import Message, MessageCreateParams
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from pydantic import TypeAdapter
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.support.paths import DATA, DEMO
from tests.support.slack_events import CHANNEL, DM, STATE

SAMPLES = DATA / "slack_samples"
REQUIRED: dict[str, dict[str, list[str]]] = json.loads(
    (SAMPLES / "openapi_required.json").read_text()
)
DOCUMENTED: dict[str, list[str]] = json.loads((SAMPLES / "documented_errors.json").read_text())
# Keys only a failed answer carries in the samples (they record the union of every answer).
_FAILURE_KEYS = {"error", "warning", "needed", "provided"}
# Keys the recorded sample cannot show, with where Slack says so.
_DOCUMENTED_EXTRAS: dict[tuple[str, str], set[str]] = {
    # The recorded chat.stopStream sample is an error answer only; the SDK's ChatStream reads
    # channel, ts and message from the success answer.
    ("chat.stopStream", ""): {"channel", "ts", "message"},
    # The sample's pin is a file pin; the OpenAPI's "Message Pin" has channel and message.
    ("pins.list", "items"): {"channel", "message"},
}


def sample(method: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SAMPLES / "api" / f"{method}.json").read_text())
    return loaded


def first(value: Any) -> dict[str, Any]:
    return value[0] if isinstance(value, list) and value and isinstance(value[0], dict) else {}


def union(items: Any) -> set[str]:
    return {k for item in items or [] if isinstance(item, dict) for k in item}


@pytest.fixture(scope="module")
def answers() -> Iterator[dict[str, dict[str, Any]]]:
    """One success answer of every method chanctx calls, from the fake over loopback."""
    state = copy.deepcopy(STATE)
    state["files"] = {"F1": {"id": "F1", "name": "a.txt", "mimetype": "text/plain",
                             "content_text": "hello"}}  # fmt: skip
    state["channels"][CHANNEL]["members"] = ["U1", "U2"]
    state["pins"] = {}
    with FakeSlackAPI(state, socket_mode=True) as fake:
        c = WebClient(token="xoxb-test", base_url=fake.url)
        meta = {"event_type": "chanctx_turn", "event_payload": {"turn": "t", "part": 0}}
        root = c.chat_postMessage(channel=CHANNEL, text="question")
        reply = c.chat_postMessage(channel=CHANNEL, text="answer", thread_ts=root["ts"],
                                   metadata=meta)  # fmt: skip
        start = c.chat_startStream(channel=CHANNEL, thread_ts=root["ts"], markdown_text="a",
                                   recipient_team_id="T", recipient_user_id="U1")  # fmt: skip
        append = c.chat_appendStream(channel=CHANNEL, ts=start["ts"], markdown_text="b")
        stop = c.chat_stopStream(channel=CHANNEL, ts=start["ts"], metadata=meta)
        update = c.chat_update(channel=CHANNEL, ts=reply["ts"], text="answer, edited")
        fake.mirror_event({"type": "pin_added", "channel_id": CHANNEL,
                           "item": {"channel": CHANNEL, "message": {"ts": root["ts"]}}})  # fmt: skip
        thread = {"channel_id": CHANNEL, "thread_ts": root["ts"]}
        prompts = [{"title": "Why?", "message": "Why did it break?"}]
        calls: dict[str, Callable[[], Any]] = {
            "auth.test": c.auth_test,
            "users.info": lambda: c.users_info(user="U1"),
            "conversations.info": lambda: c.conversations_info(channel=CHANNEL),
            "conversations.history": lambda: c.conversations_history(
                channel=CHANNEL, include_all_metadata=True
            ),
            "conversations.replies": lambda: c.conversations_replies(
                channel=CHANNEL, ts=root["ts"], include_all_metadata=True
            ),
            "conversations.members": lambda: c.conversations_members(channel=CHANNEL),
            "users.conversations": lambda: c.users_conversations(
                types="public_channel,private_channel,mpim,im", exclude_archived=True
            ),
            "reactions.add": lambda: c.reactions_add(
                channel=CHANNEL, timestamp=root["ts"], name="eyes"
            ),
            "reactions.remove": lambda: c.reactions_remove(
                channel=CHANNEL, timestamp=root["ts"], name="eyes"
            ),
            "assistant.threads.setStatus": lambda: c.assistant_threads_setStatus(
                **thread, status="is thinking..."
            ),
            "assistant.threads.setTitle": lambda: c.assistant_threads_setTitle(
                **thread, title="Checkout"
            ),
            "assistant.threads.setSuggestedPrompts": lambda: (
                c.assistant_threads_setSuggestedPrompts(**thread, prompts=prompts)
            ),
            "pins.list": lambda: c.pins_list(channel=CHANNEL),
            "files.info": lambda: c.files_info(file="F1"),
            "apps.connections.open": lambda: WebClient(
                token="xapp-1", base_url=fake.url
            ).apps_connections_open(app_token="xapp-1"),
            "oauth.v2.access": lambda: WebClient(base_url=fake.url).oauth_v2_access(
                client_id="1.2", client_secret="s", code="c0de"
            ),
        }
        found = {m: call().data for m, call in calls.items()}
        written = {"chat.postMessage": reply, "chat.startStream": start,
                   "chat.appendStream": append, "chat.stopStream": stop, "chat.update": update}  # fmt: skip
        found.update({m: r.data for m, r in written.items()})
        yield found


def test_every_method_the_product_calls_has_a_vendored_sample(
    answers: dict[str, dict[str, Any]],
) -> None:
    assert sorted(answers) == sorted(p.stem for p in (SAMPLES / "api").glob("*.json"))


@pytest.mark.parametrize("method", sorted(p.stem for p in (SAMPLES / "api").glob("*.json")))
def test_the_fake_answers_with_slacks_keys(method: str, answers: dict[str, dict[str, Any]]) -> None:
    got, recorded = answers[method], sample(method)
    assert got["ok"] is True
    required = REQUIRED.get(method, {})
    assert set(required.get("required", [])) <= set(got), f"{method} misses required keys"
    allowed = set(recorded) - _FAILURE_KEYS | _DOCUMENTED_EXTRAS.get((method, ""), set())
    assert set(got) - {"ok"} <= allowed, f"{method} answers keys Slack never sends"
    for name in ("message", "channel", "user", "file"):
        if not isinstance(got.get(name), dict):
            continue
        assert set(required.get(name, [])) <= set(got[name]), f"{method}.{name} misses keys"
        if isinstance(recorded.get(name), dict):
            known = set(recorded[name]) | _DOCUMENTED_EXTRAS.get((method, name), set())
            assert set(got[name]) <= known, f"{method}.{name}: {set(got[name]) - known}"
    for name in ("messages", "items", "channels"):
        if not isinstance(got.get(name), list) or not got[name]:
            continue
        known = union(recorded.get(name)) | _DOCUMENTED_EXTRAS.get((method, name), set())
        for item in got[name]:
            assert set(item) <= known, f"{method}.{name}: {set(item) - known}"
        assert set(required.get(name, [])) <= set(got[name][0]), f"{method}.{name}[0]"


def test_replies_carry_what_slack_marks_a_thread_with(answers: dict[str, dict[str, Any]]) -> None:
    root, *replies = answers["conversations.replies"]["messages"]
    assert root["reply_count"] == len(replies) and root["latest_reply"] == replies[-1]["ts"]
    assert root["reply_users"] and root["reply_users_count"] == len(root["reply_users"])
    assert all(r["parent_user_id"] == root["user"] for r in replies)
    # Form-encoded metadata comes back as the object it was, not as JSON text.
    assert replies[0]["metadata"] == {
        "event_type": "chanctx_turn", "event_payload": {"turn": "t", "part": 0}
    }  # fmt: skip
    assert answers["conversations.history"]["pin_count"] == 1


def quietly(call: Callable[[], Any]) -> Any:
    """slack_sdk warns before sending a post without text; the point here is Slack's answer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return call()


def _refusals(fake: FakeSlackAPI, c: WebClient) -> list[tuple[str, Callable[[], Any], str]]:
    root = c.chat_postMessage(channel=CHANNEL, text="question")["ts"]
    theirs = "1781020801.000100"
    fake.add_message(CHANNEL, {"type": "message", "user": "U1", "text": "hi", "ts": theirs})
    c.reactions_add(channel=CHANNEL, timestamp=root, name="eyes")
    stream = c.chat_startStream(channel=DM, thread_ts=root, markdown_text="a")["ts"]
    return [
        ("conversations.history", lambda: c.conversations_history(channel="C0NOWHERE"),
         "channel_not_found"),
        ("conversations.history", lambda: c.conversations_history(channel="C0OUTSIDE"),
         "not_in_channel"),
        ("conversations.history", lambda: c.conversations_history(channel=CHANNEL,
                                                                  cursor="bm9wZQ=="),
         "invalid_cursor"),
        ("conversations.replies", lambda: c.conversations_replies(channel=CHANNEL, ts="1.0"),
         "thread_not_found"),
        ("conversations.replies", lambda: c.conversations_replies(channel=CHANNEL, ts=root,
                                                                  cursor="x"),
         "invalid_cursor"),
        ("chat.postMessage", lambda: c.chat_postMessage(channel="C0NOWHERE", text="x"),
         "channel_not_found"),
        ("chat.postMessage", lambda: c.chat_postMessage(channel="C0OUTSIDE", text="x"),
         "not_in_channel"),
        ("chat.postMessage", lambda: quietly(lambda: c.chat_postMessage(channel=CHANNEL)),
         "no_text"),
        ("chat.postMessage", lambda: c.chat_postMessage(channel=CHANNEL, text="x",
                                                        markdown_text="y"),
         "markdown_text_conflict"),
        ("chat.update", lambda: c.chat_update(channel=CHANNEL, ts=root, text="x" * 4001),
         "msg_too_long"),
        ("chat.update", lambda: c.chat_update(channel=CHANNEL, ts="1.0", text="x"),
         "message_not_found"),
        ("chat.update", lambda: c.chat_update(channel=CHANNEL, ts=theirs, text="x"),
         "cant_update_message"),
        ("chat.update", lambda: c.chat_update(channel=DM, ts=stream, text="x"),
         "streaming_state_conflict"),
        ("reactions.add", lambda: c.reactions_add(channel=CHANNEL, timestamp=root,
                                                  name="eyes"),
         "already_reacted"),
        ("reactions.add", lambda: c.reactions_add(channel=CHANNEL, timestamp="1.0",
                                                  name="eyes"),
         "message_not_found"),
        ("reactions.remove", lambda: c.reactions_remove(channel=CHANNEL, timestamp=theirs,
                                                        name="eyes"),
         "no_reaction"),
        ("users.info", lambda: c.users_info(user="U0NOBODY"), "user_not_found"),
        ("files.info", lambda: c.files_info(file="F0NONE"), "file_not_found"),
        ("chat.appendStream", lambda: c.chat_appendStream(channel=CHANNEL, ts=root,
                                                          markdown_text="x"),
         "message_not_in_streaming_state"),
    ]  # fmt: skip


def test_the_fake_refuses_with_the_codes_slack_documents() -> None:
    state = copy.deepcopy(STATE)
    state["channels"]["C0OUTSIDE"] = {"id": "C0OUTSIDE", "name": "outside", "is_member": False}
    common = set(DOCUMENTED.get("common", []))
    with FakeSlackAPI(state) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        for method, call, error in _refusals(fake, client):
            assert error in set(DOCUMENTED[method]) | common, f"{error} is not {method}'s"
            with pytest.raises(SlackApiError) as refused:
                call()
            assert refused.value.response.status_code == 200
            assert refused.value.response["error"] == error, method


# --- the Messages API --------------------------------------------------------------------


@pytest.mark.slow
def test_every_request_the_demo_replay_writes_is_a_valid_message_create(tmp_path: Path) -> None:
    out = tmp_path / "requests.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "chanctx.bot.cli", "replay", str(DEMO), "--requests-out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert lines
    adapter: TypeAdapter[Any] = TypeAdapter(MessageCreateParams)
    for line in lines:
        body = line.get("body", line) if isinstance(line, dict) else line
        adapter.validate_python(body, strict=False)


def test_every_fake_answer_is_an_sdk_message() -> None:
    bodies = [
        {"model": "claude-opus-4-8", "max_tokens": 256,
         "messages": [{"role": "user", "content": "what broke checkout?"}]},
        {"model": "claude-opus-4-8", "max_tokens": 256,
         "tools": [{"name": "channel_context", "description": "search",
                    "input_schema": {"type": "object", "properties": {}}}],
         "messages": [{"role": "user", "content": "what broke checkout?"}]},
    ]  # fmt: skip
    with FakeAnthropicAPI() as fake:
        client = anthropic.Anthropic(api_key="k", base_url=fake.url, max_retries=0)
        for body in bodies:
            raw = client.messages.with_raw_response.create(**body)
            message = Message.model_validate(json.loads(raw.http_response.content))
            assert message.content and message.usage.output_tokens >= 0
