"""FakeSlackAPI answers the real slack_sdk.WebClient over loopback like Slack does."""

from __future__ import annotations

import base64
import itertools
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from chanctx.bot.replay.fake_slack import (
    FILE_DOWNLOAD,
    FakeSlackAPI,
    RecordedReaction,
    RecordedStatus,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.support.fake_clock import ticking_clock
from tests.support.paths import ROOT

TOKEN = "xoxb-test-0123456789-secret"
BASE = 1_760_000_000
_channels = (f"CH{n:06d}" for n in itertools.count())

STATE: dict[str, Any] = {
    "auth": {"user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1", "user": "chanctx"},
    "channels": {"C1": {"id": "C1", "name": "general"}},
    "users": {"U1": {"id": "U1", "name": "alice", "profile": {"display_name": "Alice"}}},
    "files": {
        "F1": {"name": "notes.txt", "mimetype": "text/plain", "content_text": "hello"},
        "F2": {
            "name": "pixel.png",
            "mimetype": "image/png",
            "content_b64": base64.b64encode(b"\x89PNG\r\n").decode(),
        },
    },
    "history": {
        "C1": [
            {"type": "message", "user": "U1", "text": "root", "ts": f"{BASE}.000100"},
            {"type": "message", "user": "U1", "text": "r1", "ts": f"{BASE + 5}.000000",
             "thread_ts": f"{BASE}.000100"},
            {"type": "message", "user": "U1", "text": "file", "ts": f"{BASE + 9}.000000",
             "files": [{"id": "F1", "url_private": "https://files.slack.com/F1"}]},
        ]
    },
}  # fmt: skip
ROOT_TS = f"{BASE}.000100"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSlackAPI]:
    with FakeSlackAPI(STATE, clock=ticking_clock(float(BASE + 100))) as server:
        yield server


@pytest.fixture(scope="module")
def client(fake: FakeSlackAPI) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.url)


def msg(ts: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "user": "U1", "text": text or ts, "ts": ts, **extra}


def new_channel(fake: FakeSlackAPI, messages: list[dict[str, Any]]) -> str:
    channel = next(_channels)
    for message in messages:
        fake.add_message(channel, message)
    return channel


def follow(client: WebClient, method: str, **params: Any) -> tuple[list[str], int]:
    """Every message ts over all pages, and how many pages it took."""
    seen: list[str] = []
    cursor, pages = "", 0
    while True:
        response = client.api_call(
            method, params={**params, **({"cursor": cursor} if cursor else {})}
        )
        pages += 1
        seen += [m["ts"] for m in response["messages"]]
        cursor = response["response_metadata"]["next_cursor"]
        assert response["has_more"] == bool(cursor)
        if not cursor:
            return seen, pages


ts_lists = st.lists(st.integers(0, 10**9), unique=True, max_size=60).map(
    lambda xs: [f"{BASE + x // 10**6}.{x % 10**6:06d}" for x in xs]
)


@settings(max_examples=60, deadline=None)
@given(tss=ts_lists, page=st.integers(1, 25), replies=st.lists(st.booleans(), max_size=60))
def test_history_pages_yield_each_top_level_message_once_newest_first(
    fake: FakeSlackAPI, client: WebClient, tss: list[str], page: int, replies: list[bool]
) -> None:
    # Some messages are thread replies (hidden from history) or broadcasts (shown).
    flags = replies + [False] * len(tss)
    seeded, expected = [], []
    for ts, is_reply, broadcast in zip(tss, flags, reversed(flags), strict=False):
        extra: dict[str, Any] = {}
        if is_reply:
            extra = {"thread_ts": "1.000000"}
            if broadcast:
                extra["subtype"] = "thread_broadcast"
        seeded.append(msg(ts, **extra))
        if not is_reply or broadcast:
            expected.append(ts)
    channel = new_channel(fake, seeded)
    if not seeded:
        fake.add_message(channel, msg("1.000000"))
        expected = ["1.000000"]
    seen, pages = follow(client, "conversations.history", channel=channel, limit=page)
    assert seen == sorted(expected, key=float, reverse=True)
    assert pages == max(1, -(-len(expected) // page))


@settings(max_examples=60, deadline=None)
@given(tss=ts_lists, page=st.integers(1, 25))
def test_replies_pages_yield_root_then_replies_oldest_first(
    fake: FakeSlackAPI, client: WebClient, tss: list[str], page: int
) -> None:
    root = f"{BASE - 1}.000000"
    channel = new_channel(fake, [msg(root)] + [msg(ts, thread_ts=root) for ts in reversed(tss)])
    seen, _ = follow(client, "conversations.replies", channel=channel, ts=root, limit=page)
    assert seen == [root, *sorted(tss, key=float)]


def test_cursors_survive_posts_between_pages(fake: FakeSlackAPI, client: WebClient) -> None:
    channel = new_channel(fake, [msg(f"{BASE + i}.000000") for i in range(5)])
    first = client.conversations_history(channel=channel, limit=2)
    client.chat_postMessage(channel=channel, text="newer")  # lands before page one, not in page two
    second = client.conversations_history(
        channel=channel, limit=10, cursor=first["response_metadata"]["next_cursor"]
    )
    got = [m["ts"] for m in first["messages"] + second["messages"]]
    assert got == [f"{BASE + i}.000000" for i in (4, 3, 2, 1, 0)]


def test_bad_cursor_is_rejected(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        client.conversations_history(channel="C1", cursor="not a cursor")
    assert caught.value.response["error"] == "invalid_cursor"


def test_history_range_and_inclusive(fake: FakeSlackAPI, client: WebClient) -> None:
    channel = new_channel(fake, [msg(f"{BASE + i}.000000") for i in range(5)])
    mid = f"{BASE + 2}.000000"
    exclusive = client.conversations_history(channel=channel, latest=mid)
    assert [m["ts"] for m in exclusive["messages"]] == [f"{BASE + i}.000000" for i in (1, 0)]
    one = client.conversations_history(channel=channel, latest=mid, inclusive=True, limit=1)
    assert [m["ts"] for m in one["messages"]] == [mid]
    newer = client.conversations_history(channel=channel, oldest=mid)
    assert [m["ts"] for m in newer["messages"]] == [f"{BASE + i}.000000" for i in (4, 3)]


def test_post_then_read_back(fake: FakeSlackAPI, client: WebClient) -> None:
    channel = new_channel(fake, [msg(f"{BASE}.000000", "question")])
    root = f"{BASE}.000000"
    posted = [
        client.chat_postMessage(channel=channel, text=f"answer {i}", thread_ts=root)
        for i in range(3)
    ]
    # The clock stands still, yet every ts is new and increasing.
    tss = [p["ts"] for p in posted]
    assert tss == sorted(set(tss), key=float) and len(tss) == 3
    assert posted[0]["message"]["user"] == "UBOT" and posted[0]["message"]["bot_id"] == "BBOT"
    thread = client.conversations_replies(channel=channel, ts=root)["messages"]
    assert [m["text"] for m in thread] == ["question", "answer 0", "answer 1", "answer 2"]
    assert thread[0]["reply_count"] == 3
    assert thread[0]["latest_reply"] == tss[-1]
    assert thread[0]["reply_users"] == ["UBOT"]
    # Plain replies stay out of the channel timeline; a broadcast shows in both.
    client.chat_postMessage(channel=channel, text="fyi", thread_ts=tss[0], reply_broadcast=True)
    timeline = client.conversations_history(channel=channel)["messages"]
    assert [m["text"] for m in timeline] == ["fyi", "question"]
    assert fake.posted[-1]["channel"] == channel and fake.posted[-1]["thread_ts"] == root
    # A reply's ts answers with just that reply.
    only = client.conversations_replies(channel=channel, ts=tss[1])["messages"]
    assert [m["ts"] for m in only] == [tss[1]]


def test_update_reactions_and_status(fake: FakeSlackAPI, client: WebClient) -> None:
    channel = new_channel(fake, [msg(f"{BASE}.000000", "hi")])
    ts = client.chat_postMessage(channel=channel, text="draft")["ts"]
    updated = client.chat_update(channel=channel, ts=ts, text="final")
    assert updated["message"]["text"] == "final" and "edited" in updated["message"]
    with pytest.raises(SlackApiError, match="cant_update_message"):
        client.chat_update(channel=channel, ts=f"{BASE}.000000", text="not mine")
    client.reactions_add(channel=channel, timestamp=ts, name="eyes")
    with pytest.raises(SlackApiError, match="already_reacted"):
        client.reactions_add(channel=channel, timestamp=ts, name="eyes")
    (message,) = [m for m in fake.messages(channel) if m["ts"] == ts]
    assert message["reactions"] == [{"name": "eyes", "users": ["UBOT"], "count": 1}]
    client.reactions_remove(channel=channel, timestamp=ts, name="eyes")
    with pytest.raises(SlackApiError, match="no_reaction"):
        client.reactions_remove(channel=channel, timestamp=ts, name="eyes")
    assert fake.reactions_log[-2:] == [
        RecordedReaction(channel, ts, "eyes", True),
        RecordedReaction(channel, ts, "eyes", False),
    ]
    client.assistant_threads_setStatus(channel_id=channel, thread_ts=ts, status="is thinking…")
    assert fake.statuses[-1] == RecordedStatus(channel, ts, "is thinking…")


def test_lookups_and_errors(client: WebClient) -> None:
    assert client.auth_test()["user_id"] == "UBOT"
    assert client.conversations_info(channel="C1")["channel"]["name"] == "general"
    assert client.users_info(user="U1")["user"]["profile"]["display_name"] == "Alice"
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: client.users_info(user="U404"), "user_not_found"),
        (lambda: client.conversations_info(channel="C404"), "channel_not_found"),
        (lambda: client.conversations_history(channel="C404"), "channel_not_found"),
        (lambda: client.conversations_replies(channel="C1", ts="1.000001"), "thread_not_found"),
        (lambda: client.files_info(file="F404"), "file_not_found"),
        (lambda: client.api_call("no.such.method"), "unknown_method"),
    ]
    for call, error in cases:
        with pytest.raises(SlackApiError) as caught:
            call()
        assert caught.value.response["error"] == error


def test_files_point_at_the_fake_and_download(fake: FakeSlackAPI, client: WebClient) -> None:
    info = client.files_info(file="F2")["file"]
    assert info["url_private"].startswith(fake.root + "files/F2/")
    assert info["size"] == 6 and "content_b64" not in info
    served = client.conversations_history(channel="C1", latest=f"{BASE + 9}.000000", inclusive=True)
    (file,) = served["messages"][0]["files"]
    assert file["url_private"].startswith(fake.root) and "slack.com" not in json.dumps(file)

    def get(url: str, token: str | None = TOKEN) -> tuple[int, bytes, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as r:
                return r.status, r.read(), r.headers["content-type"]
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.read(), ""

    assert get(info["url_private_download"]) == (200, b"\x89PNG\r\n", "image/png")
    assert get(file["url_private"])[:2] == (200, b"hello")
    assert get(fake.root + "files/F404/x")[0] == 404
    assert get(info["url_private"], token=None)[0] == 403
    assert fake.calls[-1].method == FILE_DOWNLOAD and fake.calls[-1].params == {"file": "F2"}


def test_token_is_never_recorded(fake: FakeSlackAPI, client: WebClient) -> None:
    client.users_info(user="U1")
    client.api_call("auth.test", params={"token": TOKEN})  # even sent as a form field
    assert fake.calls[-1].authed
    assert TOKEN not in repr(fake.calls)
    assert "secret" not in json.dumps([c.params for c in fake.calls], default=str)


@pytest.mark.parametrize("token", [None, "xoxa-2-legacy", "not-a-token"])
def test_calls_without_a_bot_or_user_token_are_not_authed(
    fake: FakeSlackAPI, token: str | None
) -> None:
    with pytest.raises(SlackApiError) as caught:
        WebClient(token=token, base_url=fake.url).auth_test()
    assert caught.value.response["error"] == "not_authed"
    assert fake.calls[-1].authed is False


def test_429_with_retry_after(fake: FakeSlackAPI, client: WebClient) -> None:
    fake.fail_next("users.info", 2, status=429, retry_after=7)
    for _ in range(2):
        with pytest.raises(SlackApiError) as caught:
            client.users_info(user="U1")
        assert caught.value.response.status_code == 429
        assert caught.value.response["error"] == "ratelimited"
        assert caught.value.response.headers["Retry-After"] == "7"
    assert client.users_info(user="U1")["ok"]


def test_5xx_wildcard_and_ok_false_faults(fake: FakeSlackAPI, client: WebClient) -> None:
    fake.fail_next("*", status=503)
    with pytest.raises(SlackApiError) as caught:
        client.auth_test()
    assert caught.value.response.status_code == 503  # plain-text body, as a proxy would send
    fake.fail_next("auth.test", status=200, error="internal_error")
    with pytest.raises(SlackApiError, match="internal_error"):
        client.auth_test()
    fake.fail_next("users.info")  # only users.info: other methods pass
    assert client.auth_test()["ok"]
    with pytest.raises(SlackApiError):
        client.users_info(user="U1")


def test_slow_next_delays_but_answers(fake: FakeSlackAPI, client: WebClient) -> None:
    fake.slow_next("auth.test", 1, 0.05)
    assert client.auth_test()["ok"]


def test_call_counts_count_every_call() -> None:
    with FakeSlackAPI(STATE) as fake:
        client = WebClient(token=TOKEN, base_url=fake.url)
        client.auth_test()
        client.conversations_history(channel="C1")
        client.conversations_history(channel="C1")
        assert fake.call_counts() == {"auth.test": 1, "conversations.history": 2}


def test_serves_the_demo_fixture() -> None:
    state = json.loads((ROOT / "fixtures" / "demo" / "slack_api.json").read_text())
    with FakeSlackAPI(state) as fake:
        client = WebClient(token=TOKEN, base_url=fake.url)
        assert client.auth_test()["user_id"] == state["auth"]["user_id"]
        for user_id in state["users"]:
            assert client.users_info(user=user_id)["user"]["id"] == user_id


def test_seeding_a_message_without_ts_fails_clearly() -> None:
    with FakeSlackAPI() as fake, pytest.raises(ValueError, match="Slack ts"):
        fake.add_message("C1", {"text": "no ts"})
