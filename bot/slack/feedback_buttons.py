"""The feedback buttons under every answer: Slack's ``context_actions`` block with
``feedback_buttons`` (the thumbs Slack's own AI apps show), and reading a click on them.

The block id names the turn, so a click is tied to its turn even when the feedback store has
forgotten which message belongs to which turn; the message ts is the fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ACTION_ID", "Click", "click_of", "feedback_block"]

ACTION_ID: Final = "chanctx_feedback"
_BLOCK_PREFIX: Final = "chanctx_feedback:"
POSITIVE: Final = "helpful"
NEGATIVE: Final = "not_helpful"


def feedback_block(turn_id: str) -> dict[str, Any]:
    """👍 / 👎 under an answer; the block id carries the turn (Slack allows 255 characters)."""
    return {
        "type": "context_actions",
        "block_id": (_BLOCK_PREFIX + turn_id)[:255],
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": ACTION_ID,
                "positive_button": {
                    "text": {"type": "plain_text", "text": "Good answer"},
                    "accessibility_label": "This answer helped",
                    "value": POSITIVE,
                },
                "negative_button": {
                    "text": {"type": "plain_text", "text": "Bad answer"},
                    "accessibility_label": "This answer did not help",
                    "value": NEGATIVE,
                },
            }
        ],
    }


@dataclass(frozen=True)
class Click:
    channel: str
    message_ts: str
    user: str
    helpful: bool
    turn: str | None  # from the block id, when it names one


def click_of(body: Mapping[str, Any]) -> Click | None:
    """A feedback click from a ``block_actions`` payload; None if the payload is not one
    (or is malformed: every field is checked, a click is never trusted blindly)."""
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        return None
    action = actions[0]
    if action.get("action_id") != ACTION_ID or action.get("value") not in (POSITIVE, NEGATIVE):
        return None
    user = body.get("user")
    container = body.get("container")
    channel = body.get("channel")
    user_id = user.get("id") if isinstance(user, dict) else None
    message_ts = container.get("message_ts") if isinstance(container, dict) else None
    channel_id = channel.get("id") if isinstance(channel, dict) else None
    if isinstance(container, dict) and not channel_id:
        channel_id = container.get("channel_id")
    if not all(isinstance(v, str) and v for v in (user_id, message_ts, channel_id)):
        return None
    block_id = action.get("block_id")
    turn = (
        block_id.removeprefix(_BLOCK_PREFIX)
        if isinstance(block_id, str) and block_id.startswith(_BLOCK_PREFIX)
        else None
    )
    return Click(
        channel=str(channel_id),
        message_ts=str(message_ts),
        user=str(user_id),
        helpful=action.get("value") == POSITIVE,
        turn=turn or None,
    )
