"""Everything one running bot shares: caches, dedup memory, the answer runner, the client.

Bolt may dispatch requests on several threads at once (HTTP mode). ``lock`` guards the dedup
memory; the engine guards its caches with its own lock, which no Slack call ever holds, so acks
never wait on an answer or on a rate limit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cachetools import TTLCache
from chanctx.bot.claude.answers import AnswerRunner, NullResponder, Responder, Turn, TurnResult
from chanctx.bot.engine import ContextEngine
from chanctx.bot.slack.assistant_threads import AssistantThreads
from chanctx.bot.slack.markdown import split_markdown
from chanctx.bot.slack.membership import MembershipChecker
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["Runtime"]

logger = logging.getLogger("chanctx.runtime")
# Slack retries an event for up to ~1 hour; ten minutes of ids covers its retry schedule
# (immediately, 1 min, 5 min) with room to spare.
_DEDUP_SECONDS = 600.0
_STATUS_TEXT = "is reading the channel..."
_FAILURE_TEXT = "Sorry, I couldn't answer this one: {reason}. Nothing is lost; please ask again."


@dataclass
class Runtime:
    engine: ContextEngine
    client: WebClient
    responder: Responder = field(default_factory=NullResponder)
    workers: int = 4
    lock: threading.RLock = field(default_factory=threading.RLock)
    # The assistant pane: which channel each pane thread views (persisted by serve/replay).
    assistant_threads: AssistantThreads = field(default_factory=AssistantThreads)
    runner: AnswerRunner = field(init=False)
    membership: MembershipChecker = field(init=False)
    _seen_events: TTLCache[str, bool] = field(init=False)
    _answered: TTLCache[tuple[str, str], bool] = field(init=False)

    def __post_init__(self) -> None:
        self.runner = AnswerRunner(self.answer, workers=self.workers)
        self.membership = MembershipChecker(self.client)
        self._seen_events = TTLCache(maxsize=20_000, ttl=_DEDUP_SECONDS)
        self._answered = TTLCache(maxsize=20_000, ttl=_DEDUP_SECONDS)

    # -- on the dispatch path (fast, in-memory) -------------------------------------------

    def first_delivery(self, event_id: str | None) -> bool:
        """False for an event already seen (a Slack retry)."""
        if not event_id:
            return True
        with self.lock:
            if event_id in self._seen_events:
                return False
            self._seen_events[event_id] = True
            return True

    def intake(self, event: Mapping[str, Any]) -> None:
        self.engine.handle(event)  # the engine locks its caches itself

    def trigger(self, turn: Turn) -> bool:
        """Queue an answer unless this message was already answered (message + app_mention)."""
        key = (turn.channel, turn.anchor_ts)
        with self.lock:
            if key in self._answered:
                logger.debug("already answering %s/%s", *key)
                return False
            self._answered[key] = True
        self.runner.submit(turn)
        return True

    # -- on the answer worker ------------------------------------------------------------

    def answer(self, turn: Turn) -> TurnResult:
        result = TurnResult(turn=turn)
        self._show_working(turn, on=True)
        self._set_title(turn)
        turn, refused = self._may_view(turn)
        result.turn = turn  # as answered: without a channel the user may not read
        try:
            # No lock here: the engine never holds its own across a Slack call, so a
            # rate-limit wait in this answer does not stop intake of other events.
            result.context = self.engine.context_for(
                turn.channel, turn.anchor_ts, viewed=turn.viewed_channel
            )
            if result.context is None:
                result.error = "the mentioned message is not in the channel history"
                return result
            answer = self.responder.respond(turn, result.context)
            result.reply, result.tool_calls, result.usage = (
                answer.text,
                answer.tool_calls,
                answer.usage,
            )
            text = answer.text
            if text and refused:
                text = f"_{refused}_\n\n{text}"
                result.reply = text  # what the user sees, note included
            if text:
                # Slack renders the Markdown itself; long answers go out as several
                # messages, split where a reader would split.
                for chunk in split_markdown(text):
                    posted = self.client.chat_postMessage(
                        channel=turn.channel, thread_ts=turn.thread_ts, markdown_text=chunk
                    )
                    result.reply_ts.append(str(posted.get("ts")))
        except Exception as error:
            logger.exception("answer failed in %s/%s", turn.channel, turn.thread_ts)
            result.error = f"{type(error).__name__}: {error}"
            self._post_failure(turn, type(error).__name__)
        finally:
            self._show_working(turn, on=False)
        return result

    def _may_view(self, turn: Turn) -> tuple[Turn, str | None]:
        """The pane's viewed channel, if the asker is a member of it; else none, and why."""
        viewed = turn.viewed_channel
        if not viewed or self.membership.is_member(viewed, turn.user):
            return turn, None
        name = self.engine.names.channels.get(viewed, viewed)
        note = (
            f"You're viewing #{name}, which you are not a member of, so I can't use its "
            "conversations here; this answer uses no channel context."
        )
        return replace(turn, viewed_channel=None), note

    def _set_title(self, turn: Turn) -> None:
        if not (turn.assistant_thread and turn.title):
            return
        try:
            self.client.assistant_threads_setTitle(
                channel_id=turn.channel, thread_ts=turn.thread_ts, title=turn.title
            )
        except SlackApiError as error:
            logger.warning("could not set the thread title: %s", error.response.get("error"))

    def _show_working(self, turn: Turn, *, on: bool) -> None:
        """The user sees that the bot is on it: assistant status, or an :eyes: reaction."""
        try:
            if turn.assistant_thread:
                self.client.assistant_threads_setStatus(
                    channel_id=turn.channel,
                    thread_ts=turn.thread_ts,
                    status=_STATUS_TEXT if on else "",
                )
            elif on:
                self.client.reactions_add(
                    channel=turn.channel, timestamp=turn.anchor_ts, name="eyes"
                )
            else:
                self.client.reactions_remove(
                    channel=turn.channel, timestamp=turn.anchor_ts, name="eyes"
                )
        except SlackApiError as error:
            # A missing reaction scope must not cost the answer itself.
            logger.warning(
                "could not update the working indicator: %s", error.response.get("error")
            )

    def _post_failure(self, turn: Turn, reason: str) -> None:
        try:
            self.client.chat_postMessage(
                channel=turn.channel,
                thread_ts=turn.thread_ts,
                text=_FAILURE_TEXT.format(reason=reason),
            )
        except SlackApiError:
            logger.warning(
                "could not post the failure notice in %s/%s", turn.channel, turn.thread_ts
            )
