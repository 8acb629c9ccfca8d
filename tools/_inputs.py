"""Tool inputs: pydantic models that reject anything unexpected, and errors a model can act on.

Claude fixes a bad call from the error text alone, so every message names the field, says what
was wrong and what is allowed, and quotes the bad value (shortened).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "ChannelContextInput",
    "ChannelMessagesInput",
    "parse_input",
    "parse_since",
    "short_repr",
]

# A Slack message ts exactly as Slack writes it: ten ASCII digits of seconds, a dot, six of
# microseconds. ``\d`` would take any Unicode digit, and a loose form ("0", 7 decimals) only
# reaches Slack to be refused there, after a rate-limited call.
_TS = re.compile(r"[0-9]{10}\.[0-9]{6}")
_ARTIFACT = re.compile(r"[A-Za-z0-9._:-]{1,100}")
TS_HINT = "a Slack message ts such as '1700000000.123456'"


def short_repr(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_ts(value: str) -> str:
    if not _TS.fullmatch(value):
        raise ValueError(f"{short_repr(value)} is not {TS_HINT}")
    return value


def parse_since(value: str) -> float:
    """Seconds since the epoch for an ISO 8601 date/time (naive = UTC) or a Slack ts."""
    text = value.strip()
    if _TS.fullmatch(text):
        return float(text)
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    except (ValueError, OverflowError):
        raise ValueError(
            f"{short_repr(value)} is neither an ISO 8601 date/time "
            f"(e.g. '2026-02-27' or '2026-02-27T14:00:00Z') nor {TS_HINT}"
        ) from None


def _clamped(value: Any, low: int, high: int) -> Any:
    """A count out of range is brought into it (asking for 100 results gets the 50 allowed,
    not an error round trip); anything not an integer is left for the type check to refuse."""
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, low), high)
    return value


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChannelContextInput(_Input):
    intent: StrictStr = Field(min_length=1, max_length=2000)
    since: StrictStr | None = None
    authors: list[Annotated[StrictStr, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, max_length=50
    )
    max_results: StrictInt = Field(default=8, ge=1, le=50)

    @field_validator("max_results", mode="before")
    @classmethod
    def _clamp_results(cls, value: Any) -> Any:
        return _clamped(value, 1, 50)

    @field_validator("intent")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must say what you are looking for, not be blank")
        return value

    @field_validator("since")
    @classmethod
    def _since(cls, value: str | None) -> str | None:
        if value is not None:
            parse_since(value)
        return value


class ChannelMessagesInput(_Input):
    thread_id: StrictStr | None = None
    message_ids: list[StrictStr] | None = Field(default=None, min_length=1, max_length=50)
    media_artifact_id: StrictStr | None = None
    max_replies: StrictInt = Field(default=50, ge=1, le=500)

    @field_validator("max_replies", mode="before")
    @classmethod
    def _clamp_replies(cls, value: Any) -> Any:
        return _clamped(value, 1, 500)

    @field_validator("thread_id")
    @classmethod
    def _thread(cls, value: str | None) -> str | None:
        return None if value is None else check_ts(value)

    @field_validator("message_ids")
    @classmethod
    def _messages(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for item in value:
                check_ts(item)
        return value

    @field_validator("media_artifact_id")
    @classmethod
    def _artifact(cls, value: str | None) -> str | None:
        if value is not None and not _ARTIFACT.fullmatch(value):
            raise ValueError(
                f"{short_repr(value)} is not a file id (letters, digits, '.', '_', ':', '-')"
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ChannelMessagesInput:
        given = [
            name
            for name in ("thread_id", "message_ids", "media_artifact_id")
            if getattr(self, name) is not None
        ]
        if len(given) != 1:
            got = "none of them" if not given else " and ".join(given)
            raise ValueError(
                f"give exactly one of thread_id, message_ids, media_artifact_id (got {got})"
            )
        return self


M = TypeVar("M", bound=_Input)


def _describe(error: Any, model: type[_Input]) -> str:
    loc = ".".join(str(part) for part in error["loc"])
    kind = error["type"]
    if kind == "missing":
        return f"'{loc}' is required"
    if kind == "extra_forbidden":
        allowed = ", ".join(model.model_fields)
        return f"unknown field '{loc}' (allowed: {allowed})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc:  # a model-level rule (exactly one of ...)
        return message
    if kind == "value_error":  # our own validators already quote the value
        return f"'{loc}': {message}"
    return f"'{loc}': {message[:1].lower()}{message[1:]} (got {short_repr(error['input'])})"


def parse_input(model: type[M], tool: str, raw: object) -> M | str:
    """The validated input, or one sentence saying everything that is wrong with it."""
    if not isinstance(raw, dict):
        return f"Invalid input for {tool}: expected a JSON object, got {short_repr(raw)}."
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(_describe(e, model) for e in error.errors(include_url=False))
        return f"Invalid input for {tool}: {problems}."
