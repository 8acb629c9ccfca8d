"""Tool outputs: channel_context's compact rows, and channel_messages' message and thread answers.

channel_context answers with one JSON array per hit (:class:`ContextRow`), not one object with
named keys: with a key repeated in every hit, a 4,000-token budget held about ten chat
messages. ``truncated`` and ``note`` are
added by chanctx and only appear when they say something. :func:`output_json` (and
:meth:`ChannelContextOutput.to_json`) is the one serialization, used both to send and to count
against the output budget.
"""

from __future__ import annotations

import json
from typing import Any

from chanctx.context import Author, MediaRef, ThreadContext
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "HELD",
    "ChannelContextOutput",
    "ContextRow",
    "FetchedMessage",
    "MediaInfo",
    "MediaOutput",
    "MessagesOutput",
    "ThreadOutput",
    "output_json",
    "read_context_output",
]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


HELD = "in context"  # the row of a hit the reader already holds: [ts, HELD]


class ContextRow(_Out):
    """One channel_context result, sent as a JSON array: ``[ts, when, who, text]`` plus
    ``thread`` when the message is in one, or ``[ts, "in context"]`` when the reader already
    holds the message (``held``). Arrays, not objects: on a page of 25 chat hits, repeating
    seven key names on each cost more tokens than the texts."""

    ts: str
    when: str = ""
    who: str = ""
    text: str = ""
    thread: str | None = None
    held: bool = False

    def as_list(self) -> list[str]:
        if self.held:
            return [self.ts, HELD]
        row = [self.ts, self.when, self.who, self.text]
        return row if self.thread is None else [*row, self.thread]

    def to_json(self) -> str:
        return json.dumps(self.as_list(), ensure_ascii=False, separators=(",", ":"))


class ChannelContextOutput(_Out):
    """channel_context's answer: ``results`` best first, what was searched, then
    ``truncated``/``note`` when they say something."""

    results: list[ContextRow]
    searched: int = Field(ge=0)
    # The oldest and newest message searched ("2026-02-27 14:02", UTC); None when none was.
    range: tuple[str, str] | None
    truncated: bool | None = None
    note: str | None = None

    def to_json(self) -> str:
        out: dict[str, Any] = {
            "results": [row.as_list() for row in self.results],
            "searched": self.searched,
        }
        if self.range is not None:
            out["range"] = list(self.range)
        if self.truncated is not None:
            out["truncated"] = self.truncated
        if self.note is not None:
            out["note"] = self.note
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def read_context_output(content: str) -> list[dict[str, str | bool | None]]:
    """channel_context's rows as dicts (``ts``, ``when``, ``who``, ``text``, ``thread``,
    ``held``): for readers of the tool's answer (the offline model, benchmarks, tests)."""
    out: list[dict[str, str | bool | None]] = []
    for row in json.loads(content)["results"]:
        if len(row) == 2 and row[1] == HELD:
            out.append({"ts": row[0], "held": True})
            continue
        ts, when, who, text, *thread = row
        out.append(
            {
                "ts": ts,
                "when": when,
                "who": who,
                "text": text,
                "thread": thread[0] if thread else None,
                "held": False,
            }
        )
    return out


class _Answer(_Out):
    """A whole tool answer. Each one ends with ``truncated`` and ``note``, read last."""


class FetchedMessage(_Out):
    message_id: str
    ts: str
    author: Author
    text: str
    media: list[MediaRef]


class MessagesOutput(_Answer):
    messages: list[FetchedMessage]
    truncated: bool | None = None
    note: str | None = None


class ThreadOutput(_Answer):
    thread: ThreadContext
    truncated: bool | None = None
    note: str | None = None


class MediaInfo(_Out):
    artifact_id: str
    media_type: str
    filename: str | None
    byte_length: int = Field(ge=0)
    source_message_id: str


class MediaOutput(_Answer):
    media: MediaInfo
    truncated: bool | None = None
    note: str | None = None


def output_json(model: _Answer) -> str:
    """Compact JSON; ``truncated``/``note`` left out when unset (nested nulls are kept)."""
    unset = {name for name in ("truncated", "note") if getattr(model, name, None) is None}
    return model.model_dump_json(exclude=unset)
