"""More turns for the demo fixture's incident thread: a reply by someone, then a question."""

from __future__ import annotations

from typing import Any

BOT = "U0CHANCTX0"


def demo_mention(envelopes: list[dict[str, Any]]) -> dict[str, Any]:
    """The demo's first app_mention envelope (in the incident thread): the template for more."""
    return next(e for e in envelopes if e["event"]["type"] == "app_mention")


def thread_turn(
    template: dict[str, Any],
    *,
    key: str,
    reply_at: str,
    reply_user: str,
    reply_text: str,
    ask_at: str,
    ask_user: str,
    question: str,
) -> list[dict[str, Any]]:
    """Envelopes for one turn, as Slack delivers them: the reply, then the question as a
    message event and an app_mention event. ``key`` makes the event ids unique."""
    channel, thread_ts = template["event"]["channel"], template["event"]["thread_ts"]
    text = f"<@{BOT}> {question}"

    def wrap(event: dict[str, Any], suffix: str) -> dict[str, Any]:
        return {
            **template,
            "event": event,
            "event_id": f"Ev{key}{suffix}",
            "event_time": int(float(event["ts"])),
        }

    def message(at: str, user: str, body: str) -> dict[str, Any]:
        return {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": body,
            "ts": at,
            "event_ts": at,
            "thread_ts": thread_ts,
            "channel_type": "channel",
        }

    mention = {
        "type": "app_mention",
        "user": ask_user,
        "text": text,
        "ts": ask_at,
        "channel": channel,
        "event_ts": ask_at,
        "thread_ts": thread_ts,
    }
    return [
        wrap(message(reply_at, reply_user, reply_text), "R"),
        wrap(message(ask_at, ask_user, text), "Q"),
        wrap(mention, "M"),
    ]
