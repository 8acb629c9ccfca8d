"""Replaying several workspaces at once: what ``run --http --oauth`` runs, against loopback fakes.

The fixture's ``slack_api.json`` holds ``workspaces`` (team id -> that team's state). Each team
is installed in a real ``FileInstallationStore`` in the data dir (as the OAuth flow leaves it),
the OAuth-mode Bolt App (bot/events/app.py ``build_oauth_app``) routes every envelope by its team
to that team's runtime (bot/events/workspaces.py), and each runtime is wired like a one-team replay
(``OfflineBot``), with its own data directory and its own calls to the one fake Web API URL,
which hands each call to the workspace its token belongs to. Time is virtual and shared.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.core.runtime import Runtime
from chanctx.bot.events.app import build_oauth_app
from chanctx.bot.events.workspaces import Workspaces
from chanctx.bot.replay.fake_workspaces import FakeSlackWorkspaces
from chanctx.bot.replay.offline import OfflineBot, ReplayClock
from chanctx.bot.slack.scopes import BOT_SCOPES
from slack_bolt import BoltResponse
from slack_bolt.oauth.oauth_settings import OAuthSettings
from slack_bolt.request import BoltRequest
from slack_sdk import WebClient
from slack_sdk.oauth.installation_store import FileInstallationStore, Installation
from slack_sdk.oauth.state_store import FileOAuthStateStore

__all__ = ["OfflineWorkspaces"]

_CLIENT_ID, _CLIENT_SECRET = "1111.2222", "offline-not-a-secret"


class OfflineWorkspaces:
    def __init__(
        self,
        workspaces: Mapping[str, Mapping[str, Any]],
        *,
        start_time: float = 0.0,
        data_dir: Path | None = None,
        claude: bool = True,
        cassette: Sequence[dict[str, Any]] = (),
        **bot_options: Any,
    ) -> None:
        self.clock = ReplayClock(start_time)
        self.fakes = FakeSlackWorkspaces(
            workspaces, client_id=_CLIENT_ID, client_secret=_CLIENT_SECRET, clock=self.clock
        )
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="chanctx-replay-teams-")
            data_dir = Path(self._tmp.name)
        self.data_dir = data_dir
        store = FileInstallationStore(
            base_dir=str(data_dir / "installations"), client_id=_CLIENT_ID
        )
        for team, fake in self.fakes.teams.items():
            auth = fake.identity()
            store.save(
                Installation(
                    app_id="A0FAKEAPP1",
                    team_id=team,
                    bot_token=self.fakes.token_of(team),
                    bot_id=str(auth.get("bot_id", "")),
                    bot_user_id=str(auth.get("user_id", "")),
                    bot_scopes=list(BOT_SCOPES),
                    user_id="U0INSTALL1",
                    installed_at=start_time or time.time(),
                )
            )
        self.bots: dict[str, OfflineBot] = {}

        def build(team: str, client: WebClient, path: Path) -> Runtime:
            bot = OfflineBot(
                start_time=start_time,
                data_dir=path,
                claude=claude,
                cassette=cassette,
                workspace=(self.fakes.teams[team], self.fakes.url, self.fakes.token_of(team),
                           self.clock),
                **bot_options,
            )  # fmt: skip
            self.bots[team] = bot
            return bot.runtime

        self.workspaces = Workspaces(
            store, build, data_dir=data_dir, api_url=self.fakes.url, recover_in_background=False
        )
        settings = OAuthSettings(
            client_id=_CLIENT_ID,
            client_secret=_CLIENT_SECRET,
            scopes=list(BOT_SCOPES),
            installation_store=store,
            installation_store_bot_only=True,
            state_store=FileOAuthStateStore(
                expiration_seconds=600, base_dir=str(data_dir / "oauth_states")
            ),
        )
        self.app = build_oauth_app(
            self.workspaces, oauth_settings=settings, client=WebClient(base_url=self.fakes.url)
        )

    def dispatch(self, envelope: Mapping[str, Any]) -> BoltResponse:
        """Deliver one envelope of any workspace; wait for the answers it starts."""
        self.clock.set(float(envelope.get("event_time") or self.clock.now))
        team = envelope.get("team_id")
        event = envelope.get("event")
        if isinstance(team, str) and team in self.fakes.teams and isinstance(event, dict):
            self.fakes.teams[team].mirror_event(event)
        response = self.app.dispatch(BoltRequest(body=json.dumps(envelope), mode="socket_mode"))
        for bot in list(self.bots.values()):
            bot.runtime.runner.drain()
        return response

    def close(self) -> None:
        for bot in self.bots.values():
            bot.close()
        self.fakes.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> OfflineWorkspaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
