"""ChannelTools: Claude's two tools, bound to one channel for the life of a session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chanctx.context import BudgetError, Names, TokenCounter, default_counter
from chanctx.tools._context_tool import run_channel_context
from chanctx.tools._definitions import CHANNEL_CONTEXT, CHANNEL_MESSAGES, definitions
from chanctx.tools._env import Env, ToolResult
from chanctx.tools._inputs import ChannelContextInput, ChannelMessagesInput, parse_input, short_repr
from chanctx.tools._messages_tool import run_channel_messages
from chanctx.tools._ranking import Ranking
from chanctx.tools._view import ChannelView

__all__ = ["DEFAULT_OUTPUT_BUDGET", "MIN_OUTPUT_BUDGET", "ChannelTools"]

DEFAULT_OUTPUT_BUDGET = 4_000
# Below this not even one short result with its note and coverage is guaranteed to fit.
MIN_OUTPUT_BUDGET = 300


class ChannelTools:
    """``channel_context`` and ``channel_messages`` over one :class:`ChannelView`.

    The channel is the view's and is fixed here: no argument of either tool can name another
    one. ``call`` never raises for bad input; it answers with ``is_error=True`` and a sentence
    saying what was wrong. Every successful answer's JSON counts at most
    ``output_budget_tokens`` with ``counter``. ``now`` (seconds since the epoch) anchors
    recency; without it the newest message does, which keeps replays deterministic.
    ``ranking`` sets channel_context's weights (``tools._search.Ranking``; the defaults are
    the tuned ones).
    """

    def __init__(
        self,
        view: ChannelView,
        *,
        names: Names,
        counter: TokenCounter | None = None,
        output_budget_tokens: int = DEFAULT_OUTPUT_BUDGET,
        now: Callable[[], float] | None = None,
        ranking: Ranking | None = None,
    ) -> None:
        if isinstance(output_budget_tokens, bool) or output_budget_tokens < MIN_OUTPUT_BUDGET:
            raise BudgetError(
                f"output_budget_tokens must be >= {MIN_OUTPUT_BUDGET}, got {output_budget_tokens!r}"
            )
        self._env = Env(
            view=view,
            names=names,
            counter=counter or default_counter(),
            budget=output_budget_tokens,
            now=now,
            ranking=ranking or Ranking(),
        )

    @property
    def channel(self) -> str:
        return self._env.channel

    @staticmethod
    def definitions() -> list[dict[str, Any]]:
        """Both tools' definitions for the Messages API ``tools`` parameter."""
        return definitions()

    def call(self, name: str, tool_input: object) -> ToolResult:
        """Run tool ``name`` with the ``input`` of Claude's ``tool_use`` block."""
        if name == CHANNEL_CONTEXT:
            parsed_context = parse_input(ChannelContextInput, name, tool_input)
            if isinstance(parsed_context, str):
                return ToolResult(parsed_context, is_error=True)
            return run_channel_context(self._env, parsed_context)
        if name == CHANNEL_MESSAGES:
            parsed_messages = parse_input(ChannelMessagesInput, name, tool_input)
            if isinstance(parsed_messages, str):
                return ToolResult(parsed_messages, is_error=True)
            return run_channel_messages(self._env, parsed_messages)
        return ToolResult(
            f"Unknown tool {short_repr(name)}: the tools are {CHANNEL_CONTEXT} and "
            f"{CHANNEL_MESSAGES}.",
            is_error=True,
        )
