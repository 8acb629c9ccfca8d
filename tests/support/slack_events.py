"""Builders for Slack Events API envelopes, shaped exactly as Slack delivers them."""

from __future__ import annotations

import itertools
from typing import Any

TEAM = "T0TEST0001"
BOT_USER = "U0BOT00001"
BOT_ID = "B0BOT00001"
CHANNEL = "C0GENERAL1"
DM = "D0DIRECT01"
START = 1_781_020_800

_ids = itertools.count(1)

STATE: dict[str, Any] = {
    "auth": {
        "team_id": TEAM,
        "user_id": BOT_USER,
        "bot_id": BOT_ID,
        "team": "Test",
        "user": "chanctx",
    },
    "channels": {
        CHANNEL: {"id": CHANNEL, "name": "general"},
        DM: {"id": DM, "name": "", "is_im": True},
    },
    "users": {
        "U1": {
            "id": "U1",
            "name": "sam",
            "real_name": "Sam Lee",
            "profile": {"display_name": "Sam"},
        },
        "U2": {
            "id": "U2",
            "name": "ana",
            "real_name": "Ana Ruiz",
            "profile": {"display_name": "Ana"},
        },
        BOT_USER: {
            "id": BOT_USER,
            "name": "chanctx",
            "profile": {"display_name": "chanctx"},
            "is_bot": True,
        },
    },
    "history": {},
}


def ts(seconds: float, micros: int = 100) -> str:
    return f"{START + int(seconds)}.{micros:06d}"


def envelope(event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    stamp = event.get("event_ts") or event.get("ts") or ts(0)
    return {
        "token": "REDACTED",
        "team_id": TEAM,
        "api_app_id": "A0TEST0001",
        "type": "event_callback",
        "event": event,
        "event_id": event_id or f"Ev{next(_ids):08d}",
        "event_time": int(float(stamp)),
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }


def message(
    at: str, text: str, *, user: str = "U1", channel: str = CHANNEL, **extra: Any
) -> dict[str, Any]:
    event = {
        "type": "message",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": at,
        "event_ts": at,
        "channel_type": "im" if channel.startswith("D") else "channel",
    }
    event.update(extra)
    return event


def mention_pair(
    at: str, text: str, *, user: str = "U1", channel: str = CHANNEL, **extra: Any
) -> list[dict[str, Any]]:
    """One mention as Slack sends it: a message event and an app_mention event (two event ids)."""
    text = f"<@{BOT_USER}> {text}"
    sent = message(at, text, user=user, channel=channel, **extra)
    mention = {
        "type": "app_mention",
        "user": user,
        "text": text,
        "ts": at,
        "channel": channel,
        "event_ts": at,
        **extra,
    }
    return [envelope(sent), envelope(mention)]


def edit(at: str, original: dict[str, Any], new_text: str) -> dict[str, Any]:
    changed = dict(original, text=new_text, edited={"user": original.get("user", ""), "ts": at})
    return {
        "type": "message",
        "subtype": "message_changed",
        "channel": original["channel"],
        "hidden": True,
        "message": changed,
        "previous_message": original,
        "event_ts": at,
        "ts": at,
    }


def reaction(
    at: str, target_ts: str, name: str, *, user: str = "U2", added: bool = True
) -> dict[str, Any]:
    return {
        "type": "reaction_added" if added else "reaction_removed",
        "user": user,
        "reaction": name,
        "item": {"type": "message", "channel": CHANNEL, "ts": target_ts},
        "item_user": "U1",
        "event_ts": at,
    }


def feedback_click(
    message_ts: str,
    *,
    helpful: bool,
    user: str = "U2",
    turn: str | None = None,
    channel: str = CHANNEL,
    at: str | None = None,
) -> dict[str, Any]:
    """A click on an answer's feedback buttons: Slack's ``block_actions`` payload."""
    block_id = f"chanctx_feedback:{turn or f'{channel}:{message_ts}'}"
    return {
        "type": "block_actions",
        "token": "REDACTED",
        "api_app_id": "A0TEST0001",
        "team": {"id": TEAM, "domain": "test"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "container": {
            "type": "message", "message_ts": message_ts, "channel_id": channel,
            "is_ephemeral": False,
        },
        "channel": {"id": channel, "name": "general"},
        "trigger_id": "1.2.REDACTED",
        "response_url": "https://hooks.slack.com/actions/REDACTED",
        "actions": [
            {
                "type": "feedback_buttons", "action_id": "chanctx_feedback",
                "block_id": block_id, "value": "helpful" if helpful else "not_helpful",
                "action_ts": at or message_ts,
            }
        ],
    }  # fmt: skip
