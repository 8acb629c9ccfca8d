"""The errors manifest_store raises on purpose (both are chanctx errors).

* context.ChanctxError
  + InvalidSessionKey   -- a team, channel or thread ts that cannot name a session file
  + SessionLogCorrupt   -- a line in the middle of a session log that is not an entry
* OSError
  + StoreUnavailable    -- the shared store (Redis) could not be reached: nothing was stored
* TurnTakenOver         -- another replica owns this turn now (its lease ran out here)
"""

from __future__ import annotations

from pathlib import Path

from chanctx.context import ChanctxError

__all__ = ["InvalidSessionKey", "SessionLogCorrupt", "StoreUnavailable", "TurnTakenOver"]


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


class StoreUnavailable(OSError):
    """The shared store did not answer (Redis down, a timeout): nothing was stored.

    An OSError on purpose: whatever refuses an event the disk could not store (HTTP 503, no
    Socket Mode ack, so Slack retries) refuses one Redis could not store the same way.
    """


class TurnTakenOver(Exception):
    """This replica's lease on a turn ran out and another replica claimed it: the turn is
    theirs to answer, so this one stops before writing or posting anything more."""

    def __init__(self, turn_id: str, owner: str | None) -> None:
        super().__init__(f"turn {turn_id} is now answered by {owner or 'another replica'}")
        self.turn_id = turn_id
        self.owner = owner
