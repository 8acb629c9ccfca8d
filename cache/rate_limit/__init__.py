"""Slack's rate limit, kept by the bot: ``Limiter`` (``base.py``) and its backends beside it.

* ``local.py``: :class:`RateLimiter`, the buckets in this process's memory;
* ``redis.py``: :class:`RedisRateLimiter`, the buckets in Redis, so replicas of one bot share
  the workspace's budget;
* ``tiers.py``: Slack's rate tiers (``--slack-tier``), the budgets and page size of each;
* ``priority.py``: :class:`PriorityLimiter`, answers first and a background lane for backfill.
"""

from __future__ import annotations

from chanctx.cache.rate_limit.base import DEFAULT_PER_METHOD, Limiter, RateLimited
from chanctx.cache.rate_limit.local import RateLimiter
from chanctx.cache.rate_limit.priority import PriorityLimiter
from chanctx.cache.rate_limit.redis import RedisRateLimiter
from chanctx.cache.rate_limit.tiers import TIERS, SlackTier, slack_tier

__all__ = [
    "DEFAULT_PER_METHOD",
    "TIERS",
    "Limiter",
    "PriorityLimiter",
    "RateLimited",
    "RateLimiter",
    "RedisRateLimiter",
    "SlackTier",
    "slack_tier",
]
