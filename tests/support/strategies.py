"""Hypothesis strategies for chanctx's models: realistic chat text, threads, timelines."""

from __future__ import annotations

from chanctx.context import FileRef, Message, Reaction
from hypothesis import strategies as st

BASE = 1_760_000_000  # an arbitrary moment in 2025

_VOCABULARY = (
    "deploy rollback the is failing on prod we and logs error 502 why ok 👍 thanks "
    "<@U1> <#C2|ops> <https://status.example.com|status> &amp; café 数据 retry p99 "
    "latency canary db migration hotfix"
)
_words = st.sampled_from(_VOCABULARY.split())
_ender = st.sampled_from([".", "!", "?", "", "\n"])


@st.composite
def sentences(draw: st.DrawFn) -> str:
    words = draw(st.lists(_words, min_size=1, max_size=25))
    return " ".join(words) + draw(_ender)


chat_text = st.lists(sentences(), min_size=0, max_size=12).map(" ".join)
user_ids = st.sampled_from(["U1", "U2", "U3", "B9"])


def ts_at(seconds: int, micros: int = 0) -> str:
    return f"{BASE + seconds}.{micros:06d}"


@st.composite
def replies_for(draw: st.DrawFn, root_ts: str, max_size: int = 60) -> list[Message]:
    gaps = draw(st.lists(st.integers(1, 4_000), min_size=0, max_size=max_size))
    replies, at = [], int(float(root_ts)) - BASE
    for index, gap in enumerate(gaps):
        at += gap
        replies.append(
            Message(
                channel="C1",
                ts=ts_at(at, index % 1000),
                thread_ts=root_ts,
                user_id=draw(user_ids),
                text=draw(chat_text),
            )
        )
    return replies


@st.composite
def threads(draw: st.DrawFn, max_replies: int = 60) -> tuple[Message, list[Message]]:
    root_ts = ts_at(draw(st.integers(0, 10_000)))
    replies = draw(replies_for(root_ts, max_replies))
    root = Message(
        channel="C1",
        ts=root_ts,
        thread_ts=root_ts if replies else None,
        user_id=draw(user_ids),
        text=draw(chat_text),
        reply_count=len(replies),
    )
    return root, replies


reactions = st.lists(
    st.builds(
        Reaction,
        name=st.sampled_from(["eyes", "white_check_mark", "+1", "fire", "tada"]),
        count=st.integers(1, 9),
    ),
    max_size=4,
    unique_by=lambda r: r.name,
).map(tuple)

files = st.lists(
    st.builds(
        FileRef,
        artifact_id=st.from_regex(r"F[A-Z0-9]{6}", fullmatch=True),
        media_type=st.sampled_from(["image/png", "application/pdf", "text/plain"]),
        filename=st.sampled_from(["graph.png", "runbook.pdf", None]),
        byte_length=st.integers(0, 10_000_000),
    ),
    max_size=2,
).map(tuple)


@st.composite
def timelines(draw: st.DrawFn, max_size: int = 80) -> list[Message]:
    offsets = draw(st.lists(st.integers(0, 200_000), min_size=1, max_size=max_size, unique=True))
    return [
        Message(
            channel="C1",
            ts=ts_at(offset),
            user_id=draw(user_ids),
            text=draw(chat_text),
            reactions=draw(reactions),
            files=draw(files),
        )
        for offset in sorted(offsets)
    ]
