"""SessionKey: one Claude session per Slack thread, and the file name it is stored under."""

from __future__ import annotations

import re
from dataclasses import dataclass

from chanctx.manifest_store._errors import InvalidSessionKey

__all__ = ["SessionKey"]

# Slack ids are upper-case alphanumerics (T.../E... teams, C/D/G channels). Anything wider, and
# above all "/", "." or "..", could walk out of the data directory through the file name.
_ID = re.compile(r"[A-Z0-9]{1,32}")
# The same ts form context accepts; [0-9], not \d, which would also accept non-ASCII digits.
_TS = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?")
_FILE = re.compile(r"([A-Z0-9]{1,32})_([A-Z0-9]{1,32})_([0-9]{1,12}(?:\.[0-9]{1,9})?)\.jsonl")
SUFFIX = ".jsonl"


@dataclass(frozen=True, order=True)
class SessionKey:
    """Team, channel and thread ts; validated so the file name can never leave its directory."""

    team: str
    channel: str
    thread_ts: str

    def __post_init__(self) -> None:
        for part in ("team", "channel"):
            value = getattr(self, part)
            if not isinstance(value, str) or not _ID.fullmatch(value):
                raise InvalidSessionKey(part, value, "a Slack id ([A-Z0-9]{1,32})")
        if not isinstance(self.thread_ts, str) or not _TS.fullmatch(self.thread_ts):
            raise InvalidSessionKey(
                "thread_ts", self.thread_ts, "a Slack ts ('<seconds>.<micros>')"
            )

    @property
    def file_name(self) -> str:
        # "_" cannot occur in any part, so the name splits back unambiguously.
        return f"{self.team}_{self.channel}_{self.thread_ts}{SUFFIX}"

    @classmethod
    def from_file_name(cls, name: str) -> SessionKey | None:
        """The key a session file is named for, or None for any other file."""
        match = _FILE.fullmatch(name)
        return cls(*match.groups()) if match else None
