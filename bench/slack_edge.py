"""The Slack edge: API calls per mention, ack latency during an answer, intake throughput.

Each number is measured against a baseline in the same run:
- API calls: the demo fixture replayed through chanctx, then 20 more mentions in its incident
  thread (steady state), against a bot that re-fetches the thread with conversations.replies on
  every mention (what popular Slack LLM bots do), measured on the same fake Slack server.
- Ack latency: signed HTTP deliveries over loopback while a 1-second answer is in progress,
  against the same app answering before it acks.
- Intake: events per second through the real Bolt dispatch, against a bot that fetches the
  thread for every reply event it receives.

Run: python -m bench.slack_edge
"""

from __future__ import annotations

import copy
import json
import math
import statistics
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.core.turns import Answer, Turn
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from bench._demo import demo_mention, thread_turn
from bench._results import write_section

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
READS = ("conversations.history", "conversations.replies", "conversations.info", "users.info")
SECRET = "bench-signing-secret-not-real"
ANSWER_SECONDS = 1.0
REPLIES_PER_MINUTE = 1  # Slack's conversations.replies limit for new non-Marketplace apps
PAGE = 15  # ... and its page size


def _reads(counts: dict[str, int]) -> int:
    return sum(counts.get(method, 0) for method in READS)


def _extra_mentions(fixture_envelopes: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` more mentions in the demo's incident thread, each after a new reply."""
    template = demo_mention(fixture_envelopes)
    base = int(float(template["event"]["ts"])) + 600
    return [
        envelope
        for index in range(count)
        for envelope in thread_turn(
            template,
            key=f"BENCH{index:03d}",
            reply_at=f"{base + 60 * index + 30}.000{index:03d}",
            reply_user="U02BOBMART",
            reply_text=f"status update {index}",
            ask_at=f"{base + 60 * index + 45}.000{index:03d}",
            ask_user="U02BOBMART",
            question="anything new?",
        )
    ]


def api_calls() -> tuple[list[str], dict[str, float]]:
    fixture = load_fixture(DEMO)
    steady_count = 20
    with OfflineBot(
        copy.deepcopy(fixture.slack_api), start_time=fixture.envelopes[0]["event_time"]
    ) as bot:
        mentions_seen = 0
        cold_reads = None
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
            if envelope["event"]["type"] == "app_mention":
                mentions_seen += 1
                if mentions_seen == 1:
                    cold_reads = _reads(bot.slack.call_counts())
        demo_reads = _reads(bot.slack.call_counts())
        before = _reads(bot.slack.call_counts())
        for envelope in _extra_mentions(fixture.envelopes, steady_count):
            bot.dispatch(envelope)
        steady_reads = _reads(bot.slack.call_counts()) - before
        answered = len(bot.runtime.runner.results)

        # Baseline on the same server: re-fetch the whole thread on every mention.
        client = WebClient(token="xoxb-bench-not-a-secret", base_url=bot.slack.url)
        calls_before = bot.slack.call_counts().get("conversations.replies", 0)
        baseline_pages = []
        for result in bot.runtime.runner.results:
            cursor, pages = None, 0
            while True:
                page = client.conversations_replies(
                    channel=result.turn.channel, ts=result.turn.thread_ts, limit=PAGE, cursor=cursor
                )
                pages += 1
                cursor = (page.get("response_metadata") or {}).get("next_cursor")
                if not cursor:
                    break
            baseline_pages.append(pages)
        baseline_calls = bot.slack.call_counts().get("conversations.replies", 0) - calls_before
    per_mention_baseline = baseline_calls / answered
    # Under 1 call/minute, every page after the first of each mention waits a minute.
    wait_minutes = statistics.mean(max(p - 1, 0) / REPLIES_PER_MINUTE for p in baseline_pages)
    rows = [
        "| | chanctx | re-fetch baseline |",
        "|---|---:|---:|",
        f"| first mention after a start (cold) | {cold_reads} reads | {baseline_pages[0]} conversations.replies |",
        f"| whole demo fixture, 2 mentions | {demo_reads} reads | {sum(baseline_pages[:2])} conversations.replies |",
        f"| steady state, per mention ({steady_count} mentions in a {30 + steady_count}-reply thread) | "
        f"**{steady_reads / steady_count:.2f}** | {sum(baseline_pages[2:]) / steady_count:.2f} |",
        f"| all {answered} mentions | {demo_reads + steady_reads} reads | {baseline_calls} conversations.replies |",
    ]
    text = [
        "Slack Web API *reads* (conversations.*, users.info) per mention. Writes (the :eyes: reaction,",
        "the reply) are the same for both and not counted. The baseline re-fetches the thread with",
        f"`conversations.replies` ({PAGE} messages a page, as Slack serves new non-Marketplace apps).",
        "",
        *rows,
        "",
        f"Under Slack's 2025 limit of {REPLIES_PER_MINUTE} `conversations.replies` call per minute, the baseline makes each",
        f"mention wait **{wait_minutes:.1f} minutes** on average just to page through the thread; chanctx waits for none.",
        "Cold start costs one `conversations.history` plus one `users.info` per person and one",
        "`conversations.info`, each cached for an hour.",
    ]
    return text, {"steady": steady_reads / steady_count, "baseline": per_mention_baseline}


class _SlowAnswer:
    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        time.sleep(ANSWER_SECONDS)
        return Answer(text="ok")


class _InlineRuntime(Runtime):
    """The baseline: answer inside the listener, before Slack gets its ack."""

    def trigger(self, turn: Turn, event_id: str | None = None) -> bool:
        self.answer(turn)
        return True


def _post(url: str, envelope: dict[str, Any]) -> float:
    body = json.dumps(envelope)
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(
            timestamp=stamp, body=body
        ),
    }
    start = time.perf_counter()
    with urllib.request.urlopen(
        urllib.request.Request(url, data=body.encode(), headers=headers), timeout=30
    ):
        pass
    return (time.perf_counter() - start) * 1000


def _ack_latencies(inline: bool) -> list[float]:
    fixture = load_fixture(DEMO)
    with (
        OfflineBot(
            copy.deepcopy(fixture.slack_api),
            signing_secret=SECRET,
            responder=_SlowAnswer(),
            start_time=fixture.envelopes[0]["event_time"],
            runtime_class=_InlineRuntime if inline else Runtime,
        ) as bot,
        BackgroundServer(build_asgi_app(bot.app)) as server,
    ):
        envelopes = [e for e in fixture.envelopes]
        mentions = [e for e in envelopes if e["event"]["type"] == "app_mention"]
        others = [e for e in envelopes if e["event"]["type"] != "app_mention"]
        for envelope in others:
            bot.slack.mirror_event(envelope["event"])
        latencies: list[float] = []
        # One mention starts a 1 s answer; meanwhile every other event is delivered.
        worker = threading.Thread(target=lambda: latencies.append(_post(server.url, mentions[0])))
        worker.start()
        time.sleep(0.05)
        during = [_post(server.url, e) for e in others]
        worker.join()
        bot.runtime.runner.drain(30)
        mention_ack = latencies[0]
    return [mention_ack, *during]


def ack_latency() -> tuple[list[str], dict[str, float]]:
    ours = _ack_latencies(inline=False)
    base = _ack_latencies(inline=True)

    def p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]

    text = [
        "Signed HTTP deliveries over loopback to the ASGI app on uvicorn (`chanctx.bot.server`) while an answer that takes",
        f"{ANSWER_SECONDS:.0f} s is in progress (the demo's {len(ours) - 1} other events, sent during the answer). Baseline:",
        "the same app answering inside the listener, before the ack (as handlers that do the work before",
        "acking do; Slack retries after 3 s).",
        "",
        "| | chanctx (ms) | answer-before-ack baseline (ms) |",
        "|---|---:|---:|",
        f"| ack of the mention itself | **{ours[0]:.1f}** | {base[0]:.1f} |",
        f"| other deliveries during the answer, p50 | {p(ours[1:], 0.5):.1f} | {p(base[1:], 0.5):.1f} |",
        f"| other deliveries during the answer, p99 | {p(ours[1:], 0.99):.1f} | {p(base[1:], 0.99):.1f} |",
    ]
    return text, {"mention_ack_ms": ours[0], "baseline_mention_ack_ms": base[0]}


def intake_rate() -> tuple[list[str], dict[str, float]]:
    fixture = load_fixture(DEMO)
    root = "1781900000.000100"
    events = []
    for index in range(2_000):
        at = f"{1781900001 + index}.000{index % 1000:03d}"
        events.append(
            {
                "type": "event_callback",
                "team_id": "T0DEMO0001",
                "event_id": f"EvRATE{index:06d}",
                "event_time": int(float(at)),
                "event": {
                    "type": "message",
                    "channel": "C0INCIDENT",
                    "user": "U01ALICE00",
                    "text": f"reply number {index} with some words",
                    "ts": at,
                    "event_ts": at,
                    "thread_ts": root,
                    "channel_type": "channel",
                },
            }
        )
    with OfflineBot(copy.deepcopy(fixture.slack_api), start_time=1781900000) as bot:
        bot.slack.add_message(
            "C0INCIDENT", {"type": "message", "user": "U01ALICE00", "text": "root", "ts": root}
        )
        start = time.perf_counter()
        for envelope in events:
            bot.app.dispatch(_socket_request(envelope))
        ours = len(events) / (time.perf_counter() - start)
        client = WebClient(token="xoxb-bench-not-a-secret", base_url=bot.slack.url)
        sample = events[:200]
        start = time.perf_counter()
        for envelope in sample:  # the baseline: fetch the thread on every reply event
            bot.slack.add_message(
                "C0INCIDENT", {k: v for k, v in envelope["event"].items() if k != "channel"}
            )
            client.conversations_replies(channel="C0INCIDENT", ts=root, limit=PAGE)
        baseline = len(sample) / (time.perf_counter() - start)
    text = [
        f"Message events through the real Bolt dispatch (Socket Mode form, intake into the caches), {len(events):,}",
        f"thread replies: **{ours:,.0f} events/s**. Baseline, a bot that calls `conversations.replies` for every",
        f"reply event (first page only, loopback fake, no rate limit): {baseline:,.0f} events/s",
        f"({ours / baseline:.0f}x fewer). Against the real Slack limit of {REPLIES_PER_MINUTE}/minute that baseline manages one event a minute.",
    ]
    return text, {"events_per_s": ours, "baseline_events_per_s": baseline}


def _socket_request(envelope: dict[str, Any]) -> Any:
    from slack_bolt.request import BoltRequest

    return BoltRequest(body=json.dumps(envelope), mode="socket_mode")


def main() -> None:
    sections = []
    for title, run in (
        ("API calls per mention", api_calls),
        ("Ack latency during an answer", ack_latency),
        ("Intake throughput", intake_rate),
    ):
        text, numbers = run()
        print(title, numbers, flush=True)
        sections.append(f"### {title}\n\n" + "\n".join(text))
    write_section("Slack edge", "`python -m bench.slack_edge`\n\n" + "\n\n".join(sections))


if __name__ == "__main__":
    main()
