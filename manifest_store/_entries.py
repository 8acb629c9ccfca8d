"""The entries of a session log: one JSON object per line, told apart by ``type``.

Message content is stored exactly as sent to / received from the Anthropic Messages API (plain
dict blocks), so a restarted bot can rebuild the very request it would have sent.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "ATTACHMENT_MANIFEST",
    "CONTEXT_ATTACHED",
    "CompactionEntry",
    "CustomEntry",
    "Entry",
    "MessageEntry",
    "SessionStarted",
    "parse_entry",
]

# custom_type of the attachment manifest (data: the manifest, latest wins).
ATTACHMENT_MANIFEST: Final = "chanctx:attachment-manifest"
# custom_type recorded when a turn's user message carries the context package (data: {"turn": n}).
CONTEXT_ATTACHED: Final = "chanctx:context-attached"


class _Entry(BaseModel):
    # Frozen: an entry is a fact already on disk. Unknown fields fail loudly at construction.
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Seconds since the epoch, taken from events so replays are byte-for-byte deterministic.
    # NaN/inf would not survive JSON, so they are refused up front.
    at: float = Field(allow_inf_nan=False)


class SessionStarted(_Entry):
    type: Literal["session"] = "session"
    session_id: str
    model: str
    team: str
    channel: str
    thread_ts: str


class MessageEntry(_Entry):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant"]
    content: list[dict[str, Any]] | str
    turn: int = Field(ge=1)  # every message of one exchange (tool rounds too) shares the turn
    usage: dict[str, Any] | None = None


class CustomEntry(_Entry):
    type: Literal["custom"] = "custom"
    custom_type: str = Field(min_length=1)
    data: dict[str, Any]


class CompactionEntry(_Entry):
    type: Literal["compaction"] = "compaction"
    strategy: Literal["trim", "summarize"]
    digest: str
    replaced_through_turn: int = Field(ge=0)
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)


Entry = Annotated[
    SessionStarted | MessageEntry | CustomEntry | CompactionEntry, Field(discriminator="type")
]
_ADAPTER: Final[TypeAdapter[Entry]] = TypeAdapter(Entry)


def parse_entry(line: bytes | str) -> Entry:
    """One log line -> its entry; raises pydantic.ValidationError (bad JSON included)."""
    return _ADAPTER.validate_json(line)
