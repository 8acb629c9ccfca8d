"""`chanctx run --http --oauth`: two workspaces install the app through Slack's OAuth flow
(over HTTP, state cookie and all), each is answered from its own channel only, with its own
data directory; uninstalling one deletes its data and the other goes on, across a kill -9.

The fake Slack serves both workspaces behind one Web API URL and routes each call by its token
to the workspace it belongs to, as Slack does (bot/replay/fake_workspaces.py).
"""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_workspaces import FakeSlackWorkspaces

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, STATE, envelope, mention_pair, message, ts

TEAMS = {
    "T0ACME0001": ("C0ACMEOPS1", "ops", "the payments database failover finished at 14:02"),
    "T0GLOBEX01": ("C0GLOBEX01", "deploys", "the mobile release 7.3 is blocked on app review"),
}
CLIENT_ID, CLIENT_SECRET = "1111.2222", "process-test-client-secret"


def team_state(team: str) -> dict[str, Any]:
    channel, name, fact = TEAMS[team]
    state = copy.deepcopy(STATE)
    state["auth"]["team_id"] = team
    state["channels"] = {channel: {"id": channel, "name": name}}
    history = []
    for n in range(1, 4):
        item = message(ts(n), f"Update {n}: {fact} (report {n} of 3)", channel=channel)
        item.pop("channel")
        history.append(item)
    state["history"] = {channel: history}
    return state


def for_team(team: str, item: dict[str, Any]) -> dict[str, Any]:
    item["team_id"] = team
    item["authorizations"] = [{"team_id": team, "user_id": BOT_USER, "is_bot": True}]
    return item


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def fake_workspaces() -> FakeSlackWorkspaces:
    """Both teams behind one fake Slack, which knows the app's client id and secret."""
    states = {team: team_state(team) for team in TEAMS}
    return FakeSlackWorkspaces(states, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)


def oauth_bot(data: Path, slack_url: str, claude_url: str, *args: str) -> BotProcess:
    """`chanctx run --http --oauth` with the app's client id and secret (no bot token)."""
    bot = BotProcess(
        data,
        slack_url,
        claude_url,
        extra_args=("--oauth", *args),
        env={"SLACK_BOT_TOKEN": "", "SLACK_CLIENT_ID": CLIENT_ID,
             "SLACK_CLIENT_SECRET": CLIENT_SECRET},
    )  # fmt: skip
    bot.env["SLACK_REDIRECT_URI"] = bot.url.replace("/slack/events", "/slack/oauth_redirect")
    return bot


def install(bot: BotProcess, team: str) -> int:
    """A person installs the app into ``team``: the bot's install link, Slack's approval page
    (choosing the team), Slack's redirect back; the status of the bot's final page."""
    opener = urllib.request.build_opener(NoRedirect)
    base = bot.url.removesuffix("/slack/events")
    cookies: list[str] = []

    def location(url: str) -> str:
        try:
            opener.open(url, timeout=10)
        except urllib.error.HTTPError as answer:
            assert answer.code == 302, answer.read()
            # The state cookie is Secure (HTTPS in production): a browser on loopback HTTP
            # is played by hand here.
            cookies.extend(c.split(";")[0] for c in answer.headers.get_all("Set-Cookie") or [])
            return str(answer.headers["Location"])
        raise AssertionError(f"{url} did not redirect")

    authorize = location(f"{base}/slack/install")
    assert cookies, "the install step set no state cookie"
    query = dict(parse_qsl(urlsplit(authorize).query))
    assert query["client_id"] == CLIENT_ID and "chat:write" in query["scope"]
    back = location(f"{authorize}&team={team}")
    assert "code=" in back
    request = urllib.request.Request(back, headers={"Cookie": "; ".join(cookies)})
    try:
        with opener.open(request, timeout=30) as page:
            return int(page.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def answers(fakes: FakeSlackWorkspaces, team: str, anchor: str) -> list[dict[str, Any]]:
    channel = TEAMS[team][0]
    return [
        m
        for m in fakes.teams[team].messages(channel)
        if m.get("user") == BOT_USER and m.get("thread_ts") == anchor and m.get("metadata")
    ]


def wait_for(check: Any, what: str, bot: BotProcess, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}; log: {bot.log_tail()}")  # pragma: no cover


def listed_channels(fakes: FakeSlackWorkspaces, team: str) -> bool:
    """The team's backfill listed its channels (users.conversations), with the team's token."""
    return bool(fakes.teams[team].call_counts().get("users.conversations"))


def ask(bot: BotProcess, fakes: FakeSlackWorkspaces, team: str, at: str) -> None:
    channel = TEAMS[team][0]
    pair = mention_pair(at, "what is the latest update here?", channel=channel)
    fakes.teams[team].mirror_event(pair[0]["event"])
    for item in pair:
        assert post_signed(bot.url, for_team(team, item)) == 200


def test_two_workspaces_install_by_oauth_stay_apart_and_an_uninstall_deletes_only_its_own(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with (
        fake_workspaces() as fakes,
        FakeAnthropicAPI() as claude,
    ):
        bot = oauth_bot(data, fakes.url, claude.url)
        bot.start()
        try:
            acme, globex = TEAMS
            assert install(bot, acme) == 200, bot.log_tail()
            assert install(bot, globex) == 200, bot.log_tail()
            ask(bot, fakes, acme, ts(60))
            ask(bot, fakes, globex, ts(61))
            wait_for(lambda: answers(fakes, acme, ts(60)), "ACME's answer", bot)
            wait_for(lambda: answers(fakes, globex, ts(61)), "Globex's answer", bot)
            (acme_answer,) = answers(fakes, acme, ts(60))
            (globex_answer,) = answers(fakes, globex, ts(61))
            assert "failover" in acme_answer["text"] and "mobile" not in acme_answer["text"]
            assert "mobile" in globex_answer["text"] and "failover" not in globex_answer["text"]
            # Each workspace runs its own backfill, with its own token (the fake routes by it).
            for team in TEAMS:
                wait_for(lambda t=team: listed_channels(fakes, t), f"{team}'s backfill", bot)
            # Each team's state lives in its own directory; nothing of one is in the other's.
            for team, (_, _, fact) in TEAMS.items():
                other = next(t for t in TEAMS if t != team)
                kept = "".join(
                    p.read_text(errors="replace") for p in (data / "teams" / team).rglob("*")
                    if p.is_file()
                )  # fmt: skip
                assert fact.split()[2] in kept and TEAMS[other][2].split()[2] not in kept
                assert TEAMS[other][0] not in kept
            # Globex uninstalls: its data and installation go; ACME is untouched.
            fakes.revoke(globex)
            gone = envelope({"type": "app_uninstalled", "event_ts": ts(70)})
            assert post_signed(bot.url, for_team(globex, gone)) == 200
            wait_for(lambda: not (data / "teams" / globex).exists(), "Globex's data to go", bot)
            installed = json.dumps(
                sorted(str(p) for p in (data / "installations").rglob("*") if p.is_file())
            )
            assert globex not in installed and acme in installed
            calls_before = fakes.teams[globex].call_counts()
            ask(bot, fakes, globex, ts(80))  # acknowledged, never answered
            # kill -9: ACME is still installed after the restart and answered; Globex is not.
            bot.kill()
            bot.start()
            ask(bot, fakes, acme, ts(90))
            wait_for(lambda: answers(fakes, acme, ts(90)), "ACME's answer after the restart", bot)
            ask(bot, fakes, globex, ts(91))
            time.sleep(0.5)
            assert answers(fakes, globex, ts(80)) == answers(fakes, globex, ts(91)) == []
            assert fakes.teams[globex].call_counts() == calls_before
            assert not (data / "teams" / globex).exists()
        finally:
            bot.stop()
