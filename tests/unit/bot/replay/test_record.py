"""``chanctx record``: every token shape is redacted from what it writes, and what it writes
replays."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.replay.record import Recorder, redact

from tests.support.slack_events import STATE, mention_pair, ts


def test_redaction_removes_every_token_shape() -> None:
    envelope = {
        "token": "verification-token-value",
        "event": {
            "text": "my token is xoxb-1234-5678-abcdef and xapp-1-A1-2-ff, see xoxp-9-9",
            "files": [{"url_private": "https://files.slack.com/x?t=xoxe-1-abc"}],
        },
        "authorizations": [{"user_id": "U1"}],
    }
    cleaned = json.dumps(redact(envelope))
    for secret in ("verification-token-value", "xoxb-1234", "xapp-1-A1", "xoxp-9", "xoxe-1-abc"):
        assert secret not in cleaned
    assert redact(envelope)["authorizations"] == [{"user_id": "U1"}]


def test_record_writes_a_replayable_fixture(tmp_path: Path) -> None:
    from chanctx.bot.launch.one_workspace import known_state
    from chanctx.bot.replay.fixture import load_fixture
    from chanctx.bot.replay.runner import replay

    recorder = Recorder(tmp_path / "rec")
    # Recorded first, in delivery order, as `chanctx record` does (a channel message event
    # ends in the intake middleware, so a recorder after it would never see one).
    with OfflineBot(copy.deepcopy(STATE), before=[recorder.middleware]) as bot:
        for item in mention_pair(ts(10), "status? my token is xoxb-1-2-3"):
            item["token"] = "a-verification-token"
            bot.dispatch(item)
        recorder.write_state(known_state(bot.runtime))
    recorder.close()
    lines = (tmp_path / "rec" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert "xoxb-1-2-3" not in "".join(lines) and "a-verification-token" not in "".join(lines)
    state = json.loads((tmp_path / "rec" / "slack_api.json").read_text())
    assert state["auth"]["user_id"] == "U0BOT00001"
    assert state["users"]["U1"]["profile"]["display_name"] == "Sam"  # resolved while running

    report = replay(load_fixture(tmp_path / "rec"))
    assert len(report["turns"]) == 1
    assert report["turns"][0]["context"]["snapshot"]["anchor"]["author"]["display_name"] == "Sam"
