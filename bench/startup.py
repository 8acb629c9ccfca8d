"""``python -m bench startup``: how long a restarted ``chanctx run --http`` takes from spawn to
ready and to its first answers, on an empty store and on a stored one.

Each start is a real process against the loopback fakes, on the same data dir each time. Per
start one of two first answers is timed from spawn: a query API question for a word only the
largest channel's oldest message holds (does the first answer cover everything stored?), or a
mention answered by Claude (the fake Messages API) and posted to the fake Slack. Two builds of
the same code, started in turn so the machine's load falls on both alike:

* ``deferred``: chanctx as it is (the anthropic SDK imported off the start path,
  ``bot/messages_api/sdk.py``);
* ``eager``: the same process with the SDK imported before chanctx starts, as chanctx did before
  (a ``sitecustomize`` on ``PYTHONPATH`` imports it first).

The interpreter's own start (``python -c pass``) and ``python -c "import anthropic"`` are timed
in the same run, so the numbers can be read as ratios on a machine whose load varies.

    python -m bench startup [--messages 1000000] [--repeats 5] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import BackfillCursor, CursorSaved, SqliteChannelStore
from chanctx.cache.channel_store.bulk import message_row, post_rows
from tqdm import tqdm

from bench._process import BotProcess, post_signed
from bench._results import write_section
from bench._served_process import BOT_USER, KEY, ask, ready_status, slack_state
from bench.store import TEAM, FastCorpus, channel_id

__all__ = ["main"]

BUILDS = ("deferred", "eager")
EAGER = "import anthropic  # the SDK before chanctx, as chanctx imported it before\n"
LARGEST, SMALL = channel_id(0), channel_id(1)


def probe_word(channel: str) -> str:
    return f"oldestfact{channel.lower()}"


def fill(data_dir: Path, messages: int) -> float:
    """``messages`` in two channels (all but 10,000 in the first), through the bulk writer, each
    with the "history" cursor an import leaves; seconds it took."""
    store = SqliteChannelStore(data_dir)
    started = time.perf_counter()
    try:
        with tqdm(total=messages, unit="msg", desc="fill", disable=None) as bar:
            for seed, (channel, size) in enumerate(((LARGEST, messages - 10_000), (SMALL, 10_000))):
                oldest: str | None = None
                for batch in FastCorpus(seed=seed).messages(channel, size):
                    if oldest is None:
                        oldest = batch[0].ts
                        text = f"{batch[0].text} {probe_word(channel)}"
                        batch[0] = batch[0].model_copy(update={"text": text})
                    rows = [
                        message_row(m.ts, thread_ts=m.thread_ts, user_id=m.user_id, text=m.text)
                        for m in batch
                    ]
                    post_rows(store, TEAM, channel, rows)
                    bar.update(len(batch))
                cursor = BackfillCursor(oldest_ts=oldest, complete=True, updated=time.time())
                store.write([CursorSaved(TEAM, channel, "history", cursor)])
    finally:
        store.close()
    return time.perf_counter() - started


def mention(number: int, channel: str) -> tuple[str, list[dict[str, Any]]]:
    """A mention as Slack sends it (a message event and an app_mention event); its ts."""
    at = f"{1_900_000_000 + number}.000100"
    text = f"<@{BOT_USER}> what did we decide about the deploy?"
    message = {
        "type": "message", "channel": channel, "channel_type": "channel", "user": "U0000PRIYA",
        "text": text, "ts": at, "event_ts": at,
    }  # fmt: skip
    app_mention = {
        "type": "app_mention", "channel": channel, "user": "U0000PRIYA", "text": text, "ts": at,
        "event_ts": at,
    }  # fmt: skip
    return at, [
        envelope(number, kind, event) for kind, event in (("m", message), ("a", app_mention))
    ]


def envelope(number: int, kind: str, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "event_callback", "team_id": TEAM, "api_app_id": "A0STARTUP", "event": event,
        "event_id": f"EvSTARTUP{number:06d}{kind}", "event_time": int(float(event["ts"])),
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }  # fmt: skip


def answered(slack: FakeSlackAPI, channel: str, anchor: str) -> bool:
    return any(
        m.get("user") == BOT_USER and m.get("thread_ts") == anchor for m in slack.messages(channel)
    )


def one_start(
    bot: BotProcess, slack: FakeSlackAPI, first: str, number: int
) -> tuple[float, float, bool]:
    """Start the bot; (seconds from spawn to /readyz 200, to the first answer, whether that
    answer holds what it should). Stops it afterwards."""
    base = bot.url.removesuffix("/slack/events")
    spawned = time.perf_counter()
    bot.start(timeout=600)
    while ready_status(base) != 200:
        if time.perf_counter() - spawned > 600:
            raise RuntimeError(f"not ready in 600 s: {bot.log_tail()}")
        time.sleep(0.01)
    ready = time.perf_counter() - spawned
    try:
        if first == "query":
            body = json.loads(ask(base, LARGEST, f"what about {probe_word(LARGEST)}?")[1])
            return (
                ready,
                time.perf_counter() - spawned,
                probe_word(LARGEST) in json.dumps(body["chunks"]),
            )
        at, pair = mention(number, LARGEST)
        slack.mirror_event(pair[0]["event"])
        if not all(post_signed(bot.url, envelope) == 200 for envelope in pair):
            raise RuntimeError(f"the mention was refused: {bot.log_tail()}")
        while not answered(slack, LARGEST, at):
            if time.perf_counter() - spawned > 600:
                raise RuntimeError(f"no answer in 600 s: {bot.log_tail()}")
            time.sleep(0.01)
        return ready, time.perf_counter() - spawned, True
    finally:
        bot.stop()


def interpreter(code: str, repeats: int) -> float:
    """Median seconds ``python -c code`` takes from spawn to exit."""
    took = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        took.append(time.perf_counter() - started)
    return statistics.median(took)


Samples = dict[tuple[str, str, str], list[tuple[float, float, bool]]]


def build_env(root: Path, build: str) -> dict[str, str]:
    """The bot's environment for ``build``. Bytecode is cached (in ``root``) as an installed
    chanctx has it: pip compiles a wheel's modules when it installs them, but an editable
    checkout under ``PYTHONDONTWRITEBYTECODE`` would compile every chanctx module again at
    every start (about 230 modules, seconds on a loaded machine)."""
    env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(root / "pycache")}
    if build == "eager":
        env["PYTHONPATH"] = str(root / "eager")
    return env


def measure(root: Path, messages: int, repeats: int) -> tuple[Samples, float]:
    """Every (store, build, first answer) ``repeats`` times, the builds taking turns, after one
    unmeasured start of each build that fills the bytecode cache."""
    eager = root / "eager"
    eager.mkdir()
    (eager / "sitecustomize.py").write_text(EAGER)
    keys = root / "keys.json"
    keys.write_text(json.dumps({KEY: "*"}))
    samples: Samples = {}
    filled = 0.0
    number = 0
    for store in ("empty", "stored"):
        data = root / store / "data"
        data.mkdir(parents=True)
        if store == "stored":
            print(f"filling {messages:,} messages", flush=True)
            filled = fill(data, messages)
        with FakeSlackAPI(slack_state([LARGEST, SMALL])) as slack, FakeAnthropicAPI() as claude:
            rounds = [(False, first, build) for first in ("mention",) for build in BUILDS]
            rounds *= store == "empty"  # the cache is filled once, on the first store
            rounds += [
                (True, first, build)
                for _ in range(repeats)
                for first in ("query", "mention")
                for build in BUILDS
            ]
            for measured, first, build in rounds:
                bot = BotProcess(
                    data, slack.url, claude.url, extra_args=("--api-keys", str(keys)),
                    env=build_env(root, build),
                )  # fmt: skip
                number += 1
                sample = one_start(bot, slack, first, number)
                if measured:
                    samples.setdefault((store, build, first), []).append(sample)
                print(
                    f"{store} {build} {first}{'' if measured else ' (unmeasured)'}: {sample}",
                    flush=True,
                )
    return samples, filled


def report(samples: Samples, messages: int, repeats: int, baselines: dict[str, float]) -> str:
    def median(store: str, build: str, first: str, at: int) -> float:
        return statistics.median(s[at] for s in samples[(store, build, first)])

    lines = [
        "`python -m bench startup`: a restarted `chanctx run --http` (`--api-keys`, the loopback",
        f"fakes), medians of {repeats} starts each, seconds from spawn. Stores: empty, and",
        f"{messages:,} messages in two channels (one of {messages - 10_000:,}) filled through the",
        "bulk writer. The first answer is either a query API question for a word only the largest",
        "channel's oldest message holds (does the first answer cover everything stored?) or a",
        "mention answered through Claude (the fake Messages API) and posted in its thread.",
        '"eager" is the same code with the anthropic SDK imported before chanctx starts, as',
        "chanctx did before; the builds took turns, so the load fell on both alike. Bytecode is",
        "cached as an installed chanctx has it (one unmeasured start of each build fills it).",
        "",
        "| store | build | spawn to /readyz 200 | spawn to first query answer | "
        "spawn to first mention answered |",
        "|---|---|---:|---:|---:|",
    ]
    for store in ("empty", "stored"):
        for build in BUILDS:
            lines.append(
                f"| {store} | {build} | {median(store, build, 'query', 0):.2f} s | "
                f"{median(store, build, 'query', 1):.2f} s | "
                f"{median(store, build, 'mention', 1):.2f} s |"
            )
    lines += ["", "Deferred over eager, the same run (below 1: faster):", ""]
    lines += ["| store | /readyz 200 | first query answer | first mention answered |"]
    lines += ["|---|---:|---:|---:|"]
    for store in ("empty", "stored"):
        ratios = [
            median(store, "deferred", first, at) / median(store, "eager", first, at)
            for first, at in (("query", 0), ("query", 1), ("mention", 1))
        ]
        lines.append(f"| {store} | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
    found = all(s[2] for k, v in samples.items() if k[0] == "stored" and k[2] == "query" for s in v)
    lines += [
        "",
        f"The interpreter alone (`python -c pass`): {baselines['pass']:.2f} s; "
        f'`python -c "import anthropic"`: {baselines["anthropic"]:.2f} s (medians of {repeats}, '
        "the same run). The oldest message was "
        + ("found by every first query answer." if found else "NOT found by some first answers."),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench startup")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.messages <= 10_000:
        parser.error(f"--messages must be more than 10,000, got {args.messages}")
    with tempfile.TemporaryDirectory(prefix="chanctx-startup-") as tmp:
        samples, filled = measure(Path(tmp), args.messages, args.repeats)
    print(f"fill: {args.messages / filled:,.0f} messages/s", flush=True)
    baselines = {
        "pass": interpreter("pass", args.repeats),
        "anthropic": interpreter("import anthropic", args.repeats),
    }
    body = report(samples, args.messages, args.repeats, baselines)
    if not args.no_write:
        write_section("Restart to ready", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
