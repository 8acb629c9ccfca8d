"""Who may use the query API: API keys bound to channels, and the errors every route answers
with (401 without a known key, 403 for a channel outside the key's list, 422 naming the field).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError
from starlette.responses import JSONResponse, Response

__all__ = [
    "NEED_KEY",
    "ApiKeys",
    "Grant",
    "bearer",
    "granted",
    "may_read",
    "refuse",
    "validation_errors",
]

NEED_KEY = "an API key is required: Authorization: Bearer <key>"


Grant = list[str] | str  # the channel ids a key may read, or "*" for all
_V = TypeVar("_V")


class ApiKeys:
    """Which channels each API key may read, in a JSON or YAML file: ``{"<key>": ["C123", ...]}``
    or ``"*"``; with ``--oauth`` (many workspaces) each key also names the one workspace it
    reads, ``{"<key>": {"team": "T123", "channels": ["C123"] | "*"}}``, so a key can never
    reach another workspace's channels."""

    def __init__(self, grants: Mapping[str, Grant], teams: Mapping[str, str] | None = None) -> None:
        self._grants = dict(grants)
        self._teams = dict(teams or {})

    @classmethod
    def load(cls, path: Path) -> ApiKeys:
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"{path}: cannot read the API keys file ({error})") from None
        if not isinstance(raw, dict) or not raw:
            raise ValueError(f'{path}: expected a mapping of API key to channel ids or "*"')
        grants: dict[str, Grant] = {}
        teams: dict[str, str] = {}
        for key, value in raw.items():
            team, channels = _split_entry(value)
            if not isinstance(key, str) or len(key) < 16 or not _is_grant(channels):
                raise ValueError(
                    f"{path}: each key must be a string of 16+ characters mapped to a list of "
                    f'channel ids or "*", or to {{team: T..., channels: ...}} '
                    f"(entry {str(key)[:4]}... is not)"
                )
            grants[key] = channels
            if team is not None:
                teams[key] = team
        return cls(grants, teams)

    def grant(self, presented: str) -> Grant | None:
        """The channels of ``presented``."""
        return _look_up(self._grants, presented)

    def team(self, presented: str) -> str | None:
        """The workspace ``presented`` is bound to (None: unknown key, or bound to none)."""
        return _look_up(self._teams, presented)

    def unbound(self) -> list[str]:
        """The first characters of keys that name no workspace (for the error saying so)."""
        return [key[:4] + "..." for key in self._grants if key not in self._teams]

    def of_team(self, team: str) -> ApiKeys:
        """Only the keys bound to ``team``: what that workspace's routes accept."""
        mine = {key for key, bound in self._teams.items() if bound == team}
        return ApiKeys({k: v for k, v in self._grants.items() if k in mine},
                       {k: team for k in mine})  # fmt: skip


def _look_up(by_key: Mapping[str, _V], presented: str) -> _V | None:
    """``by_key[presented]``, compared in constant time against every key: how long it takes
    does not tell how much of a guess was right."""
    found: _V | None = None
    for key, value in by_key.items():
        if hmac.compare_digest(key.encode(), presented.encode()):
            found = value
    return found


_TEAM_ID = re.compile(r"^[TE][A-Z0-9]{2,20}$")


def _split_entry(value: Any) -> tuple[str | None, Any]:
    """A key's file entry as (team, channels); a mapping with a bad team gives channels None."""
    if not isinstance(value, dict):
        return None, value
    team, channels = value.get("team"), value.get("channels")
    if set(value) != {"team", "channels"} or not isinstance(team, str) or not _TEAM_ID.match(team):
        return None, None
    return team, channels


def _is_grant(channels: Any) -> bool:
    return channels == "*" or (
        isinstance(channels, list) and all(isinstance(c, str) for c in channels)
    )


def bearer(authorization: str) -> str:
    """The key in an ``Authorization: Bearer <key>`` header ("" when there is none)."""
    return authorization[7:].strip() if authorization[:7].lower() == "bearer " else ""


def refuse(status: int, message: str, **extra: Any) -> Response:
    return JSONResponse({"error": message, **extra}, status_code=status)


def validation_errors(error: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(p) for p in item["loc"]) or "body", "problem": item["msg"]}
        for item in error.errors()
    ]


def granted(keys: ApiKeys | None, authorization: str) -> Grant | None:
    """The channels the request's key may read ("*": all); None without a known key."""
    if keys is None:
        return "*"
    presented = bearer(authorization)
    return keys.grant(presented) if presented else None


def may_read(grant: Grant, channel: str) -> bool:
    return grant == "*" or channel in grant
