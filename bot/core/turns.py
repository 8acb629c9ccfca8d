"""Answering a mention off the ack path: one worker queue, answers serialized per thread.

A listener only decides *that* a message needs an answer and submits a Turn; the work (cold
fetches, Claude, posting) runs here, so acks stay fast however long an answer takes. Turns in
the same Slack thread run one after another, so a second question waits for the first answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from chanctx.bot.core.built_context import BuiltContext, ContextSettings

__all__ = [
    "Answer",
    "AnswerRunner",
    "NullResponder",
    "PlansContext",
    "Responder",
    "SentBlock",
    "StaleContext",
    "ToolCall",
    "Turn",
    "TurnResult",
]

logger = logging.getLogger("chanctx.answers")


@dataclass(frozen=True)
class Turn:
    """A message that needs an answer, and where the answer goes."""

    channel: str
    thread_ts: str  # a top-level mention is answered in a new thread under itself
    anchor_ts: str
    user: str
    assistant_thread: bool = False  # a DM assistant thread: status via setStatus
    # The assistant pane: the channel the user is viewing, whose context answers the question
    # (checked for membership before use), and the thread title to set from the first question.
    viewed_channel: str | None = None
    title: str | None = None
    team: str = ""  # the asker's team (a streamed answer names its recipient)

    @property
    def context_channel(self) -> str:
        """The channel whose history, search and files this turn may use."""
        return self.viewed_channel or self.channel


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: object
    output: str
    is_error: bool


@dataclass(frozen=True)
class SentBlock:
    """One block this turn put in front of Claude: ``kind`` is ``recipe``, ``snapshot``,
    ``thread``, ``delta``, ``media`` (or ``playbook``); ``tokens`` as the budgets count them."""

    kind: str
    name: str
    tokens: int


@dataclass
class Answer:
    """What a responder produced for one turn."""

    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Summed over the turn's Messages API requests: input_tokens, output_tokens,
    # cache_creation_input_tokens, cache_read_input_tokens, requests.
    usage: dict[str, int] = field(default_factory=dict)
    sent: list[SentBlock] = field(default_factory=list)
    request_tokens: int = 0  # the first request's estimated input, before it was sent
    # The budgets the turn ran under: "request" (tokens a request may take before the
    # session is compacted), "tool_output" (per tool call), "recipe" (0: no total budget).
    limits: dict[str, int] = field(default_factory=dict)
    playbook_ids: list[str] = field(default_factory=list)  # the bullets the session holds


@dataclass
class TurnResult:
    turn: Turn
    context: BuiltContext | None = None
    reply: str | None = None
    reply_ts: list[str] = field(default_factory=list)
    error: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    sent: list[SentBlock] = field(default_factory=list)
    request_tokens: int = 0
    limits: dict[str, int] = field(default_factory=dict)
    playbook_ids: list[str] = field(default_factory=list)
    # Slack Web API reads the turn made (method -> calls): 0 in steady state.
    slack_calls: dict[str, int] = field(default_factory=dict)


class Responder(Protocol):
    """Produces the answer for a turn (the Claude session; nothing in context-only mode)."""

    def respond(self, turn: Turn, context: BuiltContext) -> Answer: ...


@runtime_checkable
class PlansContext(Protocol):
    """A responder that knows, before a turn's context is built, the settings it needs (a
    recipe's snapshot and thread budgets): the runtime asks first, then builds the context
    once with them. None: the engine's own settings."""

    def context_settings(self, turn: Turn) -> ContextSettings | None: ...


class StaleContext(Exception):
    """A responder's session changed under the turn (it was compacted before sending): the
    turn's context is planned and built again, then the responder is asked again."""


class NullResponder:
    """Builds the context and answers nothing: context-only mode (``--no-claude``)."""

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        return Answer(text=None)


Work = Callable[[Turn], TurnResult]


class AnswerRunner:
    def __init__(self, work: Work, *, workers: int = 4, keep_results: int | None = None) -> None:
        self._work = work
        self._executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="chanctx-answer"
        )
        # One lock per thread with turns waiting or running; dropped when the last one ends.
        self._thread_locks: dict[tuple[str, str], tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()
        self._pending: set[Future[TurnResult]] = set()
        # Replay and tests read every result; a running bot keeps the last few for inspection.
        self.results: deque[TurnResult] = deque(maxlen=keep_results)

    def submit(self, turn: Turn) -> Future[TurnResult]:
        future = self._executor.submit(self._run, turn)
        with self._guard:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def drain(self, timeout: float | None = None) -> None:
        """Wait for every submitted answer (replay and tests use this for determinism)."""
        with self._guard:
            pending = list(self._pending)
        for future in pending:
            future.result(timeout=timeout)

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def stop(self, grace: float) -> bool:
        """Take no new turns and wait up to ``grace`` seconds for running ones; False if some
        are still running (their turns stay queued in the journal for the next start)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + grace
        with self._guard:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:
                continue
        return all(f.done() for f in pending)

    def _take_lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._guard:
            lock, users = self._thread_locks.get(key, (threading.Lock(), 0))
            self._thread_locks[key] = (lock, users + 1)
            return lock

    def _drop_lock(self, key: tuple[str, str]) -> None:
        with self._guard:
            lock, users = self._thread_locks[key]
            if users <= 1:
                del self._thread_locks[key]
            else:
                self._thread_locks[key] = (lock, users - 1)

    def _run(self, turn: Turn) -> TurnResult:
        key = (turn.channel, turn.thread_ts)
        try:
            with self._take_lock(key):
                try:
                    result = self._work(turn)
                except Exception as error:  # one failed answer must not stop the others
                    logger.exception("answer for %s/%s failed", turn.channel, turn.anchor_ts)
                    result = TurnResult(turn=turn, error=f"{type(error).__name__}: {error}")
        finally:
            self._drop_lock(key)
        with self._guard:
            self.results.append(result)
        return result

    def _done(self, future: Future[TurnResult]) -> None:
        with self._guard:
            self._pending.discard(future)
