"""What every tool handler shares: the bound view, names, counter, budget; and ToolResult."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chanctx.context import Message, Names, TokenCounter
from chanctx.tools._ranking import Ranking
from chanctx.tools._view import ChannelView

__all__ = ["Env", "ToolResult", "not_found"]


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: compact JSON, or (``is_error``) one sentence saying what was wrong."""

    content: str
    is_error: bool = False

    def as_block(self, tool_use_id: str) -> dict[str, Any]:
        """The ``tool_result`` content block that answers the ``tool_use`` with this id."""
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.content,
            "is_error": self.is_error,
        }


def not_found(kind: str, ids: Sequence[str]) -> ToolResult:
    """The one answer for an id this channel does not hold, wherever else it may exist.

    Scoping is structural: the view can only read its channel, and this wording depends on
    nothing but the ids asked, so the answer cannot tell "elsewhere" from "nowhere".
    """
    if len(ids) == 1:
        return ToolResult(f"{kind} {ids[0]} not found in this channel", is_error=True)
    plural = "media artifacts" if kind == "media artifact" else f"{kind}s"
    return ToolResult(f"{plural} {', '.join(ids)} not found in this channel", is_error=True)


@dataclass(frozen=True)
class Env:
    view: ChannelView
    names: Names
    counter: TokenCounter
    budget: int
    now: Callable[[], float] | None
    ranking: Ranking = field(default_factory=Ranking)

    @property
    def channel(self) -> str:
        return self.view.channel

    def own(self, message: Message | None) -> Message | None:
        """``message`` if it is a live message of this channel (defence against a loose view)."""
        if message is None or message.channel != self.view.channel or message.deleted:
            return None
        return message

    def messages(self) -> list[Message]:
        """This channel's live messages, oldest to newest."""
        return [m for m in self.view.messages() if self.own(m) is not None]
