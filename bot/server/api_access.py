"""Who may use the query API: API keys bound to channels, and the errors every route answers
with (401 without a known key, 403 for a channel outside the key's list, 422 naming the field).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from starlette.responses import JSONResponse, Response

__all__ = ["NEED_KEY", "ApiKeys", "granted", "may_read", "refuse", "validation_errors"]

NEED_KEY = "an API key is required: Authorization: Bearer <key>"


class ApiKeys:
    """Which channels each API key may read: ``{"<key>": ["C123", ...] | "*"}`` (JSON or YAML)."""

    def __init__(self, grants: Mapping[str, list[str] | str]) -> None:
        self._grants = dict(grants)

    @classmethod
    def load(cls, path: Path) -> ApiKeys:
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"{path}: cannot read the API keys file ({error})") from None
        if not isinstance(raw, dict) or not raw:
            raise ValueError(f'{path}: expected a mapping of API key to channel ids or "*"')
        for key, channels in raw.items():
            ok = channels == "*" or (
                isinstance(channels, list) and all(isinstance(c, str) for c in channels)
            )
            if not isinstance(key, str) or len(key) < 16 or not ok:
                raise ValueError(
                    f"{path}: each key must be a string of 16+ characters mapped to a list of "
                    f'channel ids or "*" (entry {str(key)[:4]}... is not)'
                )
        return cls(raw)

    def grant(self, presented: str) -> list[str] | str | None:
        """The channels of ``presented``, compared in constant time against every key."""
        found: list[str] | str | None = None
        for key, channels in self._grants.items():
            if hmac.compare_digest(key.encode(), presented.encode()):
                found = channels
        return found


def refuse(status: int, message: str, **extra: Any) -> Response:
    return JSONResponse({"error": message, **extra}, status_code=status)


def validation_errors(error: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(p) for p in item["loc"]) or "body", "problem": item["msg"]}
        for item in error.errors()
    ]


def granted(keys: ApiKeys | None, authorization: str) -> list[str] | str | None:
    """The channels the request's key may read ("*": all); None without a known key."""
    if keys is None:
        return "*"
    presented = authorization[7:].strip() if authorization[:7].lower() == "bearer " else ""
    return keys.grant(presented) if presented else None


def may_read(grant: list[str] | str, channel: str) -> bool:
    return grant == "*" or channel in grant
