"""A realistic pair of channels for the tool tests, and checks of HistoryView over them.

#checkout-eng (C1) holds an incident thread, a deploy bot, a file and unrelated chatter;
#people-ops (C2) holds text that must never reach a tool bound to C1.
"""

from __future__ import annotations

import json
from typing import Any

from chanctx import tools
from chanctx.cache import ChannelHistory
from chanctx.context import FileRef, Message, Names
from chanctx.tools import ChannelTools, ChannelView, HistoryView, ToolResult, read_context_output
from chanctx.tools._ranking import Hit
from chanctx.tools._search import search

T0 = 1_781_020_800  # 2026-06-09T16:00:00Z
C1, C2 = "C1CHECKOUT", "C2PEOPLEOPS"
NAMES = Names(
    users={
        "U1PRIYA": "Priya",
        "U2DEV": "Dev",
        "U3SAM": "Sam",
        "U4LEE": "Lee",
        "B1DEPLOY": "deploybot",
        "U9ZED": "Zed",
    },
    channels={C1: "checkout-eng", C2: "people-ops"},
)


def ts(offset: int, micros: int = 0) -> str:
    return f"{T0 + offset}.{micros:06d}"


# Roots carry no reply counters: as on the event stream, ChannelHistory counts the replies.
def _msg(channel: str, offset: int, user: str, text: str, **extra: object) -> Message:
    return Message.model_validate(
        {"channel": channel, "ts": ts(offset, 100), "user_id": user, "text": text, **extra}
    )


INCIDENT = ts(3_600, 100)  # the incident thread's root
FLAG_THREAD = ts(-86_400 * 2, 100)
GRAFANA = "F0GRAFANA01"
SECRET_FILE = "F0PAYROLL99"
SECRET_THREAD = ts(3_000, 100)
SECRET_MARKERS = ("payroll", "zebrafish", "salary", "Zed")  # words only C2 uses


def c1_messages() -> list[Message]:
    deploy = {"is_bot": True, "bot_id": "B1DEPLOY", "user_id": "B1DEPLOY"}
    incident = [
        (3_660, "U2DEV", "Looking at the dashboards now."),
        (3_720, "U3SAM", "Errors started right after the v2.30.4 rollout, around 17:00."),
        (
            3_900,
            "U2DEV",
            "Found it: the DB connection pool size was set to 5 in the last deploy (it used to "
            "be 50). Requests queue up and the gateway times out with a 502. See #9931.",
        ),
        (3_960, "U1PRIYA", "Rolling back to v2.30.3."),
        (4_200, "U1PRIYA", "Rollback done, error rate is back to normal. Postmortem tomorrow."),
    ]
    flag = [
        (-86_400 * 2 + 300, "U4LEE", "Flag is at 10% in staging, no errors so far."),
        (-86_400 * 2 + 900, "U2DEV", "Let's go to 50% on Monday if the metrics hold."),
    ]
    return [
        _msg(C1, -86_400 * 3, "U4LEE", "Lunch order for the offsite is in the sheet, add yours."),
        _msg(
            C1,
            -86_400 * 2,
            "U3SAM",
            "Proposal: ship the new payment provider behind the pay-v2 feature flag.",
            thread_ts=FLAG_THREAD,
        ),
        *[_msg(C1, off, user, text, thread_ts=FLAG_THREAD) for off, user, text in flag],
        _msg(C1, -3_600, "U4LEE", "CI is flaky again: test_refund_webhook times out on arm64."),
        _msg(C1, 0, "B1DEPLOY", "Deploy v2.30.4 of checkout-api to prod started by Sam.", **deploy),
        _msg(C1, 600, "B1DEPLOY", "Deploy v2.30.4 of checkout-api to prod finished.", **deploy),
        _msg(
            C1,
            3_600,
            "U1PRIYA",
            "Checkout is failing for about 20% of users, 502s from checkout-api :rotating_light:",
            thread_ts=INCIDENT,
        ),
        *[_msg(C1, off, user, text, thread_ts=INCIDENT) for off, user, text in incident],
        _msg(
            C1,
            4_300,
            "U2DEV",
            "",
            files=(
                FileRef(
                    artifact_id=GRAFANA,
                    media_type="image/png",
                    filename="grafana-502s.png",
                    title="checkout-api 502 rate",
                    byte_length=48_213,
                ),
            ),
        ),
        _msg(C1, 5_000, "U3SAM", "Who is on call this weekend? I swapped with Lee."),
    ]


def c2_messages() -> list[Message]:
    return [
        _msg(
            C2,
            3_000,
            "U9ZED",
            "Confidential: payroll salary adjustments for the zebrafish team land Friday.",
            thread_ts=SECRET_THREAD,
        ),
        _msg(
            C2,
            3_100,
            "U9ZED",
            "Zebrafish payroll sheet attached, do not forward.",
            thread_ts=SECRET_THREAD,
            files=(
                FileRef(artifact_id=SECRET_FILE, media_type="text/csv", filename="payroll.csv"),
            ),
        ),
        # Same instant as a C1 message: a ts alone never identifies the channel.
        _msg(C2, 3_900, "U9ZED", "Zebrafish salary bands pool review is moved to June."),
    ]


def build_history() -> ChannelHistory:
    history = ChannelHistory()
    for message in sorted(c1_messages() + c2_messages(), key=lambda m: float(m.ts)):
        history.record(message)
    return history


def tools_for(history: ChannelHistory | None = None, **options: Any) -> ChannelTools:
    """Tools bound to C1 over ``history`` (the realistic pair of channels by default)."""
    return ChannelTools(HistoryView(history or build_history(), C1), names=NAMES, **options)


def ok(result: ToolResult) -> dict[str, Any]:
    """The parsed JSON of a successful answer; channel_context's rows as dicts
    (``message_id``, ``when``, ``who``, ``text``, ``thread``, ``held``)."""
    assert not result.is_error, result.content
    parsed: dict[str, Any] = json.loads(result.content)
    if isinstance(parsed.get("results"), list):
        parsed["results"] = [
            {"message_id": row.pop("ts"), **row} for row in read_context_output(result.content)
        ]
    return parsed


def ranked(
    history: ChannelHistory | None = None,
    *,
    intent: str,
    authors: tuple[str, ...] = (),
    now: float | None = None,
    names: Names = NAMES,
    channel: str = C1,
    limit: int = 8,
) -> list[Hit]:
    """What channel_context ranks for ``intent``, with each hit's ranking signals."""
    scope = HistoryView(history or build_history(), channel).search_index()
    index = scope.index
    with index.lock:
        if scope.messages is not None:
            index.sync(scope.messages(), names)
        index.refresh(names)
        return search(
            index,
            intent=intent,
            authors=authors,
            since=None,
            names=names,
            now=now,
            limit=limit,
            per_thread=3,
        ).hits


def signals(hits: list[Hit]) -> dict[str, str]:
    """text -> the signals that ranked it."""
    return {hit.text: hit.signal for hit in hits}


_SENTENCES = (
    "The canary for checkout-api is at 5% and p99 latency is flat.",
    "I restarted the worker pool on node 3 but the queue is still growing",
    "Dashboards: error rate 0.2%, saturation fine, nothing paging.",
    "Can someone double-check the migration order before we run it on prod?",
    "Retrying the job with a longer timeout; if it fails again we roll back!",
)


def long_text(index: int, sentences: int) -> str:
    return " ".join(_SENTENCES[(index + k) % len(_SENTENCES)] for k in range(sentences))


LONG_THREAD = ts(10_000, 100)


def add_long_thread(history: ChannelHistory, replies: int = 120) -> list[Message]:
    """A busy C1 thread of long replies (for budget tests); returns its replies."""
    history.record(
        _msg(
            C1,
            10_000,
            "U3SAM",
            "Canary plan for checkout-api " + long_text(0, 6),
            thread_ts=LONG_THREAD,
        )
    )
    out = []
    for index in range(replies):
        reply = _msg(
            C1,
            10_001 + index * 7,
            ("U1PRIYA", "U2DEV", "U4LEE")[index % 3],
            long_text(index, 1 + index % 6),
            thread_ts=LONG_THREAD,
        )
        history.record(reply)
        out.append(reply)
    return out


# -- HistoryView over the data ------------------------------------------------------------------


def test_history_view_lists_every_message_of_its_channel_oldest_first() -> None:
    view = HistoryView(build_history(), C1)
    listed = view.messages()
    assert [m.ts for m in listed] == sorted((m.ts for m in c1_messages()), key=float)
    assert {m.channel for m in listed} == {C1}


def test_the_public_surface_imports_and_history_view_is_a_channel_view() -> None:
    for name in tools.__all__:
        assert hasattr(tools, name), name
    assert isinstance(HistoryView(ChannelHistory(), C1), ChannelView)


def test_history_view_reads_only_its_channel() -> None:
    view = HistoryView(build_history(), C1)
    assert view.get(SECRET_THREAD) is None
    lookup = view.thread(SECRET_THREAD)
    assert lookup.root is None and list(lookup.replies) == []
    incident = view.thread(INCIDENT)
    assert incident.root is not None and len(incident.replies) == 5
