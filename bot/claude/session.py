"""One Claude session per Slack thread, on the Messages API.

First turn: the system prompt (seed 003's CHANNEL CONTEXT) and the recipe's blocks, then the
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
from typing import Any, Literal

import anthropic
from cachetools import LRUCache
from chanctx.bot.channel_view import EngineView
from chanctx.bot.claude.answers import Answer, SentBlock, ToolCall, Turn
from chanctx.bot.claude.conversation import (
    CONTEXT_BLOCK_HEAD,
    CUT_OFF,
    CUT_OFF_EMPTY,
    EMPTY_ANSWER,
    LAST_SEEN,
    THREAD_PREFIX,
    final_text,
    last_answer,
    last_turns,
    package_end,
    with_breakpoints,
)
from chanctx.bot.claude.prompt import CONTEXT_HEADER, system_prompt
from chanctx.bot.claude.recipe_runner import RecipeRunner
from chanctx.bot.claude.request_fit import estimate_tokens, fit_request
from chanctx.bot.claude.request_rules import NO_ANSWER, check_request, repaired
from chanctx.bot.claude.scratchpad import (
    SCRATCHPAD_READ,
    SCRATCHPAD_TOOL,
    Scratchpad,
)
from chanctx.bot.claude.session_media import (
    Attached,
    Located,
    MediaAttacher,
    MediaSource,
    thread_media,
)
from chanctx.bot.claude.session_state import (
    DEFAULT_MODEL,
    SessionSettings,
    SessionState,
    ToolLoop,
    add_usage,
    held_in_package,
)
from chanctx.bot.engine import BuiltContext, ContextEngine
from chanctx.bot.playbooks import ChannelPlaybooks
from chanctx.context import (
    ChanctxError,
    Fitted,
    Message,
    Names,
    TokenCounter,
    default_counter,
    render_slack_text,
    wire_json,
)
from chanctx.context.recipe import DEFAULT_PLAYBOOK_BUDGET
from chanctx.manifest_store import (
    AttachmentManifest,
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    SessionKey,
    SessionLogs,
    SessionStarted,
    needs_compaction,
    rebuild,
    summarize_request,
    trim,
)
from chanctx.tools import ChannelTools, ToolResult

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
        client: anthropic.Anthropic,
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
        if session.last_answer is not None and session.last_answer[0] == turn.anchor_ts:
            # Answered and logged, then the process died before the answer was queued to
            # post: the same answer again, without a second request or a second log entry.
            text = session.last_answer[1]
            return Answer(text=EMPTY_ANSWER if text in ("", NO_ANSWER) else text)
        fitted = self._load_recipe(session, turn)
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
            context = self._fresh_context(turn, context, fitted)
            package = self._package(context, fitted)
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
            delta = self._delta(turn, session)
            blocks += delta
            sent += [
                SentBlock("delta", "thread delta", self.counter.count(b["text"])) for b in delta
            ]
        media = self._media_blocks(session, turn, attaching=attaching)
        blocks += media.blocks
        sent += [SentBlock("media", b.get("type", "media"), 0) for b in media.blocks]
        blocks.append({"type": "text", "text": self._question(context)})
        history = [*past, {"role": "user", "content": blocks}]
        # What this request would cost, estimated before sending: the inspector's total bar,
        # and the compaction trigger.
        size = estimate_tokens({"system": system, "messages": history}, self.counter.count)
        if session.messages:
            # Compact before sending, never after a 400: the estimate of what this request
            # would cost decides, then the turn is built again on the compacted session.
            try:
                compacted = self._compact(session, size)
            except (anthropic.APIError, ChanctxError) as error:
                logger.warning("compaction of %s failed before sending: %s", session.key, error)
                compacted = False
            if compacted:
                return self._respond(session, turn, context)
        loop = self._tool_loop(session, turn, system, history)
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
        # Seed 000's framing: each block says which source it is, so Claude (and a reader of
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

    def _tool_result(
        self,
        session: SessionState,
        turn: Turn,
        call: Any,
        outcome: ToolResult,
        loop: ToolLoop,
    ) -> dict[str, Any]:
        """A tool result; a media request that succeeded also carries the file itself."""
        block = outcome.as_block(call.id)
        wanted = call.input.get("media_artifact_id") if isinstance(call.input, dict) else None
        if self.media is None or call.name != "channel_messages" or outcome.is_error or not wanted:
            return block
        found = self.engine.find_file(turn.context_channel, str(wanted))
        if found is None:
            return block
        message, ref = found
        located = Located(ref, message.ts, message.root_ts if message.thread_ts else None)
        attached = self.media.attach([located], session.manifest, turn=session.turn + 1)
        loop.manifest_changed = loop.manifest_changed or attached.manifest_changed
        block["content"] = [{"type": "text", "text": outcome.content}, *attached.blocks]
        return block

    def _tool_loop(
        self,
        session: SessionState,
        turn: Turn,
        system: list[dict[str, Any]],
        history: list[dict[str, Any]],
    ) -> ToolLoop:
        """Ask Claude, run the tools it calls, until it answers or the rounds run out."""
        tools = ChannelTools(
            EngineView(
                self.engine,
                turn.context_channel,
                hidden={turn.anchor_ts},
                held=session.held,
                fetch_budget=self.settings.slack_fetches_per_turn,
            ),
            names=self.engine.names,
            counter=self.counter,
            output_budget_tokens=self.settings.tool_output_budget,
            now=self.clock,
        )
        definitions = [*tools.definitions(), SCRATCHPAD_TOOL]
        definitions[-1] = {**definitions[-1], "cache_control": self._cache_marker}
        loop = ToolLoop(messages=[history[-1]])
        request_messages = list(history)
        for iteration in range(self.settings.max_tool_iterations + 1):
            last_round = iteration == self.settings.max_tool_iterations
            request: dict[str, Any] = {
                "model": self.settings.model,
                "max_tokens": self.settings.max_tokens,
                "system": system,
                "tools": definitions,
                "messages": with_breakpoints(request_messages, self._cache_marker),
            }
            if last_round:  # after the last allowed round of tools, ask for the answer itself
                request["tool_choice"] = {"type": "none"}
            left_out = fit_request(
                request,
                count=self.counter.count,
                token_budget=int(self.settings.context_window * self.settings.compaction_threshold),
            )
            if left_out:
                logger.info("left %d attachments out of a request: %s", len(left_out), left_out)
            response = self._create(request)
            add_usage(loop.usage, response.usage)
            loop.last_usage, loop.stop_reason = response.usage, response.stop_reason
            assistant = {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in response.content],
            }
            request_messages.append(assistant)
            loop.messages.append(assistant)
            if response.stop_reason != "tool_use" or last_round:
                return loop
            results = []
            for block in response.content:
                if block.type == "tool_use":
                    outcome = self._run_tool(session, tools, block.name, block.input)
                    loop.calls.append(
                        ToolCall(block.name, block.input, outcome.content, outcome.is_error)
                    )
                    results.append(self._tool_result(session, turn, block, outcome, loop))
            tool_message = {"role": "user", "content": results}
            request_messages.append(tool_message)
            loop.messages.append(tool_message)
        return loop

    def _run_tool(
        self, session: SessionState, tools: ChannelTools, name: str, tool_input: object
    ) -> ToolResult:
        """A channel tool's result, bulky ones set aside in the scratchpad; or a page of it."""
        if session.scratchpad is None:
            session.scratchpad = Scratchpad(
                self.counter.count, threshold=self.settings.scratchpad_threshold
            )
        if name == SCRATCHPAD_READ:
            return session.scratchpad.read(tool_input)
        outcome = tools.call(name, tool_input)
        if outcome.is_error or name not in self.settings.scratchpad_tools:
            return outcome
        return ToolResult(session.scratchpad.set_aside(name, outcome.content))

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
        except (anthropic.APIError, ChanctxError) as error:
            # The answer is already logged; compaction is tried again after the next turn.
            logger.warning("compaction of %s failed, answering anyway: %s", session.key, error)

    def _create(self, request: dict[str, Any]) -> anthropic.types.Message:
        # Plain dicts are what is logged and replayed; the SDK's TypedDicts describe the same.
        create: Callable[..., anthropic.types.Message] = self.client.messages.create
        check_request(request)  # every request, the summarizing one too, obeys the documented rules
        deadline = _DEADLINE.get()
        if deadline is None:
            return create(**request)
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClaudeDeadline(self.settings.deadline_seconds)
        try:
            return create(**request, timeout=left)
        except anthropic.APITimeoutError as error:
            raise ClaudeDeadline(self.settings.deadline_seconds) from error

    # -- the parts of a user message ------------------------------------------------------

    def _fresh_context(
        self, turn: Turn, context: BuiltContext, fitted: Fitted | None
    ) -> BuiltContext:
        """Rebuild with the recipe's budgets when they differ from the engine's defaults."""
        if fitted is None:
            return context
        settings = replace(
            self.engine.settings,
            snapshot_budget=fitted.snapshot_budget or self.engine.settings.snapshot_budget,
            thread_budget=fitted.thread_budget or self.engine.settings.thread_budget,
            window=fitted.snapshot_window or self.engine.settings.window,
        )
        if settings == self.engine.settings:
            return context
        rebuilt = self.engine.context_for(
            turn.channel, turn.anchor_ts, settings=settings, viewed=turn.viewed_channel
        )
        return rebuilt or context

    def _package(self, context: BuiltContext, fitted: Fitted | None) -> list[dict[str, Any]]:
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
                    "\nChannelSnapshot (JSON):\n" + wire_json(context.snapshot)
                    if with_snapshot
                    else ""
                ),
            }
        ]
        if with_thread and context.thread is not None:
            blocks.append({"type": "text", "text": THREAD_PREFIX + wire_json(context.thread)})
        return blocks

    def _delta(self, turn: Turn, session: SessionState) -> list[dict[str, Any]]:
        """The replies others posted in this thread since our last turn, one line each."""
        newer = [
            m
            for m in self.engine.replies_since(turn.channel, turn.thread_ts, session.last_seen_ts)
            if not m.is_self and m.ts != turn.anchor_ts
        ]
        if not newer:
            return []
        lines = [self._line(m, self.engine.names) for m in newer]
        return [
            {
                "type": "text",
                "text": "New in this thread since your last answer:\n" + "\n".join(lines),
            }
        ]

    def _question(self, context: BuiltContext) -> str:
        anchor = context.snapshot.anchor
        return f"[{anchor.ts}] {anchor.author.display_name}: {anchor.text}"

    @staticmethod
    def _line(message: Message, names: Names) -> str:
        from chanctx.context.timestamps import iso_from_ts

        author = names.users.get(message.user_id) or message.author_name or message.user_id
        text = " ".join(
            render_slack_text(message.text, users=names.users, channels=names.channels).split()
        )
        return f"[{iso_from_ts(message.ts)}] {author}: {text}"

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
        if last_usage is None:
            return
        size = sum(
            int(getattr(last_usage, n, 0) or 0)
            for n in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            )
        )
        self._compact(session, size)

    def _compact(self, session: SessionState, size: int) -> bool:
        """Fold old turns into a digest if ``size`` tokens reach the threshold; True if done."""
        if self.settings.compaction == "off" or not needs_compaction(
            size, self.settings.context_window, self.settings.compaction_threshold
        ):
            return False
        keep = session.keep_turns if session.keep_turns else self.settings.keep_turns
        result = trim(session.messages, keep_turns=keep, counter=self.counter)
        if not result.compacted:
            return False  # nothing old enough to fold away yet
        strategy: Literal["trim", "summarize"] = "trim"
        if self.settings.compaction == "summarize":
            logger.info("compacting %s with an explicit summarize call", session.key)
            summary = self._create(
                {
                    "model": self.settings.model,
                    "max_tokens": 1_024,
                    "system": "Summarize this Slack thread conversation for your own later "
                    "reference.",
                    "messages": [{"role": "user", "content": summarize_request(result.replaced)}],
                }
            )
            text = "\n".join(b.text for b in summary.content if b.type == "text").strip()
            if text:
                result, strategy = result.summarized(text), "summarize"
        session.log.append(
            CompactionEntry(
                at=self.clock(),
                strategy=strategy,
                digest=result.digest,
                replaced_through_turn=result.replaced_through_turn,
                tokens_before=size,
                tokens_after=self.counter.count(result.digest),
            )
        )
        logger.info("compacted %s (%s): %d tokens before", session.key, strategy, size)
        # The log is the truth: the next turn re-attaches fresh context.
        self._load(session, session.log.entries())
        return True
