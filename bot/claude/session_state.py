"""What a Claude session holds between turns, and what it is configured with.

``SessionSettings`` are the operator's choices (model, limits, compaction, media, deadlines);
``SessionState`` is one Slack thread's conversation with Claude, rebuilt from its log after a
restart; ``ToolLoop`` is one turn's exchange while it runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from chanctx.bot.claude.scratchpad import DEFAULT_THRESHOLD, Scratchpad
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import ToolCall
from chanctx.context import Fitted
from chanctx.manifest_store import AppendLog, AttachmentManifest, SessionKey

__all__ = [
    "DEFAULT_MODEL",
    "SessionSettings",
    "SessionState",
    "ToolLoop",
    "add_usage",
    "held_in_package",
]

DEFAULT_MODEL = "claude-sonnet-5"


@dataclass(frozen=True)
class SessionSettings:
    model: str = DEFAULT_MODEL
    max_tokens: int = 2_048
    max_tool_iterations: int = 6
    context_window: int = 200_000
    compaction: Literal["trim", "summarize", "off"] = "trim"
    compaction_threshold: float = 0.8
    keep_turns: int = 3
    tool_output_budget: int = 4_000
    cache_ttl: Literal["5m", "1h"] = "1h"
    # Media is opt-in (it costs tokens on every turn that carries it): with it on, the current thread's files are attached inline.
    # Claude can always ask for one file with channel_messages(media_artifact_id=...).
    attach_media: bool = False
    deadline_seconds: float = 120.0  # the whole turn with Claude, tool rounds included
    slack_fetches_per_turn: int = 3  # Slack fetches the tools may make for one answer
    # A guard against distraction: a longer output of these tools goes to the scratchpad.
    scratchpad_threshold: int = DEFAULT_THRESHOLD
    scratchpad_tools: tuple[str, ...] = ("channel_messages",)


@dataclass
class SessionState:
    key: SessionKey
    log: AppendLog
    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0
    context_attached: bool = False
    last_seen_ts: str | None = None
    # The recipe's part of the system prompt, fixed when the context is attached: reloading it
    # every turn would re-run commands and throw the prompt cache away.
    recipe_texts: list[str] | None = None
    keep_turns: int | None = None  # the recipe's journal max_iterations, if any
    # The recipe read for the turn about to be answered, when its context was planned.
    planned: Fitted | None = None
    manifest: AttachmentManifest = field(default_factory=AttachmentManifest)
    reattach_media: bool = False  # a compaction happened: re-send this thread's media once
    # The last question answered in this thread and the answer (anchor ts, text): a turn
    # recovered after a crash between logging the answer and queueing its post gets it again
    # from here instead of asking Claude twice.
    last_answer: tuple[str, str] | None = None
    # The playbook bullets attached with the context (their ids): people's verdicts on this
    # thread's answers count for them (kept in the log with the package).
    playbook_ids: list[str] = field(default_factory=list)
    scratchpad: Scratchpad | None = None  # made with the session's first bulky tool output
    # Messages the attached context package holds in full: search names them by ts only.
    held: frozenset[str] = frozenset()
    lock: threading.Lock = field(default_factory=threading.Lock)


def held_in_package(context: BuiltContext, fitted: Fitted | None) -> frozenset[str]:
    """The ts of the messages the package gives in full: the thread as attached, and the
    snapshot's messages whose snippet is their whole text (a cut one ends with "...": a
    message that really ends so is shown again, which costs a row, not an answer)."""
    held: set[str] = set()
    if fitted is None or fitted.snapshot_budget is not None:
        held.update(
            a.message_id for a in context.snapshot.adjacent if not a.snippet.endswith("...")
        )
    thread = context.thread
    if (fitted is None or fitted.thread_budget is not None) and thread is not None:
        held.add(thread.root.message_id)
        held.update(r.message_id for r in thread.replies if not r.is_truncated)
    return frozenset(held)


@dataclass
class ToolLoop:
    """One turn's exchange with Claude: the new messages, tool calls and summed usage."""

    messages: list[dict[str, Any]]
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    last_usage: Any = None
    manifest_changed: bool = False
    stop_reason: str | None = None


def add_usage(total: dict[str, int], usage: Any) -> None:
    for name in (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ):
        total[name] = total.get(name, 0) + int(getattr(usage, name, 0) or 0)
    total["requests"] = total.get("requests", 0) + 1
