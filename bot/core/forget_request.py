"""What ``chanctx forget`` asks (a channel, a person or one message) and what it answers:
the models the command line and the bot's admin route exchange."""

from __future__ import annotations

import re
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ForgetAnswer", "ForgetRequest", "parse_link"]

_ID: Final = r"[A-Z0-9]{2,32}"
_TS: Final = re.compile(r"^[0-9]{1,12}\.[0-9]{1,9}$")
# https://acme.slack.com/archives/C0123ABC/p1700000000000100 (a thread reply's link adds
# ?thread_ts=...&cid=...; the message is the p-number either way).
_PERMALINK: Final = re.compile(rf"^https?://[^/\s]+/archives/({_ID})/p([0-9]{{7,}})(?:[?#].*)?$")
_PAIR: Final = re.compile(rf"^({_ID}):([0-9]{{1,12}}\.[0-9]{{1,9}})$")


def parse_link(link: str) -> tuple[str, str]:
    """(channel, ts) of a Slack permalink or ``CHANNEL:TS``; ValueError naming the link."""
    text = link.strip()
    found = _PERMALINK.match(text)
    if found is not None:
        digits = found.group(2)
        return found.group(1), f"{digits[:-6]}.{digits[-6:]}"
    pair = _PAIR.match(text)
    if pair is not None:
        return pair.group(1), pair.group(2)
    raise ValueError(
        f"not a message link: {link!r} (expected a Slack permalink such as "
        "https://acme.slack.com/archives/C0123/p1700000000000100, or C0123:1700000000.000100)"
    )


class ForgetRequest(BaseModel):
    """One of: a channel (``channel``), a person (``user``), a message (``channel`` and
    ``ts``); ``team`` None reaches every team of the store that has it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team: str | None = Field(default=None, pattern=rf"^{_ID}$")
    channel: str | None = Field(default=None, pattern=rf"^{_ID}$")
    user: str | None = Field(default=None, pattern=rf"^{_ID}$")
    ts: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> ForgetRequest:
        if self.ts is not None and not _TS.match(self.ts):
            raise ValueError(f"ts {self.ts!r} is not a Slack timestamp")
        if self.ts is not None and self.channel is None:
            raise ValueError("a message needs its channel")
        if (self.user is None) == (self.channel is None):
            raise ValueError("name exactly one of: a channel, a user, a message")
        return self

    def describe(self) -> str:
        if self.user is not None:
            return f"user {self.user}"
        if self.ts is not None:
            return f"message {self.channel}:{self.ts}"
        return f"channel {self.channel}"


class ForgetAnswer(BaseModel):
    """What was erased: messages (a channel's, a person's, one), whole channels, the teams
    reached, and the lines and files of the data dir rewritten with the marker."""

    messages: int = 0
    channels: int = 0
    teams: list[str] = Field(default_factory=list)
    files: int = 0
    lines: int = 0
    # True when the bot answered before the erase pass and the file rewrite finished (they
    # go on in the background; the store already refuses the erased messages).
    pending: bool = False
