"""The context query API under `chanctx run --http --oauth`: each API key names one workspace,
and no argument of a request can reach another workspace's channels, even with a key that may
read "*". A keys file with a key bound to no workspace stops the start with a message naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from bench._process import free_port
from tests.process.bot.events.test_process_oauth import (
    CLIENT_ID,
    CLIENT_SECRET,
    TEAMS,
    answers,
    ask,
    fake_workspaces,
    install,
    oauth_bot,
    wait_for,
)
from tests.support.slack_events import ts

ACME, GLOBEX = TEAMS
ACME_CHANNEL, GLOBEX_CHANNEL = TEAMS[ACME][0], TEAMS[GLOBEX][0]
KEYS = {
    "acme-ops-reader-0001": {"team": ACME, "channels": [ACME_CHANNEL]},
    "acme-everything-0001": {"team": ACME, "channels": "*"},
    "globex-everything-01": {"team": GLOBEX, "channels": "*"},
    "initech-everything-1": {"team": "T0INITECH1", "channels": "*"},  # never installed
}


def call(
    base: str, path: str, key: str | None, body: Any = None, method: str | None = None
) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            raw = answer.read()
            status = int(answer.status)
    except urllib.error.HTTPError as error:
        raw, status = error.read(), int(error.code)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode()


def query(base: str, key: str | None, channel: str) -> tuple[int, Any]:
    body = {"query": "latest update", "channel": channel, "format": "text"}
    return call(base, "/api/context/query", key, body)


def test_each_key_reads_only_its_own_workspace(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    with (
        fake_workspaces() as fakes,
        FakeAnthropicAPI() as claude,
    ):
        bot = oauth_bot(tmp_path / "data", fakes.url, claude.url, "--api-keys", str(keys_file))
        bot.start()
        base = bot.url.removesuffix("/slack/events")
        try:
            assert install(bot, ACME) == 200, bot.log_tail()
            assert install(bot, GLOBEX) == 200, bot.log_tail()

            status, acme = query(base, "acme-ops-reader-0001", ACME_CHANNEL)
            assert status == 200 and "failover" in acme["rendered"], (status, acme)
            assert "mobile" not in json.dumps(acme)
            status, globex = query(base, "globex-everything-01", GLOBEX_CHANNEL)
            assert status == 200 and "mobile" in globex["rendered"], (status, globex)
            assert "failover" not in json.dumps(globex)

            # A key that may read only #ops of ACME: another channel id is refused outright.
            status, refused = query(base, "acme-ops-reader-0001", GLOBEX_CHANNEL)
            assert status == 403 and "C0GLOBEX01" in refused["error"]
            # A key that may read every ACME channel still reads through ACME's token only:
            # Globex's channel id finds nothing there.
            status, other = query(base, "acme-everything-0001", GLOBEX_CHANNEL)
            assert status == 200 and other["chunks"] == [], other
            assert "mobile" not in json.dumps(other)

            status, missing = query(base, "initech-everything-1", ACME_CHANNEL)
            assert status == 404 and "T0INITECH1" in missing["error"]
            assert query(base, None, ACME_CHANNEL)[0] == 401
            assert query(base, "not-a-key-of-anyone-at-all", ACME_CHANNEL)[0] == 401

            # The WebSocket goes to the key's workspace the same way.
            socket_url = base.replace("http://", "ws://") + "/api/context/ws"
            acme_key = {"Authorization": "Bearer acme-ops-reader-0001"}
            with connect(socket_url, additional_headers=acme_key) as socket:
                socket.send(json.dumps({"type": "query", "id": 1, "query": "latest update",
                                        "channel": ACME_CHANNEL, "format": "text"}))  # fmt: skip
                received = [json.loads(socket.recv(timeout=30))]
                while received[-1]["type"] != "complete":
                    received.append(json.loads(socket.recv(timeout=30)))
                assert "failover" in json.dumps(received) and "mobile" not in json.dumps(received)
            initech = {"Authorization": "Bearer initech-everything-1"}
            for headers in ({}, initech):  # no key, a workspace not installed: no handshake
                with pytest.raises(InvalidStatus), connect(socket_url, additional_headers=headers):
                    pass

            # Each workspace's answered turns are its own in the inspector's API.
            ask(bot, fakes, ACME, ts(60))
            ask(bot, fakes, GLOBEX, ts(61))
            wait_for(lambda: answers(fakes, ACME, ts(60)), "ACME's answer", bot)
            wait_for(lambda: answers(fakes, GLOBEX, ts(61)), "Globex's answer", bot)
            # (the reply is posted a moment before the turn is filed as done)
            for key, channel in (("acme-everything-0001", ACME_CHANNEL),
                                 ("globex-everything-01", GLOBEX_CHANNEL)):  # fmt: skip
                wait_for(lambda k=key: call(base, "/api/turns", k)[1]["turns"], "a turn", bot)
                status, turns = call(base, "/api/turns", key)
                assert status == 200
                assert [t["channel"] for t in turns["turns"]] == [channel], turns

            # Agent profiles are kept per workspace.
            profile = {"preferred_format": "text", "token_budget": 300}
            saved = call(base, "/api/profiles/triage", "acme-everything-0001", profile, "PUT")
            assert saved[0] in (200, 201), saved
            assert call(base, "/api/profiles/triage", "acme-ops-reader-0001")[0] == 200
            assert call(base, "/api/profiles/triage", "globex-everything-01")[0] == 404

            # What holds no workspace data needs no key.
            assert call(base, "/openapi.json", None)[0] == 200
            status, page = call(base, "/inspector", None)
            assert status == 200 and "<html" in page.lower()
        finally:
            bot.stop()


def test_a_key_bound_to_no_workspace_stops_the_start_with_a_message(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(f"ungrouped-key-000001: ['{ACME_CHANNEL}']\n")
    env = {
        "SLACK_CLIENT_ID": CLIENT_ID,
        "SLACK_CLIENT_SECRET": CLIENT_SECRET,
        "SLACK_SIGNING_SECRET": "s" * 32,
        "SLACK_API_URL": "http://127.0.0.1:9",
        "CHANCTX_DATA_DIR": str(tmp_path / "data"),
        "ANTHROPIC_API_KEY": "sk-ant-process-test",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-m", "chanctx.bot.cli", "run", "--http", "--oauth", "--port", str(free_port()),
         "--api-keys", str(keys_file)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "each API key names its workspace" in done.stderr and "ungr..." in done.stderr
    assert "Traceback" not in done.stderr
