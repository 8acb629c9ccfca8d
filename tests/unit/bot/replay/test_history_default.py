"""A replay holds what the running bot holds: the offline bot, the replay's options and
``chanctx run`` share one ``--history-mb`` default, so a replay ranks over the same history and
index budget as the bot it stands in for."""

from __future__ import annotations

import inspect

from chanctx.bot.core.data_flags import DEFAULT_HISTORY_MB
from chanctx.bot.launch.options import Options
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.replay.runner import ReplayOptions


def test_the_replay_and_the_bot_share_the_history_budget() -> None:
    offline = inspect.signature(OfflineBot.__init__).parameters["history_mb"].default
    assert offline == ReplayOptions().history_mb == Options().history_mb == DEFAULT_HISTORY_MB
    assert DEFAULT_HISTORY_MB == 256
