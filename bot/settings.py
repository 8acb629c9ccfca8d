"""Run-time settings from the environment, checked before anything starts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from chanctx.context import ChanctxError
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunSettings", "SettingsError", "load_settings"]


class SettingsError(ChanctxError):
    """A missing or malformed setting; the message names it and says what is expected."""


class RunSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["socket", "http"]
    bot_token: str = Field(repr=False)
    app_token: str | None = Field(default=None, repr=False)
    signing_secret: str | None = Field(default=None, repr=False)
    port: int = 3000
    host: str = "0.0.0.0"
    # None: context-only mode (--no-claude), nothing is answered.
    anthropic_api_key: str | None = Field(default=None, repr=False)
    model: str = "claude-sonnet-5"
    data_dir: str = ".chanctx"
    home: str = "."
    attach_media: bool = False  # CHANCTX_ATTACH_MEDIA=1: attach the thread's files inline


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
    http: bool,
    port: int = 3000,
    host: str = "0.0.0.0",
    claude: bool = True,
    env: Mapping[str, str] | None = None,
) -> RunSettings:
    env = os.environ if env is None else env
    bot_token = _require(env, "SLACK_BOT_TOKEN", "xoxb-", "the bot token from OAuth & Permissions")
    common: dict[str, object] = {
        "bot_token": bot_token,
        "model": env.get("CHANCTX_MODEL", "").strip() or "claude-sonnet-5",
        "data_dir": env.get("CHANCTX_DATA_DIR", "").strip() or ".chanctx",
        "home": env.get("CHANCTX_HOME", "").strip() or ".",
        "attach_media": env.get("CHANCTX_ATTACH_MEDIA", "").strip().lower() in {"1", "true", "yes"},
    }
    if http:
        if not 0 < port < 65536:
            raise SettingsError(f"--port {port} is not a TCP port (1-65535).")
        common.update(
            mode="http",
            port=port,
            host=host,
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
    if claude:
        common["anthropic_api_key"] = _require(
            env,
            "ANTHROPIC_API_KEY",
            None,
            "the Claude API key (or run with --no-claude for context only)",
        )
    return RunSettings.model_validate(common)
