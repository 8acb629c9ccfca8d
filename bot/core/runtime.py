"""Everything one running bot shares: caches, the turn journal, the answer runner, the clients.

Bolt may dispatch requests on several threads at once (HTTP mode). ``lock`` guards the in-memory
dedup; the engine guards its caches with its own lock, which no Slack call ever holds, so acks
never wait on an answer or on a rate limit.

Exactly once: a question is written to the turn journal (fsynced) inside the listener, so before
Slack gets its ack; its answer is written there (the outbox) before it is posted, and the turn is
done only when every part is confirmed posted. ``recover()`` after a start answers what was
queued and never answered, and posts what was answered and never confirmed, after looking in the
thread for parts posted just before a crash.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from cachetools import LRUCache, TTLCache
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.turn_signals import may_view, set_title, show_working
from chanctx.bot.core.turns import (
    Answer,
    AnswerRunner,
    NullResponder,
    PlansContext,
    Responder,
    StaleContext,
    Turn,
    TurnResult,
    turn_id,
)
from chanctx.bot.playbooks.channel_playbooks import ChannelPlaybooks
from chanctx.bot.slack.feedback_buttons import feedback_block
from chanctx.bot.slack.markdown import split_markdown
from chanctx.bot.slack.membership import MembershipChecker
from chanctx.bot.slack.poster import Poster
from chanctx.bot.slack.web_calls import counted_reads
from chanctx.bot.stores.pane_threads import PaneThreads
from chanctx.bot.stores.pane_threads.local import LocalPaneThreads
from chanctx.context import ChanctxError
from chanctx.manifest_store import FeedbackStore, QueuedTurn, TurnJournal, TurnStore, Vote
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["Replicas", "Runtime"]

logger = logging.getLogger("chanctx.runtime")
# Slack retries an event for up to ~1 hour; ten minutes of ids covers its retry schedule
# (immediately, 1 min, 5 min) with room to spare. Turns are remembered longer, in the journal.
_DEDUP_SECONDS = 600.0
_SLACK_TS = re.compile(r"\d{10}\.\d{6}")  # a message id, as every queued anchor must be
_FAILURE_TEXT = "Sorry, I couldn't answer this one: {reason}. Nothing is lost; please ask again."


class Replicas(Protocol):
    """Several replicas on one Redis (``bot/replicas/``): what the runtime asks of them."""

    def publish(self, event: Mapping[str, Any], event_id: str | None) -> bool:
        """Record an event for every replica; False for a delivery recorded before. Raises
        an OSError when it cannot be stored (the event is refused, so Slack retries)."""
        ...

    def answering(self, turn: Turn) -> AbstractContextManager[None]:
        """Held while a turn is answered: its thread is this replica's, its context current."""
        ...

    def lost(self, error: BaseException) -> bool:
        """True if the turn cannot go on here but stays queued (outage, taken over)."""
        ...


@dataclass
class Runtime:
    engine: ContextEngine
    client: WebClient
    responder: Responder = field(default_factory=NullResponder)
    workers: int = 4
    # A turn still running after this many seconds is released (bot/claude/answers.py) and
    # its asker told; None: no deadline. Past Claude's own deadline, with room for Slack.
    turn_deadline: float | None = 300.0
    post_backoff: float = 0.5  # seconds before the first retry of a failed post, doubling
    stream: bool = True  # stream answers (chat.startStream...) where Slack lets us
    team_id: str = ""  # the workspace (the default recipient team of a stream)
    keep_results: int | None = None  # answers kept for inspection (None: all, for replay)
    lock: threading.RLock = field(default_factory=threading.RLock)
    # The assistant pane: which channel each pane thread views (persisted by serve/replay).
    assistant_threads: PaneThreads = field(default_factory=LocalPaneThreads)
    # The durable queue and outbox; in memory unless serve/replay give it a data dir.
    turns: TurnStore = field(default_factory=lambda: TurnJournal(None))
    # Reactions on answers, per turn (the playbook's signal); None records nothing.
    feedback: FeedbackStore | None = None
    # The channel playbooks: what answered turns teach, and what votes do (None: none kept).
    playbooks: ChannelPlaybooks | None = None
    # Replicas sharing Redis: the queue hands turns out, the change stream feeds the engine.
    replicas: Replicas | None = None
    # Background work of this workspace (its backfill under --oauth), stopped with its stores.
    on_close: list[Callable[[], None]] = field(default_factory=list)
    runner: AnswerRunner = field(init=False)
    membership: MembershipChecker = field(init=False)
    poster: Poster = field(init=False)
    _seen_events: TTLCache[str, bool] = field(init=False)
    _in_flight: set[str] = field(init=False)  # turn ids handed to the runner, not yet finished
    # The last answer's Claude usage per channel, for `/chanctx status`.
    last_usage: LRUCache[str, dict[str, int]] = field(init=False)

    def __post_init__(self) -> None:
        self.runner = AnswerRunner(
            self.answer,
            workers=self.workers,
            keep_results=self.keep_results,
            deadline=self.turn_deadline,
            on_stuck=self._stuck,
        )
        self._abandoned: LRUCache[str, bool] = LRUCache(maxsize=1_000)
        self.membership = MembershipChecker(self.client)
        me = self.engine.me
        self.poster = Poster(
            self.client, bot_id=me.bot_id, bot_user=me.user_id, backoff=self.post_backoff
        )
        self.poster.streaming = self.stream
        self._seen_events = TTLCache(maxsize=20_000, ttl=_DEDUP_SECONDS)
        self._in_flight = set()
        self._resume: dict[str, QueuedTurn] = {}
        self.last_usage = LRUCache(maxsize=1_000)

    # -- on the dispatch path (before the ack) ---------------------------------------------

    def first_delivery(self, event_id: str | None) -> bool:
        """False for an event already seen (a Slack retry), also across restarts for the
        events that brought a question."""
        if not event_id:
            return True
        with self.lock:
            if event_id in self._seen_events:
                return False
            self._seen_events[event_id] = True
        return not self.turns.seen_event(event_id)

    def refused(self, event_id: object) -> None:
        """An event that could not be stored is not seen: Slack's retry of it must pass."""
        if isinstance(event_id, str) and event_id:
            with self.lock:
                self._seen_events.pop(event_id, None)

    def close_stores(self) -> None:
        """Close the files the runtime writes (the turn journal, the feedback log, the
        playbooks)."""
        for stop in self.on_close:
            stop()
        self.turns.close()
        if self.feedback is not None:
            self.feedback.close()
        if self.playbooks is not None:
            self.playbooks.store.close()

    def intake(self, event: Mapping[str, Any]) -> None:
        self.engine.handle(event)  # the engine locks its caches itself
        self.feedback_of(event)

    def publish(self, event: Mapping[str, Any], event_id: str | None) -> bool:
        """Replicas: record an event in the change stream (every replica's engine reads it
        there); False for a delivery recorded before, here or on another replica."""
        assert self.replicas is not None
        if event_id:
            with self.lock:
                if event_id in self._seen_events:
                    return False
        if not self.replicas.publish(event, event_id):
            return False
        if event_id:
            with self.lock:
                self._seen_events[event_id] = True
        self.feedback_of(event)
        return True

    def feedback_of(self, event: Mapping[str, Any]) -> None:
        """A reaction on one of our answers is a vote (after the event is stored)."""
        if self.feedback is not None and event.get("type") in (
            "reaction_added",
            "reaction_removed",
        ):
            self._reaction(event)

    def _reaction(self, event: Mapping[str, Any]) -> None:
        """A person's :+1: / :-1: (and kin) on one of our answers is a vote on its turn."""
        item, user, name = event.get("item"), event.get("user"), event.get("reaction")
        if not isinstance(item, Mapping) or not isinstance(user, str) or not isinstance(name, str):
            return
        if user == self.engine.me.user_id:  # our own :eyes: is not feedback
            return
        channel, ts = item.get("channel"), item.get("ts")
        if isinstance(channel, str) and isinstance(ts, str) and self.feedback is not None:
            added = event.get("type") == "reaction_added"
            vote = self.feedback.record_reaction(channel, ts, user, name, added=added)
            if vote is not None:
                self.voted(vote)

    def voted(self, vote: Vote) -> None:
        """A person's verdict on an answer (reaction or button) reaches the bullets its turn
        used; taking it back changes nothing there (playbook counters only grow)."""
        if vote.added and self.playbooks is not None:
            self.playbooks.on_vote(vote.turn, vote.user, helpful=vote.verdict == "helpful")

    def trigger(self, turn: Turn, event_id: str | None = None) -> bool:
        """Queue an answer durably unless this question is known (message + app_mention, or a
        retry after a restart); the journal line is fsynced before this returns."""
        try:
            queued = self.turns.enqueue(turn_id(turn), asdict(turn), event_id)
        except OSError:
            # Not stored, so not acknowledged: Slack's retry of this event must get through.
            if event_id:
                with self.lock:
                    self._seen_events.pop(event_id, None)
            raise
        if not queued:
            logger.debug("already answering %s", turn_id(turn))
            return False
        if self.replicas is None:  # replicas: whichever has a free worker takes it
            self._submit(turn)
        return True

    def take(self, queued: QueuedTurn, done: Callable[[QueuedTurn], None]) -> bool:
        """Replicas: answer a turn taken from the shared queue (its outbox, if it has one,
        is posted instead); ``done(queued)`` when the answer ends. False if it runs here."""
        turn = Turn(**queued.payload)
        key = turn_id(turn)
        with self.lock:
            if key in self._in_flight:
                return False
            self._in_flight.add(key)
            self._resume[key] = queued
        self.runner.submit(turn).add_done_callback(lambda _: done(queued))
        return True

    def _submit(self, turn: Turn) -> bool:
        """Hand a turn to the runner unless this process already did (recovery and a live
        delivery of the same question can meet right after a start)."""
        key = turn_id(turn)
        with self.lock:
            if key in self._in_flight:
                return False
            self._in_flight.add(key)
        self.runner.submit(turn)
        return True

    # -- after a start -------------------------------------------------------------------

    def recover(self) -> int:
        """Finish what a previous run left: post unconfirmed answers, answer queued questions.
        Returns how many turns were picked up."""
        picked = 0
        # Both lists are taken first: turns queued while the outbox is being posted are the
        # live path's, not recovery's.
        outbox, pending = self.turns.outbox(), self.turns.pending()
        for entry in outbox:
            turn = Turn(**entry.payload)
            try:
                self._deliver(
                    turn, list(entry.parts), dict(entry.posted), check_thread=True,
                    streaming=dict(entry.streaming),
                    buttons=not entry.parts[0].startswith(_FAILURE_TEXT[:20]),
                )  # fmt: skip
            except SlackApiError as error:
                logger.warning("could not post a recovered answer: %s", error)
            picked += 1
        for waiting in pending:
            turn = Turn(**waiting.payload)
            if not _SLACK_TS.fullmatch(turn.anchor_ts):
                # Queued by an older version that did not check mentions: never answerable.
                logger.warning("dropped a queued turn anchored at %r", turn.anchor_ts[:40])
                self.turns.finish(waiting.turn_id)
                continue
            picked += self._submit(turn)
        if picked:
            logger.info("recovered %d unfinished turns", picked)
        return picked

    # -- on the answer worker ------------------------------------------------------------

    def answer(self, turn: Turn) -> TurnResult:
        # One budget of rate-limit waiting per answer: its context and its tools share it;
        # the Slack reads it made are counted for the inspector.
        with self.engine.turn_wait_budget(), counted_reads() as reads:
            if self.replicas is None:
                result = self._answer(turn)
            else:
                result = self._answer_shared(turn, self.replicas)
        result.slack_calls = dict(sorted(reads.items()))
        return result

    def _answer_shared(self, turn: Turn, replicas: Replicas) -> TurnResult:
        key = turn_id(turn)
        with self.lock:
            resume = self._resume.pop(key, None)
        try:
            with replicas.answering(turn):
                if resume is not None and resume.parts is not None:
                    # Answered before (here or elsewhere), not all confirmed posted.
                    result = TurnResult(turn=turn, reply="\n\n".join(resume.parts))
                    result.reply_ts = self._deliver(
                        turn,
                        list(resume.parts),
                        dict(resume.posted),
                        check_thread=True,
                        streaming=dict(resume.streaming),
                    )
                    return result
                return self._answer(turn, check_thread=resume is not None and resume.taken_over)
        except Exception as error:
            if not replicas.lost(error):
                raise
            # Not failed, not answered: it stays in the queue (Redis back, another replica).
            logger.warning("left %s to the shared queue: %s", key, error)
            return TurnResult(turn=turn, error=f"left to the queue: {error}")
        finally:
            with self.lock:
                self._in_flight.discard(key)

    def _context(self, turn: Turn) -> BuiltContext | None:
        """The one place a turn's context is built, with the settings the responder plans for
        it (a recipe's budgets) known before."""
        settings = None
        if isinstance(self.responder, PlansContext):
            settings = self.responder.context_settings(turn)
        return self.engine.context_for(
            turn.channel, turn.anchor_ts, settings=settings, viewed=turn.viewed_channel
        )

    def _respond(self, turn: Turn, result: TurnResult) -> Answer | None:
        """The responder's answer over the turn's context (kept on ``result``); None when the
        mentioned message is not in the channel history. A session compacted before sending
        asks for its context again: each compaction folds turns away, so this ends."""
        while True:
            result.context = self._context(turn)
            if result.context is None:
                return None
            try:
                return self.responder.respond(turn, result.context)
            except StaleContext:
                continue

    def _answer(self, turn: Turn, *, check_thread: bool = False) -> TurnResult:
        result = TurnResult(turn=turn)
        key = turn_id(turn)
        show_working(self.client, turn, on=True)
        set_title(self.client, turn)
        turn, refused = may_view(turn, self.membership, self.engine.names)
        result.turn = turn  # as answered: without a channel the user may not read
        try:
            # No lock here: the engine never holds its own across a Slack call, so a
            # rate-limit wait in this answer does not stop intake of other events.
            answer = self._respond(turn, result)
            if answer is None:
                result.error = "the mentioned message is not in the channel history"
                self.turns.finish(key)
                return result
            result.reply, result.tool_calls, result.usage = (
                answer.text,
                answer.tool_calls,
                answer.usage,
            )
            result.sent, result.request_tokens = answer.sent, answer.request_tokens
            result.limits, result.playbook_ids = answer.limits, answer.playbook_ids
            if answer.usage:
                with self.lock:
                    self.last_usage[turn.channel] = dict(answer.usage)
            text = answer.text
            if text and refused:
                text = f"_{refused}_\n\n{text}"
                result.reply = text  # what the user sees, note included
            if self._given_up(turn):
                logger.warning("dropped the late answer of %s (already told it failed)", key)
            elif text:
                # Slack renders the Markdown itself; long answers go out as several
                # messages, split where a reader would split.
                result.reply_ts = self._deliver(
                    turn, split_markdown(text), {}, check_thread=check_thread
                )
            else:
                self.turns.finish(key)
            if self.playbooks is not None:  # after the answer is out: learning never delays it
                self.playbooks.after_answer(
                    turn.context_channel, key, turn.anchor_ts, answer.playbook_ids, text
                )
        except Exception as error:
            if self.replicas is not None and self.replicas.lost(error):
                raise  # not this answer's failure: the turn stays queued
            if isinstance(error, SlackApiError):  # Slack's refusal, not our bug: one line
                logger.warning("answer failed in %s: Slack said %s", key, error.response["error"])
            else:
                logger.exception("answer failed in %s/%s", turn.channel, turn.thread_ts)
            result.error = f"{type(error).__name__}: {error}"
            # Our own errors say what happened in words; anything else by its name only.
            if not self._given_up(turn):
                self._fail(
                    turn, str(error) if isinstance(error, ChanctxError) else type(error).__name__
                )
        finally:
            show_working(self.client, turn, on=False)
            with self.lock:
                self._in_flight.discard(key)
        return result

    def _stuck(self, turn: Turn) -> None:
        """A turn past its deadline: the runner gave its worker to others; the asker is told
        (off the runner's watch thread: a post can be slow too), and whatever the stuck answer
        still produces is never posted."""
        key = turn_id(turn)
        with self.lock:
            self._abandoned[key] = True
            self._in_flight.discard(key)
        reason = f"the answer took longer than {self.turn_deadline or 0:g} s"
        threading.Thread(
            target=self._fail, args=(turn, reason), name="chanctx-stuck", daemon=True
        ).start()

    def _given_up(self, turn: Turn) -> bool:
        with self.lock:
            return turn_id(turn) in self._abandoned

    def _deliver(
        self,
        turn: Turn,
        parts: list[str],
        posted: dict[int, str],
        *,
        check_thread: bool = False,
        streaming: dict[int, str] | None = None,
        buttons: bool = True,
        stream: bool = True,
    ) -> list[str]:
        """Write the answer to the outbox, deliver each part not yet posted (streamed where
        Slack lets us), then finish. The last part of an answer carries the feedback buttons."""
        key = turn_id(turn)
        self.turns.write_reply(key, parts)
        last = len(parts) - 1
        blocks = {last: [feedback_block(key)]} if buttons else {}

        def done(index: int, ts: str) -> None:
            posted[index] = ts
            self.turns.mark_posted(key, index, ts)
            if self.feedback is not None:
                self.feedback.record_answer(turn.channel, ts, key)

        if check_thread:  # after a crash: what did we post before the journal heard of it?
            scan = self.poster.scan(turn.channel, turn.thread_ts, key, after_ts=turn.anchor_ts)
            for part, ts in scan.found.items():
                done(part, ts)
            started = {p: ts for p, ts in (streaming or {}).items() if p not in posted}
            known = set(posted.values()) | set(started.values())
            orphans = [ts for ts in scan.orphans if ts not in known]
            missing = [i for i in range(len(parts)) if i not in posted and i not in started]
            if orphans and missing:  # a stream started just before the crash, not journaled
                started[missing[0]] = orphans[0]
            for index, ts in sorted(started.items()):  # finish or replace, never post again
                done(index, self.poster.replace(turn.channel, ts, parts[index], turn_id=key,
                                                part=index, buttons=blocks.get(index, ()),
                                                thread_ts=turn.thread_ts))  # fmt: skip
        for index, text in enumerate(parts):
            if index not in posted and not stream:
                done(index, self.poster.post(turn.channel, turn.thread_ts, text, turn_id=key,
                                             part=index, buttons=blocks.get(index, ())))  # fmt: skip
            elif index not in posted:
                ts = self.poster.deliver(
                    turn.channel, turn.thread_ts, text, turn_id=key, part=index,
                    recipient=(turn.team or self.team_id, turn.user), after_ts=turn.anchor_ts,
                    buttons=blocks.get(index, ()), on_started=self._journal_stream(key, index),
                )  # fmt: skip
                done(index, ts)
        self.turns.finish(key)
        return [posted[i] for i in sorted(posted)]

    def _journal_stream(self, key: str, part: int) -> Callable[[str], None]:
        """What the poster calls once a part's stream has a ts (before any text follows)."""
        return lambda ts: self.turns.mark_streaming(key, part, ts)

    def _fail(self, turn: Turn, reason: str) -> None:
        """An honest reply when the answer failed; the turn is done either way, so a broken
        question cannot fail again on every restart."""
        key = turn_id(turn)
        try:
            # Posted, not streamed: a stream that failed the answer must not fail this too.
            self._deliver(
                turn, [_FAILURE_TEXT.format(reason=reason)], {}, buttons=False, stream=False
            )
        except SlackApiError:
            logger.warning(
                "could not post the failure notice in %s/%s", turn.channel, turn.thread_ts
            )
            self.turns.finish(key)
