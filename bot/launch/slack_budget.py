"""Slack's budget for this process: the rate limiter under ``--slack-tier`` with its background
lane, and the backfill that uses that lane (``--backfill``, ``--backfill-days``).

The answers' fetcher holds the workspace's ``PriorityLimiter`` and the backfill's fetcher uses
its background lane, so both draw on one budget; with ``--redis-url`` the budget itself is in
Redis, shared by the replicas, and one replica at a time runs a workspace's backfill (the one
holding its lease, ``bot/replicas/backfill_lease.py``), its writes reaching the others' stores
through the change stream. With ``--oauth`` each workspace has its own backfill, with its token
and its budget.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from chanctx.bot.core.backfill import Backfill
from chanctx.bot.core.backfill_plan import BackfillSettings
from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.launch.options import Options
from chanctx.bot.replicas.backfill_lease import BackfillLease
from chanctx.bot.replicas.replicas import Replicas
from chanctx.bot.slack.slack_api import SlackFetcher
from chanctx.cache import RateLimiter, RedisRateLimiter
from chanctx.cache.rate_limit import PriorityLimiter, SlackTier, slack_tier

__all__ = ["start_backfill", "tier_of", "tiered_limiter", "tiered_settings"]

logger = logging.getLogger("chanctx.backfill")


def tier_of(options: Options) -> SlackTier:
    return slack_tier(options.slack_tier)


def tiered_limiter(options: Options, team: str, redis_client: Any = None) -> PriorityLimiter:
    """The workspace's limiter under the tier (its buckets in Redis when replicas share it)."""
    tier, minute = tier_of(options), options.slack_minute_seconds
    per_method, workspace = tier.per_method(), tier.workspace_per_minute
    inner = (
        RedisRateLimiter(
            redis_client, team, calls_per_minute=workspace, per_method=per_method, minute=minute
        )
        if redis_client is not None
        else RateLimiter(calls_per_minute=workspace, per_method=per_method, minute=minute)
    )
    # What binds each history method: its own budget or the workspace's, the smaller.
    binding = {method: min(rate, workspace) for method, rate in per_method.items()}
    return PriorityLimiter(inner, binding, minute=minute, workspace_per_minute=workspace)


def tiered_settings(settings: ContextSettings, options: Options) -> ContextSettings:
    """A channel's first load is one page of the tier (15 messages under ``limited``): the
    rest is the backfill's."""
    page = tier_of(options).page
    return dataclasses.replace(
        settings, cold_start_messages=min(settings.cold_start_messages, page)
    )


def start_backfill(runtime: Runtime, options: Options) -> Backfill | None:
    """The workspace's backfill on its own thread (None when off or without a store)."""
    engine = runtime.engine
    if options.backfill == "off" or engine.record is None:
        return None
    answers = engine.slack
    if not isinstance(answers, SlackFetcher) or not isinstance(answers.limiter, PriorityLimiter):
        return None
    limiter = answers.limiter
    tier = tier_of(options)
    fetcher = SlackFetcher(
        runtime.client,
        limiter=limiter.background,
        me=engine.me,
        overflow="degrade",  # never waits in line: the lane says when to try again
        page_size=tier.page,
        max_retries=2,
    )
    settings = BackfillSettings(
        mode=options.backfill,
        days=options.backfill_days,
        page=tier.page,
        idle_seconds=min(5.0, options.slack_minute_seconds / 2),  # a look at the store is cheap
    )
    replicas = runtime.replicas
    gate, share = None, None
    if isinstance(replicas, Replicas):  # --redis-url: one replica at a time pages Slack
        gate = BackfillLease(replicas.link.client, replicas.team, replicas.name)
        share = replicas.feed.backfilled
    backfill = Backfill(
        engine.record, fetcher, settings, first_load=engine.warm_channel, gate=gate, share=share
    )
    backfill.start()
    return backfill
