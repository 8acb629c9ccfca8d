"""Answering a mention off the ack path: a few workers, answers serialized per thread.

A listener only decides *that* a message needs an answer and submits a Turn; the work (cold
fetches, Claude, posting) runs here, so acks stay fast however long an answer takes. Turns in
the same Slack thread run one after another, so a second question waits for the first answer;
no channel takes every worker, and no turn holds one past its deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, wait
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
    "turn_id",
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


def turn_id(turn: Turn) -> str:
    """One id per question: the message and app_mention events of a mention share it."""
    return f"{turn.channel}:{turn.anchor_ts}"


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


@dataclass
class _Job:
    turn: Turn
    future: Future[TurnResult]
    started: float = 0.0
    abandoned: bool = False

    @property
    def thread(self) -> tuple[str, str]:
        return (self.turn.channel, self.turn.thread_ts)


class AnswerRunner:
    """Runs turns on at most ``workers`` threads, fairly across channels.

    No worker ever waits: a turn whose thread is being answered stays queued (not parked on a
    worker) until that answer ends, and one channel holds at most ``workers - 1`` workers, so a
    channel full of slow turns leaves a worker for every other channel. A turn still running
    after ``deadline`` seconds is abandoned: its future resolves with an error, its worker slot
    and its thread are released (a fresh thread takes the slot), ``on_stuck`` is told, and it
    is listed in ``status()`` until it returns, if it ever does.
    """

    def __init__(
        self,
        work: Work,
        *,
        workers: int = 4,
        keep_results: int | None = None,
        deadline: float | None = None,
        on_stuck: Callable[[Turn], None] | None = None,
    ) -> None:
        self._work = work
        self._free = max(1, workers)
        self._channel_share = max(1, workers - 1)
        self._deadline = deadline
        self._on_stuck = on_stuck
        self._guard = threading.Lock()
        self._waiting: dict[tuple[str, str], deque[_Job]] = {}  # per Slack thread, in order
        self._busy: set[tuple[str, str]] = set()  # threads with a turn running
        self._ready: dict[str, deque[tuple[str, str]]] = {}  # channel -> threads free to run
        self._per_channel: dict[str, int] = {}
        self._running: dict[int, _Job] = {}
        self._stuck: dict[int, _Job] = {}
        self._pending: set[Future[TurnResult]] = set()
        self._closed = False
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None
        # Replay and tests read every result; a running bot keeps the last few for inspection.
        self.results: deque[TurnResult] = deque(maxlen=keep_results)

    def submit(self, turn: Turn) -> Future[TurnResult]:
        future: Future[TurnResult] = Future()
        job = _Job(turn, future)
        with self._guard:
            if self._closed:
                raise RuntimeError("the answer runner is stopped")
            self._pending.add(future)
            queue = self._waiting.setdefault(job.thread, deque())
            queue.append(job)
            if len(queue) == 1 and job.thread not in self._busy:
                self._ready.setdefault(turn.channel, deque()).append(job.thread)
            self._start_watcher()
            started = self._pump()
        future.add_done_callback(self._done)
        for each in started:
            self._launch(each)
        return future

    def drain(self, timeout: float | None = None) -> None:
        """Wait for every submitted answer (replay and tests use this for determinism)."""
        with self._guard:
            pending = list(self._pending)
        for future in pending:
            future.result(timeout=timeout)

    def close(self) -> None:
        """Answer everything submitted (however it ends), then take no more."""
        with self._guard:
            pending = list(self._pending)
        wait(pending)
        with self._guard:
            self._closed = True
        self._watch_stop.set()

    def stop(self, grace: float) -> bool:
        """Take no new turns and wait up to ``grace`` seconds for running ones; False if some
        are still running (their turns stay queued in the journal for the next start)."""
        with self._guard:
            self._closed = True
            waiting = [job for queue in self._waiting.values() for job in queue]
            self._waiting.clear()
            self._ready.clear()
            running = [job.future for job in self._running.values()]
        for job in waiting:
            job.future.cancel()
        self._watch_stop.set()
        deadline = time.monotonic() + grace
        for future in running:
            try:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:
                continue
        return all(f.done() for f in running)

    def status(self) -> dict[str, object]:
        """What ``/readyz`` shows: turns answering and waiting, and any stuck past the deadline."""
        now = time.monotonic()
        with self._guard:
            return {
                "answering": len(self._running),
                "waiting": sum(len(q) for q in self._waiting.values()),
                "stuck": [
                    {
                        "channel": j.turn.channel,
                        "ts": j.turn.anchor_ts,
                        "seconds": round(now - j.started),
                    }
                    for j in self._stuck.values()
                ],
            }

    def idle(self) -> bool:
        """Nothing queued, running or stuck (per-thread bookkeeping all let go)."""
        with self._guard:
            return not (self._waiting or self._busy or self._ready or self._running or self._stuck)

    # -- scheduling (``_guard`` held) -----------------------------------------------------

    def _pump(self) -> list[_Job]:
        """Take turns for the free workers, one channel after another; the jobs to launch."""
        started: list[_Job] = []
        while self._free > 0 and not self._closed:
            job = self._next_job()
            if job is None:
                break
            self._free -= 1
            self._busy.add(job.thread)
            channel = job.turn.channel
            self._per_channel[channel] = self._per_channel.get(channel, 0) + 1
            job.started = time.monotonic()
            self._running[id(job)] = job
            started.append(job)
        return started

    def _next_job(self) -> _Job | None:
        for channel in list(self._ready):
            if self._per_channel.get(channel, 0) >= self._channel_share:
                continue
            threads = self._ready.pop(channel)  # re-added at the end: the next channel first
            key = threads.popleft()
            if threads:
                self._ready[channel] = threads
            queue = self._waiting[key]
            job = queue.popleft()
            if not queue:
                del self._waiting[key]
            if job.future.set_running_or_notify_cancel():
                return job
            self._release_thread(key)
        return None

    def _release(self, job: _Job) -> None:
        self._running.pop(id(job), None)
        self._free += 1
        channel = job.turn.channel
        left = self._per_channel.get(channel, 0) - 1
        if left > 0:
            self._per_channel[channel] = left
        else:
            self._per_channel.pop(channel, None)
        self._release_thread(job.thread)

    def _release_thread(self, key: tuple[str, str]) -> None:
        self._busy.discard(key)
        if key in self._waiting:
            self._ready.setdefault(key[0], deque()).append(key)

    # -- running --------------------------------------------------------------------------

    def _launch(self, job: _Job) -> None:
        name = f"chanctx-answer-{job.turn.channel}"
        threading.Thread(target=self._run, args=(job,), name=name, daemon=True).start()

    def _run(self, job: _Job) -> None:
        turn = job.turn
        died: BaseException | None = None
        try:
            result = self._work(turn)
        except Exception as error:  # one failed answer must not stop the others
            logger.exception("answer for %s/%s failed", turn.channel, turn.anchor_ts)
            result = TurnResult(turn=turn, error=f"{type(error).__name__}: {error}")
        except BaseException as error:  # the worker itself is dying: its slot is freed still
            died, result = error, TurnResult(turn=turn, error=type(error).__name__)
        with self._guard:
            if job.abandoned:  # released long ago; its result was given up on
                self._stuck.pop(id(job), None)
                logger.warning(
                    "the stuck answer for %s/%s returned after %.0f s",
                    turn.channel, turn.anchor_ts, time.monotonic() - job.started,
                )  # fmt: skip
                return
            self._release(job)
            if died is None:
                self.results.append(result)
            started = self._pump()
        if died is None:
            job.future.set_result(result)
        else:
            job.future.set_exception(died)
        for each in started:
            self._launch(each)

    def _start_watcher(self) -> None:
        if self._deadline is None or self._watcher is not None:
            return
        self._watcher = threading.Thread(target=self._watch, name="chanctx-deadline", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        assert self._deadline is not None
        period = min(1.0, self._deadline / 4)
        while not self._watch_stop.wait(period):
            self._abandon_overdue(self._deadline)

    def _abandon_overdue(self, deadline: float) -> None:
        now = time.monotonic()
        with self._guard:
            overdue = [j for j in self._running.values() if now - j.started > deadline]
            for job in overdue:
                job.abandoned = True
                self._stuck[id(job)] = job
                self._release(job)
            started = self._pump()
        for job in overdue:
            turn = job.turn
            logger.warning(
                "the answer for %s/%s is past its %g s deadline: released, its worker replaced",
                turn.channel, turn.anchor_ts, deadline,
            )  # fmt: skip
            result = TurnResult(turn=turn, error=f"no answer within {deadline:g} s")
            with self._guard:
                self.results.append(result)
            job.future.set_result(result)
            if self._on_stuck is not None:
                self._on_stuck(turn)
        for each in started:
            self._launch(each)

    def _done(self, future: Future[TurnResult]) -> None:
        with self._guard:
            self._pending.discard(future)
