"""Memory under load: 5,000 mentions answered by a real `chanctx run --http` process.

The bot runs as its own process against the loopback fakes (the offline model answers), and
every mention arrives as Slack sends it (a signed `message` and a signed `app_mention`). RSS
is read from /proc after each 1,000 answers: what matters is the growth after the first 1,000
(warm caches), which must stay under 20 MB. Baseline in the same run: the RSS of the process
right after start-up.

    python -m bench.durable [--mentions 5000] [--no-write]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from bench._results import write_section

TEAM, CHANNEL, BOT_USER, BOT_ID = "T0BENCH001", "C0BENCH001", "U0BOTBENCH", "B0BOTBENCH"
START = 1_781_020_800
STATE: dict[str, Any] = {
    "auth": {"team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "user": "chanctx"},
    "channels": {CHANNEL: {"id": CHANNEL, "name": "load"}},
    "users": {"U1": {"id": "U1", "name": "sam", "profile": {"display_name": "Sam"}}},
    "history": {},
}


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def pair(n: int) -> list[dict[str, Any]]:
    ts = f"{START + n}.000100"
    text = f"<@{BOT_USER}> question {n}: did deploy {n % 97} change the pool size?"
    common = {"channel": CHANNEL, "user": "U1", "text": text, "ts": ts, "event_ts": ts}
    events = [
        {"type": "message", "channel_type": "channel", **common},
        {"type": "app_mention", **common},
    ]
    return [
        {"type": "event_callback", "team_id": TEAM, "api_app_id": "A0BENCH", "event": event,
         "event_id": f"Ev{n:07d}{i}", "event_time": START + n,
         "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}
        for i, event in enumerate(events)
    ]  # fmt: skip


def answered(slack: FakeSlackAPI) -> int:
    return sum(1 for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER)


def run(mentions: int) -> tuple[list[tuple[int, int]], int, float]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bot = BotProcess(Path(tmp) / "data", slack.url, claude.url)
        bot.start()
        assert bot.process is not None
        start_rss = rss_kb(bot.process.pid)
        samples: list[tuple[int, int]] = []
        started = time.monotonic()
        try:
            for n in range(mentions):
                for envelope in pair(n):
                    if envelope["event"]["type"] == "message":  # Slack has what it sent
                        slack.mirror_event(envelope["event"])
                    if post_signed(bot.url, envelope) != 200:
                        raise RuntimeError(f"delivery {n} failed: {bot.log_tail()}")
                if (n + 1) % 1_000 == 0:
                    while answered(slack) < n + 1:
                        time.sleep(0.05)
                    samples.append((n + 1, rss_kb(bot.process.pid)))
                    print(f"{n + 1} answered, RSS {samples[-1][1] / 1024:.1f} MB", flush=True)
        finally:
            seconds = time.monotonic() - started
            bot.stop()
        return samples, start_rss, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mentions", type=int, default=5_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    samples, start_rss, seconds = run(args.mentions)
    first = dict(samples)[1_000]
    growth = (samples[-1][1] - first) / 1024
    rows = "\n".join(f"| {n:,} | {kb / 1024:.1f} MB |" for n, kb in samples)
    body = (
        f"`python -m bench.durable`: {args.mentions:,} mentions (a signed `message` and "
        "`app_mention` each) to a real `chanctx run --http` process over loopback, answered by "
        "the offline model through the fake Messages API and posted to the fake Slack; RSS read "
        f"from /proc after every 1,000 answers.\n\n| answered | RSS |\n|---:|---:|\n"
        f"| 0 (after start-up) | {start_rss / 1024:.1f} MB |\n{rows}\n\n"
        f"Growth after the first 1,000 answers: **{growth:+.1f} MB** (bar: under 20 MB). "
        f"{args.mentions:,} mentions in {seconds:.0f} s ({args.mentions / seconds:.0f} answered "
        "per second, 4 answer workers, every question and answer fsynced to the turn journal)."
    )
    print(body)
    if not args.no_write:
        write_section("Memory under load (durable answering)", body)
    return 0 if growth < 20 else 1


if __name__ == "__main__":
    sys.exit(main())
