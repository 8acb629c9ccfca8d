"""The errors manifest_store raises on purpose (both are chanctx errors).

* context.ChanctxError
  + InvalidSessionKey   -- a team, channel or thread ts that cannot name a session file
  + SessionLogCorrupt   -- a line in the middle of a session log that is not an entry
"""

from __future__ import annotations

from pathlib import Path

from chanctx.context import ChanctxError

__all__ = ["InvalidSessionKey", "SessionLogCorrupt"]


class InvalidSessionKey(ChanctxError, ValueError):
    def __init__(self, part: str, value: object, expected: str) -> None:
        super().__init__(f"SessionKey.{part} {value!r} is not {expected}.")
        self.part = part
        self.value = value


class SessionLogCorrupt(ChanctxError):
    """A complete line in the middle of a log does not parse: refuse rather than drop data.

    Only the *last* line can be torn by a crash mid-append; anything before it was fsynced
    whole, so damage there is not ours to repair silently.
    """

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(
            f"{path}: line {line} is not a session log entry ({reason}); the log was not changed."
        )
        self.path = path
        self.line = line
