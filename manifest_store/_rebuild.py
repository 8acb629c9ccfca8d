"""rebuild: the state a restarted bot resumes a session from, read back from its log.

``messages`` is always a valid Messages API ``messages`` array: empty, or starting with a user
message, alternating user/assistant, ending with an assistant message, every tool_use answered
by a tool_result in the next message and no tool_result without its tool_use. A log written by
a healthy bot needs no repair to get there; a crash mid-turn can leave a question unanswered or
a tool_use without its result, and sending that as-is would fail every later turn with a 400
(the "stuck lane" users reported), so rebuild closes such gaps with short bracketed notes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from chanctx.manifest_store._blocks import (
    Block,
    MessageParam,
    blocks_of,
    digest_head,
    leading_digest,
    text_block,
    with_digest,
)
from chanctx.manifest_store._entries import (
    CONTEXT_ATTACHED,
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    SessionStarted,
)

__all__ = ["SessionState", "rebuild"]

NO_ANSWER: Final = "[No answer was recorded for this message.]"
INTERRUPTED: Final = "[This answer was interrupted.]"
NOT_RUN: Final = "Not run: the session was interrupted before this tool call completed."
UNAVAILABLE: Final = "[The start of this exchange is not available.]"


@dataclass
class SessionState:
    messages: list[MessageParam] = field(default_factory=list)
    turn: int = 0  # the last turn number logged (0: none yet)
    custom: dict[str, dict[str, Any]] = field(default_factory=dict)  # latest data per type
    compactions: int = 0
    last_compaction_turn: int | None = None  # ``turn`` when the last compaction was logged
    replaced_through_turn: int = 0  # turns up to this one live only in the digest
    context_attached_turn: int | None = None  # None: the next turn must attach the context
    exchange_turns: list[int] = field(default_factory=list)  # turn number of each exchange
    session_id: str | None = None
    model: str | None = None

    @property
    def post_compaction(self) -> bool:
        """No turn yet since the last compaction: time to re-attach the thread's media."""
        return self.last_compaction_turn is not None and self.turn == self.last_compaction_turn


def rebuild(entries: Iterable[Entry]) -> SessionState:
    state = SessionState()
    logged: list[MessageEntry] = []
    digest: CompactionEntry | None = None
    for entry in entries:
        if isinstance(entry, SessionStarted):
            state.session_id, state.model = entry.session_id, entry.model
        elif isinstance(entry, MessageEntry):
            logged.append(entry)
            state.turn = max(state.turn, entry.turn)
        elif isinstance(entry, CustomEntry):
            state.custom[entry.custom_type] = dict(entry.data)
            attached = entry.data.get("turn")
            if entry.custom_type == CONTEXT_ATTACHED and isinstance(attached, int):
                state.context_attached_turn = attached
        elif isinstance(entry, CompactionEntry):
            through = entry.replaced_through_turn
            if through < state.replaced_through_turn or (
                through == state.replaced_through_turn and not entry.digest
            ):
                continue  # replaces nothing new (a no-op or stale compaction): changes nothing
            digest = entry
            state.compactions += 1
            state.last_compaction_turn = state.turn
            state.replaced_through_turn = entry.replaced_through_turn
            # The context package rode in one user message; if that turn is now only in the
            # digest, the caller has to attach a fresh snapshot on its next turn.
            attached_at = state.context_attached_turn
            if attached_at is not None and attached_at <= entry.replaced_through_turn:
                state.context_attached_turn = None
    kept = [m for m in logged if m.turn > state.replaced_through_turn]
    state.messages, state.exchange_turns = _repair(kept)
    if digest is not None:
        first = logged[0].turn if logged else 1
        state.messages = with_digest(_marked(digest, first), state.messages)
    return state


def _marked(entry: CompactionEntry, first: int) -> str:
    """The digest with its span marker (a caller-made summary may lack one)."""
    if leading_digest({"role": "user", "content": entry.digest}) is not None:
        return entry.digest
    kind = "summarized" if entry.strategy == "summarize" else "compacted"
    through = max(first, entry.replaced_through_turn)
    body = entry.digest.strip() or "(no digest recorded)"
    return digest_head(min(first, through), through, kind) + body + "]"


class _Builder:
    """Appends logged messages one by one, keeping the result a valid conversation."""

    def __init__(self) -> None:
        self.out: list[MessageParam] = []
        self.turns: list[int] = []  # turn of each message in out
        self.exchange_turns: list[int] = []
        self.pending: list[str] = []  # tool_use ids of the last assistant message, unanswered

    def add(self, role: str, content: Any, turn: int) -> None:
        self.out.append({"role": role, "content": content})
        self.turns.append(turn)

    def new_exchange(self, content: Any, turn: int) -> None:
        if self.out and self.out[-1]["role"] == "user":
            self.add("assistant", [text_block(NO_ANSWER)], self.turns[-1])
        self.add("user", content, turn)
        self.exchange_turns.append(turn)

    def close_pending(self) -> list[Block]:
        missing = [
            {"type": "tool_result", "tool_use_id": tool_id, "content": NOT_RUN, "is_error": True}
            for tool_id in self.pending
        ]
        self.pending = []
        return missing

    def merge_into_last(self, blocks: list[Block]) -> None:
        last = self.out[-1]
        last["content"] = [*blocks_of(last["content"]), *blocks]


def _repair(logged: list[MessageEntry]) -> tuple[list[MessageParam], list[int]]:
    b = _Builder()
    for entry in logged:
        blocks = blocks_of(entry.content)
        # A tool_use only ever comes from the assistant and a tool_result from the user.
        misplaced = "tool_result" if entry.role == "assistant" else "tool_use"
        if any(block.get("type") == misplaced for block in blocks):
            blocks = [block for block in blocks if block.get("type") != misplaced]
            entry = entry.model_copy(update={"content": blocks})
        if not blocks:
            continue  # the API refuses empty content
        if entry.role == "assistant":
            _add_assistant(b, entry, blocks)
        else:
            _add_user(b, entry, blocks)
    if b.out and b.pending:
        b.add("user", b.close_pending(), b.turns[-1])
        b.add("assistant", [text_block(INTERRUPTED)], b.turns[-1])
    elif b.out and b.out[-1]["role"] == "user":
        b.add("assistant", [text_block(NO_ANSWER)], b.turns[-1])
    return b.out, b.exchange_turns


def _tool_use_ids(blocks: list[Block]) -> list[str]:
    return [str(x.get("id")) for x in blocks if x.get("type") == "tool_use"]


def _add_assistant(b: _Builder, entry: MessageEntry, blocks: list[Block]) -> None:
    if not b.out:
        b.new_exchange([text_block(UNAVAILABLE)], entry.turn)
    elif b.out[-1]["role"] == "assistant":
        if not b.pending:  # two assistant messages in a row: one reply in two parts
            b.merge_into_last(blocks)
            b.pending = _tool_use_ids(blocks_of(b.out[-1]["content"]))
            return
        b.add("user", b.close_pending(), b.turns[-1])
    b.add("assistant", entry.content, entry.turn)
    b.pending = _tool_use_ids(blocks)


def _add_user(b: _Builder, entry: MessageEntry, blocks: list[Block]) -> None:
    results = [x for x in blocks if x.get("type") == "tool_result"]
    others = [x for x in blocks if x.get("type") != "tool_result"]
    if b.out and b.out[-1]["role"] == "assistant" and b.pending:
        answered = [x for x in results if x.get("tool_use_id") in b.pending]
        b.pending = [i for i in b.pending if i not in {x.get("tool_use_id") for x in answered}]
        closing = [*answered, *b.close_pending()]
        if not others or entry.turn == b.turns[-1]:
            unchanged = not others and closing == results
            b.add("user", entry.content if unchanged else [*closing, *others], entry.turn)
        else:  # the tool round never finished and a new question followed
            b.add("user", closing, b.turns[-1])
            b.add("assistant", [text_block(INTERRUPTED)], b.turns[-1])
            b.new_exchange(others, entry.turn)
        return
    # No tool_use waiting: any tool_result here is an orphan the API would refuse.
    if not others:
        return
    content = entry.content if not results else others
    if b.out and b.out[-1]["role"] == "user" and entry.turn == b.turns[-1]:
        b.merge_into_last(others)
    else:
        b.new_exchange(content, entry.turn)
