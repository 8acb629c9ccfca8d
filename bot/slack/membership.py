"""Is this user a member of that channel? Asked before the assistant pane uses a channel.

A user viewing #incidents in the assistant pane gets answers from #incidents only if they could
read it themselves: the bot's own membership must not become a way into a channel. The answer
comes from ``conversations.members`` (paginated), cached for a few minutes per channel so a busy
pane costs one call per channel, not one per question. Any failure answers "no".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from cachetools import TTLCache
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["MembershipChecker"]

logger = logging.getLogger("chanctx.membership")
_TTL = 300.0  # seconds: joining or leaving a channel shows within five minutes
_MAX_CHANNELS = 500
_MAX_PAGES = 20  # 20 x 1,000 members; larger channels are answered from what was listed


class MembershipChecker:
    def __init__(self, client: WebClient, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._members: TTLCache[str, frozenset[str]] = TTLCache(_MAX_CHANNELS, _TTL, timer=clock)

    def is_member(self, channel: str, user: str) -> bool:
        if not channel or not user:
            return False
        with self._lock:
            members = self._members.get(channel)
        if members is None:
            members = self._fetch(channel)
            with self._lock:
                self._members[channel] = members
        return user in members

    def _fetch(self, channel: str) -> frozenset[str]:
        found: set[str] = set()
        cursor = ""
        try:
            for _ in range(_MAX_PAGES):
                page = self._client.conversations_members(
                    channel=channel, cursor=cursor, limit=1000
                )
                found.update(str(m) for m in page.get("members") or [])
                cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
                if not cursor:
                    break
        except SlackApiError as error:
            logger.warning(
                "could not list the members of %s (%s): treating the user as not a member",
                channel,
                error.response.get("error"),
            )
        return frozenset(found)
