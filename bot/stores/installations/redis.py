"""Slack's OAuth installations in Redis: slack_sdk's ``InstallationStore`` for replicas.

Every replica must find the token of every workspace that installed the app, whichever replica
ran the OAuth flow. Keys are per workspace, the team id first as everywhere in chanctx (an
org-wide install has no team: ``-``), then the enterprise id (``-`` outside Enterprise Grid):

    chanctx:<team>:oauth:<enterprise>:bot                 the latest bot installation (JSON)
    chanctx:<team>:oauth:<enterprise>:installer           the latest installation (JSON)
    chanctx:<team>:oauth:<enterprise>:installer:<user>    the latest installation by that user

The JSON is slack_sdk's own (``Installation(**data)`` reads it back), as its file store writes.
Tokens are secrets: Redis holding them must require a password (or TLS and ACLs), as the README
says. A Redis outage raises StoreUnavailable (an OSError).
"""

from __future__ import annotations

import json
import logging
from logging import Logger
from typing import Any

from chanctx.manifest_store import check_team, guarded
from slack_sdk.oauth.installation_store import Bot, Installation, InstallationStore

__all__ = ["RedisInstallationStore"]


def _id(value: str | None) -> str:
    return check_team(value) if value else "-"


class RedisInstallationStore(InstallationStore):
    def __init__(self, client: Any, *, logger: Logger | None = None) -> None:
        self._client = client
        self._logger = logger or logging.getLogger("chanctx.installations")

    @property
    def logger(self) -> Logger:
        return self._logger

    @staticmethod
    def _base(enterprise_id: str | None, team_id: str | None, org_wide: bool | None) -> str:
        team = None if org_wide else team_id
        return f"chanctx:{_id(team)}:oauth:{_id(enterprise_id)}:"

    def save(self, installation: Installation) -> None:
        base = self._base(
            installation.enterprise_id, installation.team_id, installation.is_enterprise_install
        )
        data = json.dumps(installation.__dict__)
        user = _id(installation.user_id)
        with guarded("save a Slack installation"):
            pipe = self._client.pipeline(transaction=True)
            pipe.set(base + "installer", data)
            pipe.set(f"{base}installer:{user}", data)
            pipe.execute()
        self.save_bot(installation.to_bot())

    def save_bot(self, bot: Bot) -> None:
        if bot.bot_token is None:
            return  # a user-only installation: no bot to keep
        base = self._base(bot.enterprise_id, bot.team_id, bot.is_enterprise_install)
        with guarded("save a Slack bot installation"):
            self._client.set(base + "bot", json.dumps(bot.__dict__))

    def find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        base = self._base(enterprise_id, team_id, is_enterprise_install)
        with guarded("read a Slack bot installation"):
            raw = self._client.get(base + "bot")
        return None if raw is None else Bot(**json.loads(raw))

    def find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        base = self._base(enterprise_id, team_id, is_enterprise_install)
        key = base + "installer" + (f":{_id(user_id)}" if user_id else "")
        with guarded("read a Slack installation"):
            raw = self._client.get(key)
        if raw is None:
            return None
        installation = Installation(**json.loads(raw))
        if user_id is not None or installation.bot_token is None:
            # A user's installation carries the bot token of its day: take the latest bot's.
            bot = self.find_bot(
                enterprise_id=enterprise_id,
                team_id=team_id,
                is_enterprise_install=is_enterprise_install,
            )
            if bot is not None and bot.bot_token != installation.bot_token:
                installation.bot_id = bot.bot_id
                installation.bot_user_id = bot.bot_user_id
                installation.bot_token = bot.bot_token
                installation.bot_scopes = bot.bot_scopes
                installation.bot_refresh_token = bot.bot_refresh_token
                installation.bot_token_expires_at = bot.bot_token_expires_at
        return installation

    def delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        with guarded("delete a Slack bot installation"):
            self._client.delete(self._base(enterprise_id, team_id, False) + "bot")

    def delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        base = self._base(enterprise_id, team_id, False)
        with guarded("delete a Slack installation"):
            if user_id is not None:
                self._client.delete(f"{base}installer:{_id(user_id)}")
                return
            doomed = [base + "installer", *self._client.scan_iter(match=base + "installer:*")]
            self._client.delete(*doomed)

    def delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self.delete_bot(enterprise_id=enterprise_id, team_id=team_id)
        self.delete_installation(enterprise_id=enterprise_id, team_id=team_id)
