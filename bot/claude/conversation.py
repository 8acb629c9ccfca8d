"""The shape of a session's conversation: where its cache breakpoints go, which messages open a
turn, what the last answer was, and the notes sent when Claude's answer is empty or cut off.

And the parts of a user message: the context package (snapshot and thread), the replies others
posted since the last answer, and the question. Functions over Messages API message dicts (and
the session log's entries), kept apart from the session so each can be read and tested alone.
"""

from __future__ import annotations

import copy
from typing import Any

from chanctx.bot.claude.prompt import CONTEXT_HEADER
from chanctx.bot.claude.session_state import SessionState
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.turns import Turn
from chanctx.bot.playbooks.channel_playbooks import PLAYBOOK_PREFIX
from chanctx.context import Fitted, Message, Names, render_slack_text, wire_json
from chanctx.manifest_store import CustomEntry, Entry, MessageEntry

__all__ = [
    "CONTEXT_BLOCK_HEAD",
    "CUT_OFF",
    "CUT_OFF_EMPTY",
    "EMPTY_ANSWER",
    "LAST_SEEN",
    "THREAD_PREFIX",
    "context_package",
    "final_text",
    "is_question",
    "last_answer",
    "last_turns",
    "package_end",
    "question",
    "thread_delta",
    "with_breakpoints",
]

THREAD_PREFIX = "ThreadContext (JSON):\n"
LAST_SEEN = "chanctx:last-seen"


def with_breakpoints(
    messages: list[dict[str, Any]], marker: dict[str, str]
) -> list[dict[str, Any]]:
    """Copies of ``messages`` with cache breakpoints: the end of the context package, and the
    end of the conversation so far. Stored messages never carry markers (at most 4 per request)."""
    marked = copy.deepcopy(messages)
    package = next((m for m in marked if m["role"] == "user" and package_end(m) is not None), None)
    if package is not None:
        index = package_end(package)
        assert index is not None
        package["content"][index]["cache_control"] = marker
    last = marked[-1]["content"]
    if isinstance(last, list) and last:
        last[-1]["cache_control"] = marker
    return marked


def package_end(message: dict[str, Any]) -> int | None:
    content = message.get("content")
    if not isinstance(content, list):
        return None
    found = None
    for index, block in enumerate(content):
        text = block.get("text", "") if block.get("type") == "text" else ""
        if text.startswith((CONTEXT_HEADER, THREAD_PREFIX, PLAYBOOK_PREFIX)):
            found = index
    return found


CONTEXT_BLOCK_HEAD = "# Context Block: "
EMPTY_ANSWER = (
    "_I could not produce an answer this time (the model returned an empty reply). "
    "Please ask again, perhaps more specifically._"
)
CUT_OFF_EMPTY = (
    "_I ran out of room before I could answer (the output limit was reached while I was "
    "looking something up). Please ask again, perhaps about a narrower part._"
)
CUT_OFF = "\n\n_(This answer was cut off at the output limit of {limit:,} tokens.)_"


def is_question(message: dict[str, Any]) -> bool:
    """A user message that opens a turn (not one that only carries tool results)."""
    content = message.get("content")
    if message.get("role") != "user":
        return False
    if not isinstance(content, list):
        return True
    return not any(b.get("type") == "tool_result" for b in content)


def last_turns(messages: list[dict[str, Any]], keep: int | None) -> list[dict[str, Any]]:
    """The last ``keep`` turns of a conversation (a recipe journal's ``max_iterations``);
    all of it when ``keep`` is None."""
    if not keep:
        return messages
    starts = [i for i, m in enumerate(messages) if is_question(m)]
    if len(starts) <= keep:
        return messages
    return messages[starts[-keep] :]


def final_text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content.strip()
    return "\n".join(b["text"] for b in content if b.get("type") == "text").strip()


def last_answer(entries: list[Entry]) -> tuple[str, str] | None:
    """The last question this log says was answered, and the answer's text."""
    found: tuple[str, str] | None = None
    text = ""
    for entry in entries:
        if isinstance(entry, MessageEntry) and entry.role == "assistant":
            text = final_text({"content": entry.content})
        elif isinstance(entry, CustomEntry) and entry.custom_type == LAST_SEEN:
            found = (str(entry.data.get("ts")), text)
    return found


# -- the parts of a user message ---------------------------------------------------------


def context_package(context: BuiltContext, fitted: Fitted | None) -> list[dict[str, Any]]:
    with_snapshot = fitted is None or fitted.snapshot_budget is not None
    with_thread = fitted is None or fitted.thread_budget is not None
    head = CONTEXT_HEADER
    if context.notes:
        head += "\nNotes: " + " ".join(context.notes)
    blocks = [
        {
            "type": "text",
            "text": head
            + (
                "\nChannelSnapshot (JSON):\n" + wire_json(context.snapshot) if with_snapshot else ""
            ),
        }
    ]
    if with_thread and context.thread is not None:
        blocks.append({"type": "text", "text": THREAD_PREFIX + wire_json(context.thread)})
    return blocks


def thread_delta(engine: ContextEngine, turn: Turn, session: SessionState) -> list[dict[str, Any]]:
    """The replies others posted in this thread since our last turn, one line each."""
    newer = [
        m
        for m in engine.replies_since(turn.channel, turn.thread_ts, session.last_seen_ts)
        if not m.is_self and m.ts != turn.anchor_ts
    ]
    if not newer:
        return []
    lines = [_line(m, engine.names) for m in newer]
    return [
        {
            "type": "text",
            "text": "New in this thread since your last answer:\n" + "\n".join(lines),
        }
    ]


def question(context: BuiltContext) -> str:
    anchor = context.snapshot.anchor
    return f"[{anchor.ts}] {anchor.author.display_name}: {anchor.text}"


def _line(message: Message, names: Names) -> str:
    from chanctx.context.timestamps import iso_from_ts

    author = names.users.get(message.user_id) or message.author_name or message.user_id
    text = " ".join(
        render_slack_text(message.text, users=names.users, channels=names.channels).split()
    )
    return f"[{iso_from_ts(message.ts)}] {author}: {text}"
