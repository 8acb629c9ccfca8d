"""A fixture of events alone (``slack_api.json`` is optional) replays with answers: the fake
Slack gives the bot an identity, so every streamed answer is the bot's own, and each mention
gets exactly one reply; where posting does fail, the asker still gets the failure notice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_slack import DEFAULT_AUTH
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.runner import replay

from tests.support.slack_events import envelope, message, ts

CHANNELS = ["C0EVENTS01", "C0EVENTS02"]
BOT = "U0SOMEBOT1"  # the bot as the events name it: no slack_api.json says who that is


def mention(at: str, channel: str, text: str) -> list[dict[str, Any]]:
    said = f"<@{BOT}> {text}"
    sent = message(at, said, channel=channel)
    asked = {"type": "app_mention", "user": "U1", "text": said, "ts": at, "channel": channel,
             "event_ts": at}  # fmt: skip
    return [envelope(sent), envelope(asked)]


def write_fixture(root: Path, api: dict[str, Any] | None = None) -> list[str]:
    """Three mentions in two channels, after some chatter; the mentions' ts."""
    root.mkdir()
    events = [envelope(message(ts(1), "the deploy went out at noon", channel=CHANNELS[0]))]
    anchors = [ts(10), ts(11), ts(12)]
    for n, at in enumerate(anchors):
        events += mention(at, CHANNELS[n % 2], f"question {n}: what went out?")
    (root / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if api is not None:
        (root / "slack_api.json").write_text(json.dumps(api))
    return anchors


def replies(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {turn["anchor_ts"]: turn["posted"] for turn in report["turns"]}


def test_an_events_only_fixture_answers_every_mention_once(tmp_path: Path) -> None:
    anchors = write_fixture(tmp_path / "fixture")
    report = replay(load_fixture(tmp_path / "fixture"))
    turns = {t["anchor_ts"]: t for t in report["turns"]}
    assert sorted(turns) == anchors
    for anchor, turn in turns.items():
        assert turn.get("error") is None, turn.get("error")
        assert turn["reply"], anchor
        # One reply message per mention (a stream's calls all end in the same message).
        assert len({call["ts"] for call in turn["posted"]}) == 1, turn["posted"]
    assert report["claude"]["rejected"] == 0


def test_a_failing_post_still_tells_the_asker(tmp_path: Path) -> None:
    # The only Web API state: every stream and update fails for good, as when Slack refuses
    # the bot's messages; the failure notice goes out as a plain post.
    faults = [{"method": m, "n": 50, "status": 200, "error": "message_not_owned_by_app"}
              for m in ("chat.startStream", "chat.appendStream", "chat.update",
                        "chat.postMessage")]  # fmt: skip
    faults[-1]["n"] = 1  # the answer's post fails once; the notice's goes through
    anchors = write_fixture(tmp_path / "fixture", {"faults": faults})
    report = replay(load_fixture(tmp_path / "fixture"))
    texts = {t["anchor_ts"]: [c.get("markdown_text") or c.get("text") for c in t["posted"]]
             for t in report["turns"]}  # fmt: skip
    assert sorted(texts) == anchors
    noticed = [a for a, sent in texts.items() if any("couldn't answer" in (s or "") for s in sent)]
    assert noticed, texts
    for sent in texts.values():
        assert len(sent) >= 1  # every mention got a reply: its answer or the notice


def test_the_fake_names_a_bot_when_the_fixture_does_not() -> None:
    from chanctx.bot.replay.fake_slack import FakeSlackAPI

    with FakeSlackAPI({}) as slack:
        assert slack.identity()["user_id"] == DEFAULT_AUTH["user_id"]
    with FakeSlackAPI({"auth": {"user_id": "U0MINE0001"}}) as slack:
        assert slack.identity()["user_id"] == "U0MINE0001"
        assert slack.identity()["bot_id"] == DEFAULT_AUTH["bot_id"]
