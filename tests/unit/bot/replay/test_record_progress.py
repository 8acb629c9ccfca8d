"""`chanctx record` shows how many events it has written: plain summary lines when its output is
not a terminal (a log file, a service manager), and a last line naming the file."""

from __future__ import annotations

import io
import json
from pathlib import Path

from chanctx.bot.replay.record import Progress, Recorder


def _delivered(recorder: Recorder, count: int) -> list[str]:
    passed: list[str] = []
    for n in range(count):
        body = {"type": "event_callback", "event_id": f"Ev{n:04d}", "event": {"type": "message"}}
        recorder.middleware(body, lambda: passed.append("next"))
    return passed


def test_a_line_every_few_events_and_one_at_the_end_when_not_a_terminal(tmp_path: Path) -> None:
    shown = io.StringIO()  # isatty() is False: no bar, only lines
    recorder = Recorder(tmp_path / "rec", progress=Progress(shown, every=2))
    passed = _delivered(recorder, 5)
    recorder.close()
    assert passed == ["next"] * 5  # recording never holds an event back
    lines = shown.getvalue().splitlines()
    events = tmp_path / "rec" / "events.jsonl"
    assert lines == [
        "recorded 2 events so far",
        "recorded 4 events so far",
        f"recorded 5 events into {events}",
    ]
    assert [json.loads(line)["event_id"] for line in events.read_text().splitlines()] == [
        f"Ev{n:04d}" for n in range(5)
    ]


def test_other_requests_are_not_counted_and_closing_twice_says_it_once(tmp_path: Path) -> None:
    shown = io.StringIO()
    recorder = Recorder(tmp_path / "rec", progress=Progress(shown, every=1))
    recorder.middleware({"type": "url_verification", "challenge": "x"}, lambda: None)
    recorder.close()
    recorder.close()
    assert shown.getvalue().splitlines() == [f"recorded 0 events into {tmp_path}/rec/events.jsonl"]
