"""Compaction of a thread's session: when a request would reach the threshold of the context
window, the oldest turns are folded into a digest (trimmed, or summarized by one more call), and
the fold is written to the session's log; the session then reloads from the log."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from chanctx.bot.claude.session_state import SessionSettings, SessionState
from chanctx.context import TokenCounter
from chanctx.manifest_store import CompactionEntry, needs_compaction, summarize_request, trim

if TYPE_CHECKING:
    import anthropic

__all__ = ["fold_old_turns", "used_tokens"]

logger = logging.getLogger("chanctx.session")


def used_tokens(usage: Any) -> int:
    """Every token a response's usage counts: what the next request starts from."""
    return sum(
        int(getattr(usage, n, 0) or 0)
        for n in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    )


def fold_old_turns(
    session: SessionState,
    size: int,
    *,
    settings: SessionSettings,
    counter: TokenCounter,
    create: Callable[[dict[str, Any]], anthropic.types.Message],
    clock: Callable[[], float],
) -> bool:
    """Fold old turns into a digest if ``size`` tokens reach the threshold; True if done."""
    """Fold old turns into a digest if ``size`` tokens reach the threshold; True if done."""
    if settings.compaction == "off" or not needs_compaction(
        size, settings.context_window, settings.compaction_threshold
    ):
        return False
    keep = session.keep_turns if session.keep_turns else settings.keep_turns
    result = trim(session.messages, keep_turns=keep, counter=counter)
    if not result.compacted:
        return False  # nothing old enough to fold away yet
    strategy: Literal["trim", "summarize"] = "trim"
    if settings.compaction == "summarize":
        logger.info("compacting %s with an explicit summarize call", session.key)
        summary = create(
            {
                "model": settings.model,
                "max_tokens": 1_024,
                "system": "Summarize this Slack thread conversation for your own later reference.",
                "messages": [{"role": "user", "content": summarize_request(result.replaced)}],
            }
        )
        text = "\n".join(b.text for b in summary.content if b.type == "text").strip()
        if text:
            result, strategy = result.summarized(text), "summarize"
    session.log.append(
        CompactionEntry(
            at=clock(),
            strategy=strategy,
            digest=result.digest,
            replaced_through_turn=result.replaced_through_turn,
            tokens_before=size,
            tokens_after=counter.count(result.digest),
        )
    )
    logger.info("compacted %s (%s): %d tokens before", session.key, strategy, size)
    return True
