"""One Claude session per Slack thread, on the Messages API.

First turn: the system prompt (how to read the CHANNEL CONTEXT) and the recipe's blocks, then the
ChannelSnapshot and ThreadContext JSON as content blocks, attached once. Later turns send only
what is new: the replies others posted in the thread since our last answer, and the question.
The Messages API is stateless, so the earlier turns are sent again, but behind ``cache_control``
breakpoints (tools, system, the context package, the conversation so far) they are read from
the prompt cache instead of paid for again.

Every turn is appended to the session's log (``manifest_store``) only once it has succeeded, so
a failed call loses nothing: the unanswered question reaches the next turn as thread delta.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache
from chanctx.bot.claude.compaction import fold_old_turns, used_tokens
from chanctx.bot.claude.conversation import (
    CONTEXT_BLOCK_HEAD,
    CUT_OFF,
    CUT_OFF_EMPTY,
    EMPTY_ANSWER,
    LAST_SEEN,
    context_package,
    final_text,
    last_answer,
    last_turns,
    package_end,
    question,
    thread_delta,
)
from chanctx.bot.claude.prompt import system_prompt
from chanctx.bot.claude.session_media import (
    Attached,
    MediaAttacher,
    MediaSource,
    thread_media,
)
from chanctx.bot.claude.session_state import (
    DEFAULT_MODEL,
    SessionSettings,
    SessionState,
    ToolLoop,
    held_in_package,
)
from chanctx.bot.claude.tool_rounds import ToolRounds
from chanctx.bot.core.built_context import BuiltContext, ContextSettings
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.recipe_runner import RecipeRunner
from chanctx.bot.core.turns import Answer, SentBlock, StaleContext, Turn
from chanctx.bot.messages_api.request_fit import estimate_tokens
from chanctx.bot.messages_api.request_rules import NO_ANSWER, check_request, repaired
from chanctx.bot.messages_api.sdk import DeferredClient, api_error, resolved, timeout_error
from chanctx.bot.playbooks.channel_playbooks import ChannelPlaybooks
from chanctx.context import (
    DEFAULT_ADJACENT_WINDOW,
    DEFAULT_SNAPSHOT_BUDGET,
    DEFAULT_THREAD_BUDGET,
    ChanctxError,
    Fitted,
    TokenCounter,
    default_counter,
)
from chanctx.context.recipe import DEFAULT_PLAYBOOK_BUDGET
from chanctx.manifest_store import (
    AttachmentManifest,
    CustomEntry,
    Entry,
    MessageEntry,
    SessionKey,
    SessionLogs,
    SessionStarted,
    rebuild,
)

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_MODEL", "ClaudeResponder", "SessionSettings"]

logger = logging.getLogger("chanctx.session")

# Slack threads are answered minutes to hours apart: with the default 5-minute lifetime the
# conversation would be rewritten to the cache almost every turn, so the hour is the default.
_CACHE_TTLS = ("5m", "1h")
_ATTACHED = "chanctx:context-attached"
_RECIPE = "chanctx:recipe"
# What the attached package holds (messages in full, playbook bullets): a session resumed after
# a restart, or on another replica, needs them as the one that attached it did.
_PACKAGE = "chanctx:package"

_MAX_SESSIONS = 256  # active threads; an evicted session resumes from its log
_DEADLINE: ContextVar[float | None] = ContextVar("chanctx_claude_deadline", default=None)


class ClaudeDeadline(ChanctxError):
    """The turn took longer than its deadline with Claude."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"Claude did not answer within {seconds:g} s")


class ClaudeResponder:
    """The Responder that answers with Claude; one session per Slack thread."""

    def __init__(
        self,
        client: anthropic.Anthropic | DeferredClient,
        *,
        engine: ContextEngine,
        store: SessionLogs,
        team: str,
        recipe: RecipeRunner | None = None,
        media: MediaSource | None = None,
        settings: SessionSettings | None = None,
        counter: TokenCounter | None = None,
        clock: Callable[[], float] = time.time,
        playbooks: ChannelPlaybooks | None = None,
    ) -> None:
        self.client = client
        self.engine = engine
        self.store = store
        self.team = team or "T0"
        self.recipe = recipe
        self.playbooks = playbooks
        self.media = MediaAttacher(media) if media is not None else None
        self.settings = settings or SessionSettings()
        self.counter = counter or default_counter(self.settings.model)
        self.clock = clock
        # The sessions of recently active threads; an evicted one resumes from its log.
        self._sessions: LRUCache[SessionKey, SessionState] = LRUCache(maxsize=_MAX_SESSIONS)
        self._guard = threading.Lock()

    @property
    def _cache_marker(self) -> dict[str, str]:
        return {"type": "ephemeral", "ttl": self.settings.cache_ttl}

    # -- sessions ---------------------------------------------------------------------------

    def forget(self, channel: str, thread_ts: str) -> bool:
        """Drop a thread's session: its log, its attachments manifest (in the log) and the
        copy in memory. The next mention there starts a new session. True if there was one."""
        key = SessionKey(team=self.team, channel=channel, thread_ts=thread_ts)
        with self._guard:
            held = self._sessions.pop(key, None)
        if held is None:
            return self.store.forget(key)
        with held.lock:  # an answer running in that thread finishes first
            return self.store.forget(key) or True

    def _session(self, turn: Turn) -> SessionState:
        key = SessionKey(team=self.team, channel=turn.channel, thread_ts=turn.thread_ts)
        with self._guard:
            held = self._sessions.get(key)
            # Replicas: another one may have answered in this thread since; its log says so.
            if held is not None and not held.log.changed_elsewhere():
                return held
            session = SessionState(key=key, log=self.store.open(key))
            entries = session.log.entries()
            if entries:  # a restarted bot resumes where the log ends
                self._load(session, entries)
            else:
                session.log.append(
                    SessionStarted(
                        at=self.clock(),
                        session_id=f"{key.channel}-{key.thread_ts}",
                        model=self.settings.model,
                        team=key.team,
                        channel=key.channel,
                        thread_ts=key.thread_ts,
                    )
                )
            self._sessions[key] = session
            return session

    def _load(self, session: SessionState, entries: list[Entry]) -> None:
        state = rebuild(entries)
        session.last_answer = last_answer(entries)
        session.messages = repaired(state.messages)  # a log from before the repair, too
        session.turn = state.turn
        session.context_attached = state.context_attached_turn is not None
        session.last_seen_ts = (state.custom.get(LAST_SEEN) or {}).get("ts")
        recipe = state.custom.get(_RECIPE)
        session.recipe_texts = (
            list(recipe["texts"]) if recipe and session.context_attached else None
        )
        session.keep_turns = recipe.get("keep_turns") if recipe else None
        if session.keep_turns == 0:  # no journal: each turn stands alone, even after a restart
            session.messages, session.context_attached = [], False
        session.manifest = AttachmentManifest.from_state(state)
        session.reattach_media = state.post_compaction
        package = state.custom.get(_PACKAGE) if session.context_attached else None
        if package:
            session.held = frozenset(str(ts) for ts in package.get("held") or ())
            session.playbook_ids = [str(i) for i in package.get("playbook") or ()]

    # -- one turn ---------------------------------------------------------------------------

    def context_settings(self, turn: Turn) -> ContextSettings | None:
        """The settings this turn's context is built with: the recipe's budgets when the turn
        attaches a fresh context under a recipe and they differ from the engine's, else None.
        The recipe read here is the one the turn is then answered with."""
        session = self._session(turn)
        with session.lock:
            if self._answered_already(session, turn):
                session.planned = None
                return None
            session.planned = self._load_recipe(session, turn)
            return self._recipe_settings(session.planned)

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        session = self._session(turn)
        # One deadline for the whole turn, every request and tool round included: a hung or
        # slow model ends in an honest failure reply instead of holding a worker.
        token = _DEADLINE.set(time.monotonic() + self.settings.deadline_seconds)
        try:
            with session.lock:
                return self._respond(session, turn, context)
        finally:
            _DEADLINE.reset(token)

    def _respond(self, session: SessionState, turn: Turn, context: BuiltContext) -> Answer:
        if self._answered_already(session, turn) and session.last_answer is not None:
            # Answered and logged, then the process died before the answer was queued to
            # post: the same answer again, without a second request or a second log entry.
            text = session.last_answer[1]
            return Answer(text=EMPTY_ANSWER if text in ("", NO_ANSWER) else text)
        fitted, session.planned = session.planned, None  # read by context_settings
        system = self._system(session)
        past = last_turns(session.messages, session.keep_turns)
        # The recipe's journal keeps the last N turns; once the turn carrying the context
        # package slides out of them, this turn carries a fresh one.
        slid_out = session.context_attached and not any(
            m["role"] == "user" and package_end(m) is not None for m in past
        )
        attaching = not session.context_attached or slid_out
        blocks: list[dict[str, Any]] = []
        sent: list[SentBlock] = [
            SentBlock("recipe", b.name, b.tokens) for b in (fitted.blocks if fitted else ())
        ]
        if attaching:
            package = context_package(context, fitted)
            blocks += package
            session.held = held_in_package(context, fitted)
            sent += [
                SentBlock(kind, kind, self.counter.count(b["text"]))
                for kind, b in zip(("snapshot", "thread"), package, strict=False)
            ]
            playbook = self._playbook(session, turn, fitted)
            if playbook:  # part of the package: attached once, read from the cache after
                blocks.append({"type": "text", "text": playbook})
                sent.append(SentBlock("playbook", "playbook", self.counter.count(playbook)))
        else:
            delta = thread_delta(self.engine, turn, session)
            blocks += delta
            sent += [
                SentBlock("delta", "thread delta", self.counter.count(b["text"])) for b in delta
            ]
        media = self._media_blocks(session, turn, attaching=attaching)
        blocks += media.blocks
        sent += [SentBlock("media", b.get("type", "media"), 0) for b in media.blocks]
        blocks.append({"type": "text", "text": question(context)})
        history = [*past, {"role": "user", "content": blocks}]
        # What this request would cost, estimated before sending: the inspector's total bar,
        # and the compaction trigger.
        size = estimate_tokens({"system": system, "messages": history}, self.counter.count)
        if session.messages:
            # Compact before sending, never after a 400: the estimate of what this request
            # would cost decides, then the turn is built again on the compacted session.
            try:
                compacted = self._compact(session, size)
            except (api_error(), ChanctxError) as error:
                logger.warning("compaction of %s failed before sending: %s", session.key, error)
                compacted = False
            if compacted:  # the next turn attaches fresh context: plan and build it again
                raise StaleContext(f"{session.key} compacted before sending")
        loop = ToolRounds(
            engine=self.engine,
            settings=self.settings,
            counter=self.counter,
            clock=self.clock,
            media=self.media,
            create=self._create,
            cache_marker=self._cache_marker,
        ).run(session, turn, system, history)
        loop.manifest_changed = loop.manifest_changed or media.manifest_changed
        # An empty end_turn, or a max_tokens stop inside a tool_use, leaves messages no later
        # request may carry: they are repaired before they are kept, and the user is told.
        loop.messages = repaired(loop.messages)
        text = final_text(loop.messages[-1])
        if text == NO_ANSWER:
            text = EMPTY_ANSWER if loop.stop_reason != "max_tokens" else CUT_OFF_EMPTY
        elif loop.stop_reason == "max_tokens":
            text += CUT_OFF.format(limit=self.settings.max_tokens)
        self._finish(session, turn, loop, attaching=attaching, recipe_loaded=fitted is not None)
        return Answer(
            text=text,
            tool_calls=loop.calls,
            usage=loop.usage,
            sent=sent,
            request_tokens=size,
            limits=self._limits(fitted),
            playbook_ids=list(session.playbook_ids),
        )

    def _playbook(self, session: SessionState, turn: Turn, fitted: Fitted | None) -> str:
        """The channel's playbook within the recipe's budget (the default one without a
        recipe), attached with the context; its bullet ids are kept for feedback."""
        budget = DEFAULT_PLAYBOOK_BUDGET if fitted is None else fitted.playbook_budget
        if self.playbooks is None or not budget:
            session.playbook_ids = []
            return ""
        text, session.playbook_ids = self.playbooks.for_session(turn.context_channel, budget)
        return text

    def _limits(self, fitted: Fitted | None) -> dict[str, int]:
        settings = self.settings
        recipe = 0
        if fitted is not None and fitted.total_max_tokens:
            budgets = (fitted.snapshot_budget or 0) + (fitted.thread_budget or 0)
            recipe = max(fitted.total_max_tokens - budgets, 0)
        return {
            "request": int(settings.context_window * settings.compaction_threshold),
            "tool_output": settings.tool_output_budget,
            "recipe": recipe,
        }

    def _load_recipe(self, session: SessionState, turn: Turn) -> Fitted | None:
        """Read the recipe when the context is (re-)attached, not on every turn."""
        if self.recipe is None or (session.context_attached and session.recipe_texts is not None):
            return None
        fitted = self.recipe.assemble(
            run_id=session.key.thread_ts, channel=turn.channel, thread_ts=turn.thread_ts
        )
        # Framing: each block says which source it is, so Claude (and a reader of
        # --requests-out) can tell the runbook from the computed status.
        session.recipe_texts = [
            f"{CONTEXT_BLOCK_HEAD}{b.name}\n\n{b.text}" for b in fitted.blocks if b.text.strip()
        ]
        session.keep_turns = fitted.journal_max_iterations
        if session.keep_turns == 0:  # no journal source: each turn stands alone
            session.messages, session.context_attached = [], False
        return fitted

    def _system(self, session: SessionState) -> list[dict[str, Any]]:
        system: list[dict[str, Any]] = [
            {"type": "text", "text": system_prompt(bot_user=self.engine.me.user_id)}
        ]
        system += [{"type": "text", "text": text} for text in session.recipe_texts or []]
        system[-1]["cache_control"] = self._cache_marker
        return system

    def _media_blocks(self, session: SessionState, turn: Turn, *, attaching: bool) -> Attached:
        """The thread's media for this turn: re-attached after a compaction, else (opt-in) new."""
        if self.media is None or not (session.reattach_media or self.settings.attach_media):
            return Attached(blocks=[])
        root, replies, _ = self.engine.thread(turn.channel, turn.thread_ts)
        files = thread_media(root or self.engine.message(turn.channel, turn.thread_ts), replies)
        if session.reattach_media:
            session.reattach_media = False
            return self.media.reattach(session.manifest, turn.thread_ts, files)
        if not attaching:  # later turns: only what was shared since the last answer
            seen = float(session.last_seen_ts or 0)
            files = [f for f in files if float(f.message_id) > seen]
        return self.media.attach(files, session.manifest, turn=session.turn + 1)

    def _finish(
        self,
        session: SessionState,
        turn: Turn,
        loop: ToolLoop,
        *,
        attaching: bool,
        recipe_loaded: bool,
    ) -> None:
        """Log the turn (only now that it succeeded), then compact if the window is filling."""
        self._commit(session, turn, loop.messages, attaching, loop.usage)
        if loop.manifest_changed:  # persisted after every turn that sent new media
            session.log.append(session.manifest.to_entry(at=self.clock()))
        if recipe_loaded:
            session.log.append(
                CustomEntry(
                    at=self.clock(),
                    custom_type=_RECIPE,
                    data={"texts": session.recipe_texts or [], "keep_turns": session.keep_turns},
                )
            )
        if attaching:
            session.log.append(
                CustomEntry(
                    at=self.clock(),
                    custom_type=_PACKAGE,
                    data={"held": sorted(session.held), "playbook": session.playbook_ids},
                )
            )
        if session.keep_turns == 0:
            session.messages, session.context_attached = [], False
        try:
            self._maybe_compact(session, loop.last_usage)
        except (api_error(), ChanctxError) as error:
            # The answer is already logged; compaction is tried again after the next turn.
            logger.warning("compaction of %s failed, answering anyway: %s", session.key, error)

    def _create(self, request: dict[str, Any]) -> anthropic.types.Message:
        # Plain dicts are what is logged and replayed; the SDK's TypedDicts describe the same.
        create: Callable[..., anthropic.types.Message] = resolved(self.client).messages.create
        check_request(request)  # every request, the summarizing one too, obeys the documented rules
        deadline = _DEADLINE.get()
        if deadline is None:
            return create(**request)
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClaudeDeadline(self.settings.deadline_seconds)
        try:
            return create(**request, timeout=left)
        except timeout_error() as error:
            raise ClaudeDeadline(self.settings.deadline_seconds) from error

    def _recipe_settings(self, fitted: Fitted | None) -> ContextSettings | None:
        """The engine's settings with the recipe's budgets, when they differ."""
        if fitted is None:
            return None
        # A budget the recipe leaves at its default gives way to the operator's setting (the
        # zero-config recipe must not undo --thread-budget / --snapshot-budget).
        own = self.engine.settings
        settings = replace(
            own,
            snapshot_budget=_chosen(
                fitted.snapshot_budget, DEFAULT_SNAPSHOT_BUDGET, own.snapshot_budget
            ),
            thread_budget=_chosen(fitted.thread_budget, DEFAULT_THREAD_BUDGET, own.thread_budget),
            window=_chosen(fitted.snapshot_window, DEFAULT_ADJACENT_WINDOW, own.window),
        )
        return None if settings == self.engine.settings else settings

    @staticmethod
    def _answered_already(session: SessionState, turn: Turn) -> bool:
        return session.last_answer is not None and session.last_answer[0] == turn.anchor_ts

    # -- durability ---------------------------------------------------------------------------

    def _commit(
        self,
        session: SessionState,
        turn: Turn,
        messages: list[dict[str, Any]],
        attached: bool,
        usage: dict[str, int],
    ) -> None:
        number = session.turn + 1
        now = self.clock()
        for message in messages:
            session.log.append(
                MessageEntry(
                    at=now,
                    role=message["role"],
                    content=message["content"],
                    turn=number,
                    usage=usage if message is messages[-1] else None,
                )
            )
        if attached:
            session.log.append(CustomEntry(at=now, custom_type=_ATTACHED, data={"turn": number}))
        session.log.append(CustomEntry(at=now, custom_type=LAST_SEEN, data={"ts": turn.anchor_ts}))
        session.messages.extend(messages)
        session.turn = number
        session.context_attached = True
        session.last_seen_ts = turn.anchor_ts
        session.last_answer = (turn.anchor_ts, final_text(messages[-1]))

    def _maybe_compact(self, session: SessionState, last_usage: Any) -> None:
        if last_usage is not None:
            self._compact(session, used_tokens(last_usage))

    def _compact(self, session: SessionState, size: int) -> bool:
        """Fold old turns into a digest if ``size`` tokens reach the threshold; True if done."""
        if not fold_old_turns(
            session,
            size,
            settings=self.settings,
            counter=self.counter,
            create=self._create,
            clock=self.clock,
        ):
            return False
        # The log is the truth: the next turn re-attaches fresh context.
        self._load(session, session.log.entries())
        return True


def _chosen(recipe: int | None, default: int, operator: int) -> int:
    return operator if recipe is None or recipe == default else recipe
