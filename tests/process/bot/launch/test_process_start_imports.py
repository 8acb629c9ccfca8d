"""A start does not import the anthropic SDK: a fresh interpreter imports the ``chanctx`` entry
point, builds the runtime ``chanctx run --http`` serves (auth.test against the fake Slack, the
channel store opened, an API key set, so answers go to Claude) and finds ``anthropic`` absent
from ``sys.modules``; the client the first answer asks for then imports it, and so does the
warm-up a start runs once it serves (``bot/messages_api/sdk.py``)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from tests.support.paths import ROOT
from tests.support.slack_events import STATE

CHILD = """
import json, sys, time
from chanctx.bot import cli  # the entry point, with everything it imports at module level
from chanctx.bot.launch.channel_store import open_channel_store
from chanctx.bot.launch.one_workspace import build_runtime
from chanctx.bot.launch.settings import load_settings
from chanctx.bot.messages_api.sdk import warm
from slack_sdk import WebClient

settings = load_settings(http=True)
channels = open_channel_store(settings.data_dir, settings.options)
client = WebClient(token=settings.bot_token, base_url=settings.slack_api_url)
runtime = build_runtime(client, settings, channels=channels)
seen = {"built": "anthropic" in sys.modules, "responder": type(runtime.responder).__name__}
if sys.argv[1] == "answer":
    runtime.responder.client.get()  # what the first answer's Messages API call does first
else:
    warm()
    deadline = time.monotonic() + 120  # a bound for a broken warm-up, not a measurement
    while "anthropic.lib.streaming" not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.05)
seen["after"] = "anthropic" in sys.modules and "anthropic.lib.streaming" in sys.modules
channels.close()
print(json.dumps(seen))
"""


def start_in_child(tmp_path: Path, slack: FakeSlackAPI, then: str) -> dict[str, object]:
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-start-imports",
        "SLACK_SIGNING_SECRET": "start-imports-secret",
        "ANTHROPIC_API_KEY": "sk-ant-start-imports",
        "SLACK_API_URL": slack.url,
        "CHANCTX_DATA_DIR": str(tmp_path / then),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, then],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seen: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("then", ["answer", "warm"])
def test_a_start_leaves_the_sdk_to_the_first_answer_or_the_warm_up(
    tmp_path: Path, then: str
) -> None:
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack:
        seen = start_in_child(tmp_path, slack, then)
    assert seen == {"built": False, "responder": "ClaudeResponder", "after": True}
