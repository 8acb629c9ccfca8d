"""``/chanctx``: help, status and forget, through the real Bolt app as Slack delivers a slash
command, answered to the person who typed it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from chanctx.bot.events.listeners.commands import thread_ts_of
from chanctx.bot.replay.offline import OfflineBot
from chanctx.manifest_store import SessionKey, SessionStore

from tests.support.slack_events import CHANNEL, STATE, TEAM, envelope, mention_pair, message, ts

START = float(ts(0).split(".")[0])
ROOT = ts(1)


def command(text: str, channel: str = CHANNEL) -> dict[str, Any]:
    return {
        "token": "REDACTED", "team_id": TEAM, "team_domain": "acme", "channel_id": channel,
        "channel_name": "general", "user_id": "U1", "user_name": "ana", "command": "/chanctx",
        "text": text, "api_app_id": "A0CHANCTX1", "trigger_id": "1.2.3",
        "response_url": "https://hooks.slack.com/commands/T/1/x",
    }  # fmt: skip


def run(bot: OfflineBot, text: str) -> str:
    response = bot.dispatch(command(text))
    assert response.status == 200
    # Bolt acknowledges a command with the text itself; Socket Mode wraps it as {"text": ...}.
    assert response.headers["content-type"][0].startswith("text/plain")
    return str(response.body)


def new_bot(data_dir: Path) -> OfflineBot:
    return OfflineBot(copy.deepcopy(STATE), claude=True, data_dir=data_dir, start_time=START)


def ask_in_thread(bot: OfflineBot, at: str) -> None:
    for item in mention_pair(at, "what broke checkout?", thread_ts=ROOT):
        bot.dispatch(item)


def test_help_and_an_unknown_word(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        assert run(bot, "").startswith("*/chanctx*")
        assert "`/chanctx status`" in run(bot, "help")
        unknown = run(bot, "selfdestruct now")
        assert unknown.startswith("I don't know `selfdestruct`.")


def test_status_says_what_is_cached_and_what_the_last_answer_cost(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        before = run(bot, "status")
        assert "no answer here since I started" in before
        bot.dispatch(envelope(message(ROOT, "Checkout returns 502 since the deploy")))
        ask_in_thread(bot, ts(10))
        after = run(bot, "status")
        assert "2 messages of this channel in memory" in after
        assert "budgets: snapshot 1,500 tokens, thread 8,000 tokens, 20 nearby messages" in after
        (result,) = bot.runtime.runner.results
        requests = result.usage["requests"]
        assert f"{requests} request(s)" in after and "read from the prompt cache" in after


def test_forget_asks_to_confirm_then_drops_the_threads_session(tmp_path: Path) -> None:
    key = SessionKey(TEAM, CHANNEL, ROOT)
    with new_bot(tmp_path) as bot:
        bot.dispatch(envelope(message(ROOT, "Checkout returns 502 since the deploy")))
        ask_in_thread(bot, ts(10))
        assert SessionStore(tmp_path).exists(key)
        link = f"https://acme.slack.com/archives/{CHANNEL}/p{ROOT.replace('.', '')}"
        asked = run(bot, f"forget {link}")
        assert "Run `/chanctx forget" in asked and asked.endswith("confirm` to do it.")
        assert SessionStore(tmp_path).exists(key)  # nothing deleted without confirm
        assert run(bot, f"forget {link} confirm") == (
            f"Forgotten: thread {ROOT}. The next mention there starts afresh."
        )
        assert not SessionStore(tmp_path).exists(key)
        assert (
            run(bot, f"forget {ROOT} confirm") == f"I hold no conversation for thread {ROOT} here."
        )
        ask_in_thread(bot, ts(30))  # a new session: turn 1 again, with the whole package
        assert bot.anthropic is not None
        sent = [r.body for r in bot.anthropic.requests if r.path == "/v1/messages"]
        # The offline model makes two requests a turn (a search, then the answer): the new
        # turn's first request carries no earlier conversation, only its own fresh package.
        assert len(sent) == 4 and len(sent[2]["messages"]) == 1
        assert "CHANNEL CONTEXT PACKAGE" in json.dumps(sent[2]["messages"][0])


def test_forget_refuses_a_thread_of_another_channel_and_what_is_not_a_link(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        other = f"https://acme.slack.com/archives/C0OTHER001/p{ROOT.replace('.', '')}"
        assert run(bot, f"forget {other} confirm").startswith("That thread is in another channel")
        assert run(bot, "forget yesterday") == "`yesterday` is not a Slack message link or ts."
        assert run(bot, "forget").startswith("Which thread?")


def test_links_to_replies_name_their_thread() -> None:
    reply = f"https://acme.slack.com/archives/{CHANNEL}/p1781020900000200?thread_ts={ROOT}&cid=C"
    assert thread_ts_of(reply) == (CHANNEL, ROOT)
    assert thread_ts_of(ROOT) == (None, ROOT)
    assert thread_ts_of("p123") is None
