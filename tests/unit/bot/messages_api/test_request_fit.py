"""Requests fitted before they are sent: a thread of 25 big text files, one of 25 large images,
and requests over 32 MB or 100 images all reach the fake Messages API valid, and what was left
out is said in the request."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.claude.session import SessionSettings
from chanctx.bot.messages_api.request_fit import BYTE_BUDGET, estimate_tokens, fit_request
from chanctx.bot.messages_api.request_rules import problems, request_bytes
from chanctx.bot.replay.offline import OfflineBot
from chanctx.context import default_counter

from tests.support.media_files import file_state, png, slack_file
from tests.support.slack_events import STATE, envelope, mention_pair, message, ts

START = float(ts(0).split(".")[0])
COUNT = default_counter("claude-sonnet-5").count


def thread_with_files(files: list[tuple[str, str, bytes, str]]) -> tuple[dict[str, Any], list]:
    """A world whose Slack serves ``files`` (id, name, bytes, type), and the envelopes of a thread
    in which each is shared, then a mention asking about them."""
    world = copy.deepcopy(STATE)
    world["files"] = {fid: file_state(fid, name, data, kind) for fid, name, data, kind in files}
    root = message(ts(1), "The incident files, one per reply")
    events = [envelope(root)]
    for number, (fid, name, data, kind) in enumerate(files):
        shared = message(
            ts(2 + number), f"file {number}", user="U2", thread_ts=root["ts"],
            subtype="file_share", files=[slack_file(fid, name, data, kind)],
        )  # fmt: skip
        events.append(envelope(shared))
    events += mention_pair(ts(40), "what do these files say?", thread_ts=root["ts"])
    return world, events


def run(world: dict[str, Any], events: list, tmp_path: Path) -> list[dict[str, Any]]:
    with OfflineBot(
        world,
        claude=True,
        data_dir=tmp_path,
        start_time=START,
        session_settings=SessionSettings(attach_media=True),
    ) as bot:
        for item in events:
            bot.dispatch(item)
        assert bot.anthropic is not None
        assert bot.anthropic.rejected == []
        (result,) = bot.runtime.runner.results
        assert result.error is None and result.reply
        return [r.body for r in bot.anthropic.requests if r.path == "/v1/messages"]


def texts_of(body: dict[str, Any]) -> list[str]:
    return [
        b.get("text", "")
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    ]


@pytest.mark.slow
def test_twenty_five_big_text_files_fit_the_window_and_say_what_was_left_out(
    tmp_path: Path,
) -> None:
    line = "Service payments-api logged timeout after 30 s calling ledger-db replica 3.\n"
    big = (line * 700).encode()  # ~53,000 characters, ~12,000 tokens each after the 40k cut
    files = [
        (f"FTXT{n:02d}", f"log-{n:02d}.txt", f"host {n}\n".encode() + big, "text/plain")
        for n in range(25)
    ]  # distinct bytes: the same file twice would be sent once
    bodies = run(*thread_with_files(files), tmp_path)
    first = bodies[0]
    assert problems(first) == []
    budget = int(200_000 * 0.8)
    assert estimate_tokens(first, COUNT) <= budget
    left_out = [t for t in texts_of(first) if "left out of this request" in t]
    kept = [t for t in texts_of(first) if t.startswith("[file log-")]
    assert left_out and kept  # as many as fit went, the rest are named
    assert len(left_out) + len(kept) == 25
    assert all("context window" in t for t in left_out)


@pytest.mark.slow
def test_twenty_five_images_over_2000_px_are_scaled_and_the_request_is_valid(
    tmp_path: Path,
) -> None:
    files = [
        (f"FIMG{n:02d}", f"shot-{n:02d}.png", png(3200, 2400, shade=n), "image/png")
        for n in range(25)
    ]
    bodies = run(*thread_with_files(files), tmp_path)
    first = bodies[0]
    images = [
        b for m in first["messages"] if isinstance(m["content"], list)
        for b in m["content"] if b.get("type") == "image"
    ]  # fmt: skip
    assert len(images) == 25
    assert problems(first) == []  # 2,000 px a side with more than 20 images: kept


def image_block(size: int) -> dict[str, Any]:
    data = base64.b64encode(png(8, 8) + b"\0" * size).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


@pytest.mark.slow
def test_a_request_over_32_mb_loses_its_largest_attachments_first() -> None:
    blocks = [image_block(4_000_000) for _ in range(9)] + [{"type": "text", "text": "q"}]
    request = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": blocks}]}
    assert request_bytes(request) > BYTE_BUDGET
    notes = fit_request(request, count=COUNT, token_budget=10**9)
    assert request_bytes(request) <= BYTE_BUDGET
    assert notes and all("larger than 32 MB" in n for n in notes)
    assert request["messages"][0]["content"][-1] == {"type": "text", "text": "q"}  # words kept


def test_more_than_100_images_keep_the_newest_100() -> None:
    blocks = [image_block(0) for _ in range(103)]
    request = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": blocks}]}
    notes = fit_request(request, count=COUNT, token_budget=10**9)
    assert len(notes) == 3
    content = request["messages"][0]["content"]
    assert [b["type"] for b in content[:3]] == ["text"] * 3
    assert all(b["type"] == "image" for b in content[3:])
    assert json.dumps(content).count("at most 100 images") == 3
