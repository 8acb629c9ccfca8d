"""The tool definitions Claude sees (Anthropic Messages API ``tools`` entries).

Written by hand rather than generated from the pydantic models: generated schemas carry titles,
``anyOf`` nulls and ``$defs`` that cost tokens on every request and help no one. A test checks
that these schemas and the pydantic input models accept and reject the same things.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CHANNEL_CONTEXT", "CHANNEL_MESSAGES", "definitions"]

CHANNEL_CONTEXT: Final = "channel_context"
CHANNEL_MESSAGES: Final = "channel_messages"

_TS_PATTERN = r"^[0-9]{10}\.[0-9]{6}$"  # what Slack writes; tools/_inputs.py checks the same

_CONTEXT_DESCRIPTION = (
    "Search this channel's history (top-level messages and thread replies) for context beyond "
    "what is attached to the conversation. Use it when the ChannelSnapshot snippets and the "
    "current thread are not enough: earlier discussions, decisions, incidents, who said what, "
    "related threads. Describe what you need in `intent`, in plain words, and include the "
    "distinctive terms (service names, error codes, versions, ticket numbers, names): ranking "
    "is by keywords (BM25) and the messages around each match, plus recency, thread activity "
    "and author, not by meaning, so if nothing matches try other words. Optionally keep only "
    "messages since a moment (`since`) and boost messages by some people (`authors`). "
    "Returns `results`, best first, one array per message: [ts, when (UTC), who, text, thread]."
    " ts is the message id; thread is 'thread <root ts>' for a reply, or 'N replies, last "
    "<when>' for a message that started a thread, and is absent otherwise. A result [ts, 'in "
    "context'] is a match you already hold (in the attached thread or snapshot). Your own "
    "earlier questions-and-answers rank after people's messages; at most 3 results come from "
    "one thread. `searched` and `range` say how many messages were searched and over what "
    "time. To read a whole thread, call channel_messages with its root ts as thread_id; to "
    "read a cut text in full, with message_ids. Only this channel is searchable."
)

_MESSAGES_DESCRIPTION = (
    "Fetch specific content of this channel by id, when you know exactly what you want. Give "
    "exactly one of: `thread_id` for a whole thread (the root in full plus the newest "
    "`max_replies` replies, oldest to newest; `truncation` says how many replies exist and how "
    "many were left out), `message_ids` for specific messages (returned in the order asked), or "
    "`media_artifact_id` for a file attached to a message. Ids come from the attached context "
    "or from channel_context results: message ids and thread ids are message timestamps (ts) such as "
    "'1700000000.123456', artifact_id is a file id such as 'F0123ABCD'. Only this channel is "
    "reachable: an id from anywhere else is reported as not found. Do not fetch media that is "
    "already attached to the conversation."
)


def definitions() -> list[dict[str, Any]]:
    """Both tools' definitions, ready for the ``tools`` parameter of ``messages.create``."""
    return [
        {
            "name": CHANNEL_CONTEXT,
            "description": _CONTEXT_DESCRIPTION,
            "input_schema": {
                "type": "object",
                "properties": {
                    "intent": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 2000,
                        "description": "What you are trying to understand or find, e.g. "
                        "'why did the checkout-api deploy fail on Tuesday'.",
                    },
                    "since": {
                        "type": "string",
                        "description": "Only messages at or after this moment: an ISO 8601 "
                        "date or date-time (UTC unless it has an offset), e.g. '2026-02-27' or "
                        "'2026-02-27T14:00:00Z', or a message ts.",
                    },
                    "authors": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 200},
                        "maxItems": 50,
                        "description": "Boost messages written by these people (display names "
                        "or user ids).",
                    },
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 50,
                        "default": 8,
                        "description": "How many messages to return at most.",
                    },
                },
                "required": ["intent"],
                "additionalProperties": False,
            },
        },
        {
            "name": CHANNEL_MESSAGES,
            "description": _MESSAGES_DESCRIPTION,
            "input_schema": {
                "type": "object",
                "properties": {
                    "thread_id": {
                        "type": "string",
                        "pattern": _TS_PATTERN,
                        "description": "The thread to fetch: its root message's id.",
                    },
                    "message_ids": {
                        "type": "array",
                        "items": {"type": "string", "pattern": _TS_PATTERN},
                        "minItems": 1,
                        "maxItems": 50,
                        "description": "The messages to fetch, by message_id.",
                    },
                    "media_artifact_id": {
                        "type": "string",
                        "pattern": r"^[A-Za-z0-9._:-]{1,100}$",
                        "description": "The file to fetch, by artifact_id.",
                    },
                    "max_replies": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 500,
                        "default": 50,
                        "description": "With thread_id: how many of the newest replies to "
                        "return at most.",
                    },
                },
                # "Exactly one of" is said in the description and enforced on input:
                # top-level oneOf is not accepted in tool input schemas.
                "required": [],
                "additionalProperties": False,
            },
        },
    ]
