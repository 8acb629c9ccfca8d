"""What every pane-thread store answers: Bolt's ``AssistantThreadContextStore`` (save and find
the context Slack sent for a pane thread), the channel the user is viewing, and whether a
question is the thread's first (it names the thread)."""

from __future__ import annotations

from abc import abstractmethod

from slack_bolt.context.assistant.thread_context import AssistantThreadContext
from slack_bolt.context.assistant.thread_context_store.store import AssistantThreadContextStore

__all__ = ["PaneThreads"]


class PaneThreads(AssistantThreadContextStore):
    @abstractmethod
    def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None: ...

    @abstractmethod
    def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None: ...

    @abstractmethod
    def first_question(self, channel_id: str, thread_ts: str) -> bool:
        """True once per thread: its first question names the thread."""

    def viewed(self, channel_id: str, thread_ts: str) -> str | None:
        """The channel the user is viewing in this pane thread, if Slack said."""
        found = self.find(channel_id=channel_id, thread_ts=thread_ts)
        return found.channel_id if found else None
