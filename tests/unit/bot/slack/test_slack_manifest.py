"""The app manifest asks for every scope the bot's Web API calls need, in every kind of
conversation it works in (channels, private channels, DMs, group DMs), and nothing is called that
the table below does not know: a new call without its scope fails here, not in a workspace."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml
from chanctx.bot.replay.fake_slack import FILE_DOWNLOAD
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.runner import replay

from tests.support.paths import ROOT

FIXTURES = sorted(p.parent for p in (ROOT / "fixtures").glob("*/events.jsonl"))

READ = {"channels:read", "groups:read", "im:read", "mpim:read"}
HISTORY = {"channels:history", "groups:history", "im:history", "mpim:history"}
# Slack's documented scopes per method (the bot token's), for all four conversation types.
REQUIRED: dict[str, set[str]] = {
    "auth.test": set(),
    "conversations.info": READ,
    "conversations.members": READ,
    "conversations.history": HISTORY,
    "conversations.replies": HISTORY,
    "users.info": {"users:read"},
    "chat.postMessage": {"chat:write"},
    "chat.update": {"chat:write"},
    "chat.startStream": {"chat:write"},
    "chat.appendStream": {"chat:write"},
    "chat.stopStream": {"chat:write"},
    "reactions.add": {"reactions:write"},
    "reactions.remove": {"reactions:write"},
    "files.info": {"files:read"},
    "pins.list": {"pins:read"},
    FILE_DOWNLOAD: {"files:read"},
    "assistant.threads.setStatus": {"assistant:write"},
    "assistant.threads.setTitle": {"assistant:write"},
    "assistant.threads.setSuggestedPrompts": {"assistant:write"},
}


def manifest_scopes() -> set[str]:
    manifest = yaml.safe_load((ROOT / "slack-app-manifest.yaml").read_text())
    return set(manifest["oauth_config"]["scopes"]["bot"])


@functools.cache
def called(fixture: Path) -> frozenset[str]:
    return frozenset(replay(load_fixture(fixture))["slack_api_calls"])


@pytest.mark.slow
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_every_call_a_fixture_makes_is_covered_by_the_manifest(fixture: Path) -> None:
    methods = called(fixture)
    assert methods, "the replay made no Slack call at all"
    unknown = methods - set(REQUIRED)
    assert not unknown, f"add these methods and their scopes to REQUIRED: {sorted(unknown)}"
    missing = {
        m: REQUIRED[m] - manifest_scopes() for m in methods if REQUIRED[m] - manifest_scopes()
    }
    assert not missing, missing


def test_the_table_covers_more_than_the_fixtures_happen_to_call() -> None:
    # Every scope the table names is in the manifest, called by a fixture or not.
    needed = set().union(*REQUIRED.values())
    assert needed <= manifest_scopes(), needed - manifest_scopes()


def test_the_slash_command_the_app_answers_is_declared_with_its_scope() -> None:
    from chanctx.bot.events.listeners.commands import COMMAND

    manifest = yaml.safe_load((ROOT / "slack-app-manifest.yaml").read_text())
    declared = [c["command"] for c in manifest["features"]["slash_commands"]]
    assert declared == [COMMAND]
    assert "commands" in manifest_scopes()


def test_an_oauth_install_asks_for_exactly_the_manifest_scopes() -> None:
    from chanctx.bot.slack.scopes import BOT_SCOPES

    assert sorted(BOT_SCOPES) == sorted(manifest_scopes())
    manifest = yaml.safe_load((ROOT / "slack-app-manifest.yaml").read_text())
    assert manifest["settings"]["interactivity"]["is_enabled"] is True  # feedback buttons
