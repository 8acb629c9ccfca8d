"""One turn's rounds with Claude: ask, run the channel tools it calls, until it answers or the
rounds run out. A bulky tool output is set aside in the session's scratchpad; a file Claude asks
for by id is attached to the tool result itself. Every request is fitted to the window first."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chanctx.bot.claude.conversation import with_breakpoints
from chanctx.bot.claude.scratchpad import SCRATCHPAD_READ, SCRATCHPAD_TOOL, Scratchpad
from chanctx.bot.claude.session_media import Located, MediaAttacher
from chanctx.bot.claude.session_state import SessionSettings, SessionState, ToolLoop, add_usage
from chanctx.bot.core.channel_view import EngineView
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.turns import ToolCall, Turn
from chanctx.bot.messages_api.request_fit import fit_request
from chanctx.context import TokenCounter
from chanctx.tools import ChannelTools, ToolResult

if TYPE_CHECKING:
    import anthropic

__all__ = ["ToolRounds"]

logger = logging.getLogger("chanctx.session")


class ToolRounds:
    """The tool rounds of one session's turns (the session's engine, settings and client)."""

    def __init__(
        self,
        *,
        engine: ContextEngine,
        settings: SessionSettings,
        counter: TokenCounter,
        clock: Callable[[], float],
        media: MediaAttacher | None,
        create: Callable[[dict[str, Any]], anthropic.types.Message],
        cache_marker: dict[str, str],
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.counter = counter
        self.clock = clock
        self.media = media
        self._create = create
        self._cache_marker = cache_marker

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

    def run(
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
