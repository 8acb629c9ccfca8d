"""The assistant pane (Bolt's ``Assistant``): a greeting and suggested prompts that fit the
channel the user is viewing, and that channel remembered for the questions that follow.

Questions in the pane arrive as plain ``message.im`` events in the thread and are answered by
``messages.py``, which looks up the viewed channel here. Every Slack call in these listeners is
allowed to fail: a missing greeting must never cost the ack.
"""

from __future__ import annotations

import logging
from typing import Any

from chanctx.bot.events.routing import RoutedThreadStore, current
from slack_bolt import Assistant, Say, SetSuggestedPrompts
from slack_sdk.errors import SlackApiError

__all__ = ["build"]

logger = logging.getLogger("chanctx.assistant")


def greeting(channel_name: str | None) -> tuple[str, list[dict[str, str]]]:
    """What the pane says first, and the prompts it offers, for the channel in view."""
    if channel_name is None:
        return (
            "Hi! Ask me about a channel's conversations: open me while viewing a channel and "
            "I'll answer from what was said there.",
            [{"title": "What can you do?", "message": "What can you do?"}],
        )
    where = f"#{channel_name}"
    prompts = [
        (f"What happened in {where} today?", f"What happened in {where} today?"),
        (f"What is still open in {where}?", f"What questions are still open in {where}?"),
        (f"Summarize the busiest thread in {where}", f"Summarize the busiest thread in {where}."),
    ]
    return (
        f"Hi! I can answer from {where}: what was said, by whom and when. What would you like "
        "to know?",
        [{"title": title, "message": message} for title, message in prompts],
    )


def _thread_of(thread: Any) -> tuple[str, str] | None:
    """The pane thread's (channel, ts), or None when the event does not say both."""
    if not isinstance(thread, dict):
        return None
    channel, ts = thread.get("channel_id"), thread.get("thread_ts")
    if isinstance(channel, str) and channel and isinstance(ts, str) and ts:
        return channel, ts
    return None


def build() -> Assistant:
    # Each workspace's pane threads live in its own runtime's store.
    assistant = Assistant(thread_context_store=RoutedThreadStore())

    @assistant.thread_started
    def started(
        payload: dict[str, Any], say: Say, set_suggested_prompts: SetSuggestedPrompts
    ) -> None:
        runtime = current()
        thread = payload.get("assistant_thread")
        where = _thread_of(thread)
        if where is None:
            # Nowhere to greet (and Bolt's say needs the channel): the event is dropped.
            logger.warning("an assistant_thread_started without its channel or thread; ignored")
            return
        assert isinstance(thread, dict)
        context = thread.get("context") or {}
        viewed = context.get("channel_id") if isinstance(context, dict) else None
        if isinstance(viewed, str) and viewed:
            runtime.assistant_threads.save(channel_id=where[0], thread_ts=where[1], context=context)
        name = (
            runtime.engine.names.channels.get(viewed)
            if isinstance(viewed, str) and viewed
            else None
        )
        text, prompts = greeting(name)
        try:
            say(text=text)
            set_suggested_prompts(prompts=prompts)
        except SlackApiError as error:
            logger.warning("could not greet in the assistant pane: %s", error.response.get("error"))

    return assistant
