"""A channel's pinned messages, kept from pin events and one ``pins.list`` a channel and process.

A pin event is newer than any list: a pin removed recently stays off even when a ``pins.list``
that raced the event still names it. Slack allows 100 pins a channel; the newest are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

from cachetools import TTLCache
from chanctx.bot.slack.intake import Pin
from chanctx.context import Message

__all__ = ["MAX_PINS", "ChannelPins"]

MAX_PINS: Final = 100  # Slack's own limit per channel


class ChannelPins:
    """Pins per channel, newest pin last; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pins: dict[str, OrderedDict[str, Message]] = {}
        self._unpinned: TTLCache[tuple[str, str], bool] = TTLCache(maxsize=10_000, ttl=3600)
        self._listed: set[str] = set()  # channels whose pins.list was read (or is being read)

    def on_pin(self, action: Pin) -> bool:
        """Apply a pin event; True when the message was pinned (the caller records it)."""
        message = action.message
        with self._lock:
            pins = self._pins.setdefault(message.channel, OrderedDict())
            pins.pop(message.ts, None)
            self._unpinned.pop((message.channel, message.ts), None)
            if not action.added:  # a cold start's pins.list may still list it
                self._unpinned[(message.channel, message.ts)] = True
                if not pins:
                    self._pins.pop(message.channel, None)
                return False
            pins[message.ts] = message
            while len(pins) > MAX_PINS:
                pins.popitem(last=False)
            return True

    def first_look(self, channel: str) -> bool:
        """True once a channel and process: the caller then reads ``pins.list``."""
        with self._lock:
            if channel in self._listed:
                return False
            self._listed.add(channel)
            return True

    def listed(self, channel: str, pinned: Sequence[Message]) -> None:
        """What ``pins.list`` said; pin events seen since win (they are newer)."""
        with self._lock:
            known = self._pins.get(channel, OrderedDict())
            fresh = OrderedDict(
                (m.ts, m) for m in pinned[-MAX_PINS:] if (channel, m.ts) not in self._unpinned
            )
            fresh.update(known)
            if fresh:
                self._pins[channel] = fresh

    def of(self, channel: str) -> list[Message]:
        with self._lock:
            return list(self._pins.get(channel, {}).values())
