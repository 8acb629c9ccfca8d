"""Reading a fixture directory (format in fixtures/README.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chanctx.context import ChanctxError

__all__ = ["Fixture", "FixtureError", "interaction_kind", "load_fixture", "users_state"]


class FixtureError(ChanctxError):
    pass


@dataclass(frozen=True)
class Fixture:
    path: Path
    envelopes: list[dict[str, Any]]
    slack_api: dict[str, Any]
    cassette: list[dict[str, Any]] = field(default_factory=list)


def interaction_kind(payload: dict[str, Any]) -> str | None:
    """``slash_command`` or ``block_actions`` for what a person did in Slack's UI (replayed as
    Slack delivers it over Socket Mode); None for an Events API envelope."""
    if isinstance(payload.get("command"), str) and "event" not in payload:
        return "slash_command"
    if payload.get("type") == "block_actions":
        return "block_actions"
    return None


def _read_events(path: Path) -> list[dict[str, Any]]:
    envelopes = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            envelope = json.loads(line)
        except json.JSONDecodeError as error:
            raise FixtureError(f"{path}:{number}: not JSON ({error.msg}).") from error
        if not isinstance(envelope, dict) or (
            interaction_kind(envelope) is None and not (isinstance(envelope.get("event"), dict))
        ):
            raise FixtureError(
                f"{path}:{number}: not an Events API envelope (no 'event' object), a slash "
                "command (no 'command') or an interactive payload ('type': 'block_actions')."
            )
        envelopes.append(envelope)
    return envelopes


def load_fixture(path: str | Path) -> Fixture:
    root = Path(path)
    events = root / "events.jsonl"
    if not events.is_file():
        raise FixtureError(f"Fixture {root} has no events.jsonl.")
    api_file = root / "slack_api.json"
    try:
        slack_api = json.loads(api_file.read_text(encoding="utf-8")) if api_file.is_file() else {}
    except json.JSONDecodeError as error:
        raise FixtureError(f"{api_file}: not JSON ({error.msg}, line {error.lineno}).") from error
    cassette_file = root / "claude.jsonl"
    cassette = (
        _read_jsonl(cassette_file, "a Messages API response") if cassette_file.is_file() else []
    )
    return Fixture(
        path=root, envelopes=_read_events(events), slack_api=slack_api, cassette=cassette
    )


def _read_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise FixtureError(f"{path}:{number}: not JSON ({error.msg}).") from error
        if not isinstance(row, dict):
            raise FixtureError(f"{path}:{number}: not {what} (expected a JSON object).")
        rows.append(row)
    return rows


def users_state(
    people: dict[str, tuple[str, str]], *, bot_user: str, bot_name: str = "chanctx"
) -> dict[str, Any]:
    """``slack_api.json`` ``users``: people as ``{user_id: (real name, handle)}`` plus the bot.

    Display names are first names, as people usually set them; fixture builders share this.
    """
    users: dict[str, Any] = {
        user_id: {
            "id": user_id,
            "name": handle,
            "real_name": real,
            "profile": {"display_name": real.split()[0], "real_name": real},
            "is_bot": False,
        }
        for user_id, (real, handle) in people.items()
    }
    users[bot_user] = {
        "id": bot_user,
        "name": bot_name,
        "real_name": bot_name,
        "profile": {"display_name": bot_name, "real_name": bot_name},
        "is_bot": True,
    }
    return users
