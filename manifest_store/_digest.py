"""The deterministic digest that stands in for compacted turns.

One item per replaced turn, ``turn 4: asked "<who: first sentence>" (tools: a, b) -> answered
"<first sentence>"``, joined with "; " after the span marker. Items of an earlier digest are
carried over, so repeated compactions keep a running record; when the items do not fit the
budget the oldest go first and are folded into one ``turns 1-9: omitted`` item.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from chanctx.context import TokenCounter, snippet
from chanctx.manifest_store._blocks import (
    MessageParam,
    blocks_of,
    digest_body,
    digest_head,
    digest_span,
    is_context_block,
    leading_digest,
)

__all__ = ["MAX_DIGEST_TOKENS", "MIN_DIGEST_TOKENS", "build_digest", "content_tokens", "item_text"]

MAX_DIGEST_TOKENS: Final = 1_500
# A floor so a small compaction still keeps its newest turn's line (a question, the tools, the
# answer's first sentence: 60-120 tokens), not just "omitted"; compaction triggers at 80% of a
# window of 100k+ tokens, where a tenth of what is replaced is far above this.
MIN_DIGEST_TOKENS: Final = 160
_QUOTE_CHARS: Final = 160
_SUMMARY_CHARS: Final = 600

_SENTENCE_END: Final = re.compile(r"[.!?](?=\s)|\n")
_LEADING_TS: Final = re.compile(r"^\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[^\]]*\]\s*")
_RECOVERY: Final = "[Post-compaction context recovery"
_ITEM: Final = re.compile(
    r'turns? ([0-9]+)(?:-([0-9]+))?: (?:omitted|summarized "[^"]*"'
    r'|asked "[^"]*"(?: \(tools: [^)]*\))? -> answered "[^"]*")'
)


@dataclass(frozen=True)
class _Item:
    first: int
    last: int
    text: str


def _quote(text: str, limit: int = _QUOTE_CHARS) -> str:
    # Double quotes delimit items, so the quoted text never contains one.
    return '"' + (snippet(text, limit).replace('"', "'") or "(no text)") + '"'


def _first_sentence(text: str) -> str:
    text = _LEADING_TS.sub("", text.strip())  # "[2026-...Z] Alice: ..." -> "Alice: ..."
    match = _SENTENCE_END.search(text)
    return text[: match.end()] if match else text


def _texts(message: MessageParam) -> list[str]:
    return [
        str(block.get("text", ""))
        for block in blocks_of(message.get("content"))
        if block.get("type") == "text"
    ]


def _question(message: MessageParam) -> str:
    """The user's question: the last text block that is not context, digest or recovery note.

    The caller puts the question after the context package or the thread delta, and its
    "[ts] Name: text" form says who asked.
    """
    digest = leading_digest(message)
    candidates = [
        str(block.get("text", ""))
        for block in blocks_of(message.get("content"))
        if block.get("type") == "text"
        and not is_context_block(block)
        and block.get("text") != digest
        and not str(block.get("text", "")).startswith(_RECOVERY)
        and str(block.get("text", "")).strip()
    ]
    return _first_sentence(candidates[-1]) if candidates else ""


def item_text(turn: int, exchange: Sequence[MessageParam]) -> str:
    question = _question(exchange[0])
    tools: list[str] = []
    answer = ""
    for message in exchange[1:]:
        if message.get("role") != "assistant":
            continue
        for block in blocks_of(message.get("content")):
            name = block.get("name")
            if block.get("type") == "tool_use" and isinstance(name, str) and name not in tools:
                tools.append(name)
        text = " ".join(t for t in _texts(message) if t.strip())
        if text.strip():
            answer = _first_sentence(text)  # the last assistant text is the final answer
    used = f" (tools: {', '.join(t.replace(')', '') for t in tools)})" if tools else ""
    return f"turn {turn}: asked {_quote(question)}{used} -> answered {_quote(answer)}"


def _prior_items(digest: str, first: int, through: int, kind: str) -> list[_Item]:
    body = digest_body(digest)
    if kind == "summarized":
        span = f"turn {first}" if first == through else f"turns {first}-{through}"
        return [_Item(first, through, f"{span}: summarized {_quote(body, _SUMMARY_CHARS)}")]
    items = []
    for match in _ITEM.finditer(body):
        start = int(match.group(1))
        items.append(_Item(start, int(match.group(2) or start), match.group(0)))
    return items


def content_tokens(messages: Sequence[MessageParam], counter: TokenCounter) -> int:
    """Tokens of the text a compaction replaces: text, tool inputs and tool results.

    Image and document bytes are not counted (their base64 is not what the model reads), so
    this is a lower figure for what is replaced, and a tenth of it a safe digest budget.
    """
    total = 0
    for message in messages:
        for block in blocks_of(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                total += counter.count(str(block.get("text", "")))
            elif kind == "tool_use":
                total += counter.count(json.dumps(block.get("input"), sort_keys=True))
            elif kind == "tool_result":
                total += content_tokens([{"content": block.get("content")}], counter)
    return total


def build_digest(
    messages: Sequence[MessageParam],
    exchanges: Sequence[tuple[int, Sequence[MessageParam]]],
    *,
    first: int,
    through: int,
    counter: TokenCounter,
) -> str:
    """The digest of ``messages`` (everything replaced), given its numbered ``exchanges``."""
    items: list[_Item] = []
    prior_end = 0
    digest = leading_digest(messages[0]) if messages else None
    if digest is not None:
        span = digest_span(messages[0])
        assert span is not None
        items += _prior_items(digest, span[0], span[1], span[2])
        prior_end = span[1]
    items += [_Item(t, t, item_text(t, ex)) for t, ex in exchanges if t > prior_end]
    budget = min(MAX_DIGEST_TOKENS, max(MIN_DIGEST_TOKENS, content_tokens(messages, counter) // 10))
    return _fit(items, digest_head(first, through, "compacted"), first, budget, counter)


def _assemble(head: str, items: Sequence[_Item]) -> str:
    return head + "; ".join(item.text for item in items) + "]"


def _fit(items: list[_Item], head: str, first: int, budget: int, counter: TokenCounter) -> str:
    """Keep the newest items that fit ``budget``; fold the dropped ones into one omitted item."""

    def omitted(upto: int) -> _Item:
        span = f"turn {first}" if first == upto else f"turns {first}-{upto}"
        return _Item(first, upto, f"{span}: omitted")

    # Per-piece counts summed (each item counted once, no quadratic recounting): at separators a
    # sum is within a token or two of the whole, not a bound, so one full count confirms it.
    fixed = counter.count(head) + counter.count("]")
    suffix = [0] * (len(items) + 1)  # suffix[i]: cost of items[i:]
    for i in range(len(items) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counter.count("; " + items[i].text)
    for start in range(len(items)):
        lead = [omitted(items[start - 1].last)] if start else []
        total = fixed + suffix[start] + sum(counter.count(item.text) for item in lead)
        if total <= budget:
            text = _assemble(head, [*lead, *items[start:]])
            if counter.count(text) <= budget:
                return text
    return _assemble(head, [omitted(items[-1].last)] if items else [])
