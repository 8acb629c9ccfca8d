"""Caches that let chanctx answer from the event stream instead of the Slack Web API.

``ChannelHistory`` is written through from every message event; ``ThreadReplyCache`` and
``ThreadStarterCache`` fetch through a small fetcher protocol (implemented by ``bot/``) only on a
miss or after their TTL, and are kept current from events in between. Nothing here imports a
platform SDK.

``MediaContentCache`` keeps downloaded file bytes (filled by ``bot/slack/media.py``), bounded by
their total size.

``RedisRateLimiter`` is ``RateLimiter`` with its buckets in Redis, so replicas of one bot share
the workspace's Slack budget.
"""

from __future__ import annotations

from chanctx.cache._channel import message_bytes
from chanctx.cache._clock import Clock, FakeClock
from chanctx.cache._history import ChannelHistory
from chanctx.cache._media import DEFAULT_MEDIA_CACHE_BYTES, CachedMedia, MediaContentCache
from chanctx.cache._thread_replies import CachedThread, ThreadFetcher, ThreadReplyCache
from chanctx.cache._thread_starters import MessageFetcher, ThreadStarterCache
from chanctx.cache._ts_keys import ts_key
from chanctx.cache.rate_limit import Limiter, RateLimited, RateLimiter, RedisRateLimiter

__all__ = [
    "DEFAULT_MEDIA_CACHE_BYTES",
    "CachedMedia",
    "CachedThread",
    "ChannelHistory",
    "Clock",
    "FakeClock",
    "Limiter",
    "MediaContentCache",
    "MessageFetcher",
    "RateLimited",
    "RateLimiter",
    "RedisRateLimiter",
    "ThreadFetcher",
    "ThreadReplyCache",
    "ThreadStarterCache",
    "message_bytes",
    "ts_key",
]
