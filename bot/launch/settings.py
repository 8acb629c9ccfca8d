"""Run-time settings from the environment, checked before anything starts."""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from chanctx.bot.launch.options import Options, SettingsError, resolve_options
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunSettings", "SettingsError", "load_settings"]


SLACK_API = "https://slack.com/api/"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _slack_api_url(env: Mapping[str, str]) -> str:
    """SLACK_API_URL, if set: Slack's HTTPS hosts, or a loopback fake (`chanctx fakes`). The
    bot token is sent to it, so nothing else is accepted."""
    raw = env.get("SLACK_API_URL", "").strip()
    if not raw:
        return SLACK_API
    parts = urlsplit(raw)
    host = (parts.hostname or "").lower()
    slack = parts.scheme == "https" and (host == "slack.com" or host.endswith(".slack.com"))
    loopback = parts.scheme in ("http", "https") and host in _LOOPBACK
    if not (slack or loopback):
        raise SettingsError(
            f"SLACK_API_URL must be https on slack.com or a loopback fake (http://127.0.0.1:PORT/api/), "
            f"got {raw!r}: the bot token is sent there"
        )
    return raw if raw.endswith("/") else raw + "/"


class RunSettings(BaseModel):
    """What ``run`` and ``record`` need: the secrets (never printed) and the resolved options."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["socket", "http"]
    bot_token: str = Field(default="", repr=False)  # "" with --oauth: each team has its own
    app_token: str | None = Field(default=None, repr=False)
    signing_secret: str | None = Field(default=None, repr=False)
    # None: context-only mode (--no-claude), nothing is answered.
    anthropic_api_key: str | None = Field(default=None, repr=False)
    options: Options
    # The Web API base URL (SLACK_API_URL): Slack's own unless pointed at loopback fakes.
    slack_api_url: str = SLACK_API
    # --oauth: the app's credentials, and the redirect URL if Slack has several on file.
    client_id: str | None = None
    client_secret: str | None = Field(default=None, repr=False)
    redirect_uri: str | None = None

    @property
    def oauth(self) -> bool:
        return self.client_id is not None

    @property
    def port(self) -> int:
        return self.options.port

    @property
    def host(self) -> str:
        return self.options.host

    @property
    def model(self) -> str:
        return self.options.model

    @property
    def data_dir(self) -> Path:
        return self.options.data_dir or Path(".chanctx")

    @property
    def home(self) -> Path:
        return self.options.home or Path(".")

    @property
    def attach_media(self) -> bool:
        return self.options.attach_media


def _require(env: Mapping[str, str], name: str, prefix: str | None, purpose: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(f"{name} is not set: {purpose}.")
    if prefix and not value.startswith(prefix):
        # Never echo the value: it is a secret even when it is the wrong one.
        raise SettingsError(
            f"{name} does not look right: it should start with '{prefix}' ({purpose})."
        )
    return value


def load_settings(
    *,
    options: Options | None = None,
    env: Mapping[str, str] | None = None,
    http: bool | None = None,
    port: int | None = None,
    host: str | None = None,
    claude: bool | None = None,
) -> RunSettings:
    """The secrets from ``env`` and the options (from ``env`` too when not given); the keyword
    arguments override single options, for callers that build settings in code."""
    env = os.environ if env is None else env
    options = options or resolve_options(Namespace(), env, "run")
    given = {"http": http, "port": port, "host": host, "claude": claude}
    options = options.model_copy(update={k: v for k, v in given.items() if v is not None})
    if not 0 < options.port < 65536:
        raise SettingsError(f"--port {options.port} is not a TCP port (1-65535).")
    common: dict[str, object] = {"options": options, "slack_api_url": _slack_api_url(env)}
    if options.oauth:
        if not options.http:
            raise SettingsError(
                "--oauth needs --http: Socket Mode serves one workspace (its SLACK_BOT_TOKEN)."
            )
        common["client_id"] = _require(
            env, "SLACK_CLIENT_ID", None, "Basic Information > App Credentials > Client ID"
        )
        common["client_secret"] = _require(
            env, "SLACK_CLIENT_SECRET", None, "Basic Information > App Credentials > Client Secret"
        )
        common["redirect_uri"] = env.get("SLACK_REDIRECT_URI", "").strip() or None
    else:
        common["bot_token"] = _require(
            env, "SLACK_BOT_TOKEN", "xoxb-", "the bot token from OAuth & Permissions"
        )
    if options.http:
        common.update(
            mode="http",
            signing_secret=_require(
                env,
                "SLACK_SIGNING_SECRET",
                None,
                "Basic Information > Signing Secret, to verify requests",
            ),
        )
    else:
        common.update(
            mode="socket",
            app_token=_require(
                env,
                "SLACK_APP_TOKEN",
                "xapp-",
                "an app-level token with connections:write, for Socket Mode",
            ),
        )
    if options.claude:
        common["anthropic_api_key"] = _require(
            env,
            "ANTHROPIC_API_KEY",
            None,
            "the Claude API key (or run with --no-claude for context only)",
        )
    return RunSettings.model_validate(common)
