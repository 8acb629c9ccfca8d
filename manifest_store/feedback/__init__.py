"""Votes on the bot's answers: ``FeedbackStore`` (``base.py``) and its backends beside it.

* ``local.py``: :class:`LocalFeedbackStore`, one fsynced JSONL file in the data dir;
* ``redis.py``: :class:`RedisFeedbackStore`, keys in Redis, so a vote counts whichever replica
  posted the answer.
"""

from __future__ import annotations

from chanctx.manifest_store.feedback.base import (
    HARMFUL,
    HELPFUL,
    FeedbackStore,
    Verdict,
    Vote,
    verdict_of,
)
from chanctx.manifest_store.feedback.local import FEEDBACK_FILE, LocalFeedbackStore
from chanctx.manifest_store.feedback.redis import RedisFeedbackStore

__all__ = [
    "FEEDBACK_FILE",
    "HARMFUL",
    "HELPFUL",
    "FeedbackStore",
    "LocalFeedbackStore",
    "RedisFeedbackStore",
    "Verdict",
    "Vote",
    "verdict_of",
]
