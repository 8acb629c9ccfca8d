"""Media in Claude sessions, end to end: bytes sent once, dedup across restarts, re-attachment."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

from chanctx.bot.claude.session import SessionSettings
from chanctx.bot.replay.offline import OfflineBot
from chanctx.manifest_store import ATTACHMENT_MANIFEST, SessionStore, rebuild

from tests.support.media_files import file_state, pdf_bytes, png, slack_file
from tests.support.slack_events import STATE, envelope, mention_pair, message, ts

GRAPH = png(64, 48, shade=10)
OTHER = png(32, 32, shade=200)
START = float(ts(0).split(".")[0])


def state() -> dict[str, Any]:
    world = copy.deepcopy(STATE)
    world["files"] = {
        "F1GRAPH": file_state("F1GRAPH", "graph.png", GRAPH),
        "F2REUP": file_state("F2REUP", "graph-again.png", GRAPH),  # the same bytes, a new id
        "F3OTHER": file_state("F3OTHER", "other.png", OTHER),
    }
    return world


def tool_use(call_id: str, **tool_input: Any) -> dict[str, Any]:
    return {
        "id": f"msg_{call_id}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [
            {"type": "tool_use", "id": call_id, "name": "channel_messages", "input": tool_input}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def answer(text: str) -> dict[str, Any]:
    return {
        "id": f"msg_{abs(hash(text))}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def seed_thread(bot: OfflineBot) -> str:
    root = message(
        ts(1),
        "Checkout errors: see the graph",
        files=[slack_file("F1GRAPH", "graph.png", GRAPH)],
        subtype="file_share",
    )
    bot.dispatch(envelope(root))
    bot.dispatch(
        envelope(
            message(
                ts(2),
                "Same graph again",
                user="U2",
                thread_ts=root["ts"],
                subtype="file_share",
                files=[slack_file("F2REUP", "graph-again.png", GRAPH)],
            )
        )
    )
    bot.dispatch(
        envelope(
            message(
                ts(3),
                "Unrelated chart",
                user="U2",
                subtype="file_share",
                files=[slack_file("F3OTHER", "other.png", OTHER)],
            )
        )
    )
    return str(root["ts"])


def image_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == "image":
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body.get("messages"))
    return found


def last_body(bot: OfflineBot) -> dict[str, Any]:
    assert bot.anthropic is not None
    return [r.body for r in bot.anthropic.requests if r.path == "/v1/messages"][-1]


def ask(bot: OfflineBot, at: float, thread_ts: str, text: str) -> None:
    for item in mention_pair(ts(at), text, thread_ts=thread_ts):
        bot.dispatch(item)


def test_the_same_image_asked_twice_and_reuploaded_is_sent_once(tmp_path: Path) -> None:
    cassette = [
        tool_use("t1", media_artifact_id="F1GRAPH"),
        answer("The graph shows a spike."),
        tool_use("t2", media_artifact_id="F1GRAPH"),
        answer("Same graph as before."),
        tool_use("t3", media_artifact_id="F2REUP"),
        answer("That is the same image."),
    ]
    with OfflineBot(
        state(), claude=True, cassette=cassette, data_dir=tmp_path, start_time=START
    ) as bot:
        thread_ts = seed_thread(bot)
        ask(bot, 10, thread_ts, "what does the graph show?")
        ask(bot, 20, thread_ts, "look at the graph again")
        ask(bot, 30, thread_ts, "and the re-uploaded one?")
        images = image_blocks(last_body(bot))
        assert len(images) == 1  # the whole conversation holds the bytes once
        assert base64.b64decode(images[0]["source"]["data"]) == GRAPH
        sent_text = json.dumps(last_body(bot))
        assert sent_text.count("was already attached at turn 1") == 2  # id match, then hash match
        errors = [c for r in bot.runtime.runner.results for c in r.tool_calls if c.is_error]
        assert errors == []


def test_a_restart_keeps_the_dedup(tmp_path: Path) -> None:
    first = [tool_use("t1", media_artifact_id="F1GRAPH"), answer("A spike at 16:05.")]
    with OfflineBot(
        state(), claude=True, cassette=first, data_dir=tmp_path, start_time=START
    ) as bot:
        thread_ts = seed_thread(bot)
        ask(bot, 10, thread_ts, "what does the graph show?")
    log = SessionStore(tmp_path).open(SessionStore(tmp_path).keys()[0])
    assert ATTACHMENT_MANIFEST in rebuild(log.entries()).custom  # persisted with the turn

    again = [tool_use("t2", media_artifact_id="F2REUP"), answer("Already seen.")]
    with OfflineBot(
        state(), claude=True, cassette=again, data_dir=tmp_path, start_time=START + 60
    ) as bot:
        seed_thread(bot)
        ask(bot, 40, thread_ts, "and this upload?")
        body = last_body(bot)
        assert len(image_blocks(body)) == 1  # turn 1's image, from the log; nothing new
        assert "was already attached at turn 1" in json.dumps(body["messages"][-1])


def test_after_compaction_only_this_threads_media_comes_back_with_the_preamble(
    tmp_path: Path,
) -> None:
    cassette = [
        tool_use("t1", media_artifact_id="F1GRAPH"),
        answer("A spike."),
        tool_use("t2", media_artifact_id="F3OTHER"),
        answer("Another chart."),
    ]
    settings = SessionSettings(context_window=3_000, compaction_threshold=0.5, keep_turns=1)
    with OfflineBot(
        state(),
        claude=True,
        cassette=cassette,
        data_dir=tmp_path,
        start_time=START,
        session_settings=settings,
    ) as bot:
        thread_ts = seed_thread(bot)
        ask(bot, 10, thread_ts, "what does the graph show?")
        ask(bot, 20, thread_ts, "and the other chart?")
        ask(bot, 30, thread_ts, "summarize please")  # after the compaction
        assert bot.anthropic is not None
        bodies = [r.body for r in bot.anthropic.requests if r.path == "/v1/messages"]
        # The turn's first request: its newest message is the question.
        first_of_turn = next(
            b for b in bodies if "summarize please" in json.dumps(b["messages"][-1])
        )
        new_message = first_of_turn["messages"][-1]["content"]
        texts = [b.get("text", "") for b in new_message if b.get("type") == "text"]
        preambles = [
            t for t in texts if t.startswith("[Post-compaction context recovery: re-attaching")
        ]
        assert preambles == [
            "[Post-compaction context recovery: re-attaching 1 media items from this thread]"
        ]
        reattached = [b for b in new_message if b.get("type") == "image"]
        assert [base64.b64decode(b["source"]["data"]) for b in reattached] == [GRAPH]  # not OTHER


def test_a_long_text_file_is_cut_and_says_so() -> None:
    from chanctx.bot.claude.session_media import MAX_TEXT_CHARS, _bounded

    block = _bounded({"type": "text", "text": "x" * (MAX_TEXT_CHARS + 500)})
    assert block["text"].startswith("x" * MAX_TEXT_CHARS)
    assert block["text"].endswith("[... the file goes on for 500 more characters]")
    assert _bounded({"type": "text", "text": "short"}) == {"type": "text", "text": "short"}


def test_a_150_page_pdf_goes_as_two_documents_claude_accepts(tmp_path: Path) -> None:
    manual = pdf_bytes(150, compressed=True)
    world = state()
    world["files"]["F4PDF"] = file_state("F4PDF", "runbook.pdf", manual, "application/pdf")
    cassette = [tool_use("t1", media_artifact_id="F4PDF"), answer("The runbook says restart.")]
    with OfflineBot(
        world, claude=True, cassette=cassette, data_dir=tmp_path, start_time=START
    ) as bot:
        root = message(ts(1), "the runbook", subtype="file_share",
                       files=[slack_file("F4PDF", "runbook.pdf", manual, "application/pdf")])  # fmt: skip
        bot.dispatch(envelope(root))
        ask(bot, 10, str(root["ts"]), "what does the runbook say?")
        assert bot.anthropic is not None and bot.anthropic.rejected == []
        body = json.dumps(last_body(bot))
        assert body.count('"type": "document"') == 2
        assert "runbook.pdf has 150 pages, more than the 100 Claude reads in one document: " \
               "it follows as 2 documents, pages 1-100, pages 101-150" in body  # fmt: skip
        errors = [c for r in bot.runtime.runner.results for c in r.tool_calls if c.is_error]
        assert errors == []
