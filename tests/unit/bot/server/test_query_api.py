"""``POST /api/context/query`` over real HTTP (uvicorn), on the demo fixture's replayed state:
keys bound to channels, seed 001's properties for every answer (Hypothesis), bad bodies named."""

from __future__ import annotations

import concurrent.futures
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from chanctx.bot.server.query_api import ApiKeys, query_routes
from chanctx.context import default_counter
from chanctx.tools import BLOCK_TYPES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.query_server import DEMO, api_server, demo_replayed

INCIDENTS, RANDOM = "C0INCIDENT", "C0RANDOM00"
READER = "incidents-reader-key-0001"  # may read #incidents only
ADMIN = "every-channel-admin-key-01"
COUNT = default_counter().count


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with (
        demo_replayed() as bot,
        api_server(bot, ApiKeys({READER: [INCIDENTS], ADMIN: "*"})) as server,
    ):
        yield f"{server.origin}/api/context/query"


def post(url: str, body: Any, key: str | None = READER) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code), json.loads(error.read())


def test_a_query_answers_ranked_blocks_within_the_budget(api: str) -> None:
    status, body = post(api, {"query": "checkout 502 rollback", "channel": INCIDENTS,
                              "token_budget": 800, "format": "markdown"})  # fmt: skip
    assert status == 200
    assert body["chunks"] and body["total_tokens"] <= 800
    assert body["total_tokens"] == COUNT(body["rendered"])
    top = body["chunks"][0]
    assert top["relevance"] == 1.0 and top["block_type"] in ("message", "thread")
    assert "502" in body["rendered"] or "checkout" in body["rendered"].lower()
    assert set(top) == {"block_id", "block_type", "source", "text", "tokens", "relevance",
                        "pinned", "truncated", "original_tokens"}  # fmt: skip


def test_keys_are_bound_to_channels(api: str) -> None:
    query = {"query": "lunch", "channel": RANDOM}
    assert post(api, query, key=None)[0] == 401
    assert post(api, query, key="not-a-key-at-all-000")[0] == 401
    status, body = post(api, query)  # the reader key, another channel
    assert status == 403 and body == {"error": f"this key may not read channel {RANDOM}"}
    assert post(api, query, key=ADMIN)[0] == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"channel": INCIDENTS}, "query"),
        ({"query": "x", "channel": "incidents"}, "channel"),
        ({"query": "x", "channel": INCIDENTS, "token_budget": 3}, "token_budget"),
        ({"query": "x", "channel": INCIDENTS, "format": "html"}, "format"),
        ({"query": "x", "channel": INCIDENTS, "type_filters": ["pin"]}, "type_filters.0"),
        ({"query": "x", "channel": INCIDENTS, "colour": "red"}, "colour"),
        (b"{not json", "body"),
    ],
)
def test_a_bad_body_is_a_422_naming_the_field(api: str, body: Any, field: str) -> None:
    status, answer = post(api, body)
    assert status == 422
    assert field in [f["field"] for f in answer["fields"]]


WORDS = ["checkout", "502", "rollback", "deploy", "database", "staging", "error", "v41",
         "read-only", "eu-west-1", "latency", "who", "fix"]  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    budget=st.integers(min_value=16, max_value=3_000),
    fmt=st.sampled_from(["json", "markdown", "text"]),
    filters=st.sampled_from([[], ["message"], ["thread"]]),
)
def test_seed_001_properties_hold_for_any_query(
    api: str, words: list[str], budget: int, fmt: str, filters: list[str]
) -> None:
    status, body = post(api, {"query": " ".join(words), "channel": INCIDENTS,
                              "token_budget": budget, "format": fmt, "type_filters": filters})  # fmt: skip
    assert status == 200
    chunks = body["chunks"]
    # The budget is never exceeded, counting what the reader receives.
    assert body["total_tokens"] == COUNT(body["rendered"]) <= budget
    # Pinned first (none are pinned yet), then relevance descending.
    assert [c["relevance"] for c in chunks] == sorted(
        (c["relevance"] for c in chunks), reverse=True
    )
    # Only the last block may be cut, at a sentence boundary ("..."): nothing after a cut one.
    assert all(not c["truncated"] for c in chunks[:-1])
    assert body["truncated_count"] == sum(c["truncated"] for c in chunks)
    assert all(c["block_type"] in (filters or BLOCK_TYPES) for c in chunks)
    if fmt == "json":
        rendered = json.loads(body["rendered"])
        assert [r["block_id"] for r in rendered] == [c["block_id"] for c in chunks]
        assert all(r["text"] == c["text"] for r, c in zip(rendered, chunks, strict=True))
    if fmt == "markdown":
        assert body["rendered"].count("## ") >= len(chunks)
        for chunk in chunks:
            assert f"## {chunk['block_type']}: {chunk['source']}" in body["rendered"]


def test_the_same_query_over_the_same_state_gives_the_same_block_ids(api: str) -> None:
    query = {"query": "rollback v41", "channel": INCIDENTS, "token_budget": 1_500}
    first, second = post(api, query)[1], post(api, query)[1]
    assert [c["block_id"] for c in first["chunks"]] == [c["block_id"] for c in second["chunks"]]


@pytest.mark.slow
def test_a_hundred_queries_at_once_all_complete(api: str) -> None:
    queries = [{"query": WORDS[n % len(WORDS)], "channel": INCIDENTS, "token_budget": 500}
               for n in range(100)]  # fmt: skip
    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        statuses = [status for status, _ in pool.map(lambda q: post(api, q), queries)]
    assert statuses == [200] * 100


def test_the_keys_file_is_checked_when_loaded(tmp_path: Path) -> None:
    good = tmp_path / "keys.yaml"
    good.write_text(f'{READER}: ["{INCIDENTS}"]\n{ADMIN}: "*"\n')
    keys = ApiKeys.load(good)
    assert keys.grant(READER) == [INCIDENTS] and keys.grant(ADMIN) == "*"
    assert keys.grant("guess") is None
    bound = tmp_path / "bound.yaml"  # with --oauth, keys name their workspace
    bound.write_text(f'{READER}: {{team: T0ACME0001, channels: ["{INCIDENTS}"]}}\n{ADMIN}: "*"\n')
    keys = ApiKeys.load(bound)
    assert keys.grant(READER) == [INCIDENTS] and keys.team(READER) == "T0ACME0001"
    assert keys.team(ADMIN) is None and keys.unbound() == [ADMIN[:4] + "..."]
    assert keys.of_team("T0ACME0001").grant(ADMIN) is None
    assert keys.of_team("T0GLOBEX01").grant(READER) is None
    for text in (
        "[]",
        "short: ['C1']\n",
        f"{READER}: 5\n",
        "{{{",
        f"{READER}: {{team: acme, channels: '*'}}\n",  # not a team id
        f"{READER}: {{team: T0ACME0001}}\n",  # no channels
        f"{READER}: {{team: T0ACME0001, channels: '*', admin: true}}\n",  # an unknown field
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ValueError, match=r"bad\.yaml"):
            ApiKeys.load(bad)


@pytest.mark.slow
def test_run_http_serves_the_api_beside_the_events_with_a_keys_file(tmp_path: Path) -> None:
    import copy

    from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
    from chanctx.bot.replay.fake_slack import FakeSlackAPI

    from bench._process import BotProcess, post_signed
    from tests.support.slack_events import CHANNEL, STATE, envelope, message, ts

    keys = tmp_path / "keys.yaml"
    keys.write_text(f'{READER}: ["{CHANNEL}"]\n')
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(tmp_path / "data", slack.url, claude.url)
        bot.env["CHANCTX_API_KEYS"] = str(keys)
        bot.start()
        try:
            said = envelope(message(ts(5), "The billing queue drained at 14:20 after the fix"))
            assert post_signed(bot.url, said) == 200
            url = f"http://127.0.0.1:{bot.port}/api/context/query"
            status, body = post(url, {"query": "billing queue", "channel": CHANNEL})
            assert status == 200 and "billing queue drained" in body["rendered"]
            assert post(url, {"query": "x", "channel": "C0ELSEWHER"})[0] == 403
        finally:
            bot.stop()


@pytest.mark.slow
@pytest.mark.parametrize("with_keys", [False, True])
def test_replay_serve_answers_queries_over_the_recording_until_interrupted(
    tmp_path: Path, with_keys: bool
) -> None:
    import signal
    import socket
    import subprocess
    import sys
    import time

    from bench._process import free_port

    port = free_port()
    command = [sys.executable, "-m", "chanctx.bot.cli", "replay", str(DEMO), "--serve", str(port)]
    if with_keys:  # honoured as run honours it: only these keys, each its channels
        keys = tmp_path / "keys.yaml"
        keys.write_text(f'{READER}: ["{INCIDENTS}"]\n')
        command += ["--api-keys", str(keys)]
    log = (tmp_path / "replay.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert process.poll() is None, (tmp_path / "replay.log").read_text()
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/api/context/query"
        asked = {"query": "rollback", "channel": INCIDENTS}
        if with_keys:
            assert post(url, asked, key=None)[0] == 401
            assert post(url, {"query": "x", "channel": RANDOM}, key=READER)[0] == 403
            status, body = post(url, asked, key=READER)
        else:
            status, body = post(url, asked, key=None)  # loopback, a recording: no key needed
        assert status == 200 and body["chunks"]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    printed = (tmp_path / "replay.log").read_text()
    assert printed.startswith("chanctx replay: ")  # the transcript came first
    assert f"serving http://127.0.0.1:{port}/api/context/query" in printed


def sse_events(url: str, key: str | None = READER) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            raw = response.read().decode()
            status = int(response.status)
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code), []
    events = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return status, events


def test_the_stream_sends_each_chunk_then_the_completion(api: str) -> None:
    base = api.removesuffix("/query") + "/stream"
    url = f"{base}?query=rollback+v41&channel={INCIDENTS}&token_budget=900&format=text"
    status, events = sse_events(url)
    assert status == 200
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "complete" and set(kinds[:-1]) <= {"chunk"} and len(kinds) > 1
    done = events[-1][1]
    assert done["total_chunks"] == len(kinds) - 1 and done["total_tokens"] <= 900
    assert set(done) == {"total_chunks", "total_tokens", "token_budget", "truncated_count",
                         "elapsed_ms"}  # fmt: skip
    # The same answer as the one-shot query, chunk for chunk.
    _, once = post(api, {"query": "rollback v41", "channel": INCIDENTS, "token_budget": 900,
                         "format": "text"})  # fmt: skip
    assert [data for kind, data in events[:-1]] == once["chunks"]
    filtered = f"{base}?query=deploy&channel={INCIDENTS}&type_filters=thread,message"
    assert sse_events(filtered)[0] == 200
    assert sse_events(f"{base}?query=deploy&channel={RANDOM}")[0] == 403
    assert sse_events(f"{base}?query=deploy&channel={INCIDENTS}", key=None)[0] == 401
    assert sse_events(f"{base}?channel={INCIDENTS}")[0] == 422


def test_the_socket_answers_several_queries_and_refuses_what_it_must(api: str) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = api.replace("http://", "ws://").removesuffix("/query") + "/ws"
    with connect(url, additional_headers={"Authorization": f"Bearer {READER}"}) as socket:
        for number, words in enumerate(["rollback", "staging database"]):
            socket.send(json.dumps({"type": "query", "id": number, "query": words,
                                    "channel": INCIDENTS, "token_budget": 600}))  # fmt: skip
            received = []
            while not received or received[-1]["type"] != "complete":
                received.append(json.loads(socket.recv(timeout=30)))
            assert all(m["id"] == number for m in received)
            assert [m["type"] for m in received[:-1]] == ["chunk"] * (len(received) - 1)
            assert received[-1]["total_chunks"] == len(received) - 1
        socket.send(json.dumps({"type": "query", "id": 9, "query": "x", "channel": RANDOM}))
        refused = json.loads(socket.recv(timeout=30))
        assert refused == {"type": "error", "id": 9, "status": 403,
                           "error": f"this key may not read channel {RANDOM}"}  # fmt: skip
        socket.send("not json")
        assert json.loads(socket.recv(timeout=30))["status"] == 422
        # Seed 001's form: the fields in "options", the answer under "data".
        options = {"channel": INCIDENTS, "token_budget": 600, "format": "json"}
        socket.send(json.dumps({"type": "query", "id": 5, "query": "rollback", "options": options}))
        received = []
        while not received or received[-1]["type"] != "complete":
            received.append(json.loads(socket.recv(timeout=30)))
        assert [set(m) for m in received] == [{"type", "id", "data"}] * len(received)
        assert received[-1]["data"]["total_chunks"] == len(received) - 1 >= 1
        assert received[-1]["data"]["token_budget"] == 600
        assert all(m["data"]["tokens"] > 0 for m in received[:-1])
        clash = {"type": "query", "id": 6, "query": "x", "channel": INCIDENTS, "options": options}
        socket.send(json.dumps(clash))
        refused = json.loads(socket.recv(timeout=30))
        assert refused["status"] == 422 and "channel given both" in refused["error"]
        socket.send(json.dumps({"type": "query", "id": 7, "query": "x", "options": [1]}))
        assert "options must be an object" in json.loads(socket.recv(timeout=30))["error"]
    with pytest.raises(InvalidStatus), connect(url):  # no key: the handshake itself is refused
        pass


def test_pinned_messages_come_first_until_unpinned() -> None:
    import copy

    from tests.support.slack_events import CHANNEL, STATE, envelope, message, ts

    def pin(at: str, target: dict[str, Any], *, added: bool = True) -> dict[str, Any]:
        kind = "pin_added" if added else "pin_removed"
        item = {"type": "message", "channel": CHANNEL, "message": target, "created": 1}
        return {"type": kind, "user": "U1", "channel_id": CHANNEL, "item": item, "event_ts": at}

    rule = message(ts(1), "House rule: staging is read-only on Fridays, ask Ana first")
    with OfflineBot(copy.deepcopy(STATE)) as bot:
        for n, text in enumerate(["Checkout 502s after the deploy", "Checkout fixed by rollback"]):
            bot.dispatch(envelope(message(ts(10 + n), text)))
        bot.dispatch(envelope(rule))
        bot.dispatch(envelope(pin(ts(20), rule)))
        keys = ApiKeys({READER: [CHANNEL]})
        app = build_asgi_app(bot.app, extra_routes=query_routes(bot.engine, keys))
        with BackgroundServer(app) as server:
            url = f"{server.origin}/api/context/query"
            _, body = post(url, {"query": "checkout", "channel": CHANNEL})
            first, *rest = body["chunks"]
            assert first["pinned"] is True and "read-only on Fridays" in first["text"]
            assert first["source"].endswith("(pinned)")
            assert rest and not any(c["pinned"] for c in rest)
            assert [c["relevance"] for c in rest] == sorted(
                (c["relevance"] for c in rest), reverse=True
            )
            bot.dispatch(envelope(pin(ts(30), rule, added=False)))
            _, after = post(url, {"query": "checkout", "channel": CHANNEL})
            assert not any(c["pinned"] for c in after["chunks"])
            # Unpinned, the rule is an ordinary message: said right after a checkout match,
            # it may come as that match's context, never before the matches.
            texts = [c["text"] for c in after["chunks"]]
            assert "read-only on Fridays" not in texts[0]
            assert all("Checkout" in t for t in texts if "read-only on Fridays" not in t)
