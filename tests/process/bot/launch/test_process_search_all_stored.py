"""A restarted bot searches everything its channel store holds: a real `chanctx run --http` is
fed 20,000 signed message events (facts planted in messages 10, 100, 1,000 and 10,000, all
older than the newest 5,000 the history keeps), killed with SIGKILL and started again on the
same data dir. The query API then finds every fact, and a mention's ``channel_context`` call
returns the one it asks about, with no ``conversations.history`` nor ``conversations.replies``
call to Slack after the restart.
"""

from __future__ import annotations

import copy
import json
import re
import time
from pathlib import Path

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess
from bench._served_process import ready_status
from tests.process.bot.core.test_process_store_restart import (
    KEY,
    READS,
    deliver,
    query,
    stored_messages,
)
from tests.support.answered_mention import ask_by_mention
from tests.support.slack_events import CHANNEL, STATE, envelope, message, ts

MESSAGES = 20_000
FACTS = {
    10: ("what is the vault combination?", "the vault combination is 4417 amber"),
    100: ("who holds the spare badge?", "the spare badge is held by Marguerite at reception"),
    1_000: ("where is the offsite?", "the offsite moves to the Lisbon harbour office"),
    10_000: ("which supplier for cables?", "cables now come from the supplier Quillbrook"),
}
_BUILT = re.compile(r"index built from the channel store: (\d+) messages in ([\d.]+) s")

pytestmark = pytest.mark.slow


def events() -> list[dict[str, object]]:
    out = []
    for n in range(MESSAGES):
        text = FACTS[n][1] if n in FACTS else f"status update {n}: builds green, depth {n % 17}"
        out.append(envelope(message(ts(n), text, user="U2" if n % 2 else "U1")))
    return out


def test_a_restart_searches_all_20000_stored_messages(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({KEY: [CHANNEL]}))
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(
            data, slack.url, claude.url,
            extra_args=("--api-keys", str(keys)), env={"CHANCTX_LOG_LEVEL": "info"},
        )  # fmt: skip
        bot.start(timeout=300)
        base = bot.url.removesuffix("/slack/events")
        try:
            statuses = deliver(bot.url, events())
            assert statuses.count(200) == MESSAGES, bot.log_tail()
            before = query(base, FACTS[10][0])
            assert "4417 amber" in before["rendered"], before["rendered"][:500]
            held_before = stored_messages(data)
            bot.kill()

            calls_before = slack.call_counts()
            spawned = time.monotonic()
            bot.start(timeout=300)  # imports alone take many seconds on a loaded machine
            listening = time.monotonic()
            while ready_status(base) != 200:
                assert time.monotonic() - listening < 120, bot.log_tail()
                time.sleep(0.05)
            to_ready = time.monotonic() - listening
            from_spawn = time.monotonic() - spawned
            asked = time.monotonic()
            for n, (question, fact) in FACTS.items():
                found = query(base, question)["rendered"]
                assert fact in found, f"message {n}: {found[:500]}"
            first_queries = time.monotonic() - asked
            held_after = stored_messages(data)

            sent = ask_by_mention(bot, slack, claude, ts(MESSAGES + 5), FACTS[100][0])
            calls_after = slack.call_counts()
        finally:
            bot.stop()
    log = (tmp_path / "bot-2.log").read_text(errors="replace")
    # A build under a second is logged at DEBUG only: then the line is absent.
    found = _BUILT.search(log)
    built = f"{found[1]} messages in {found[2]} s" if found else "all in under a second"
    assert "tool_result" in sent and "Marguerite at reception" in sent
    reads = {m: calls_after.get(m, 0) - calls_before.get(m, 0) for m in READS}
    print(
        f"\nsearch all stored: {MESSAGES} delivered; stored {held_before} before the kill, "
        f"{held_after} after; index built from the store after the restart: {built}; "
        f"/readyz 200 {to_ready:.2f} s after the port opened "
        f"({from_spawn:.1f} s after spawn); "
        f"four queries (the first builds the index) {first_queries:.1f} s; Slack reads "
        f"after the restart {reads}"
    )
    assert reads == {m: 0 for m in READS}, calls_after
    assert held_after == held_before == MESSAGES
    assert found is None or int(found[1]) == MESSAGES  # the whole channel, when logged
