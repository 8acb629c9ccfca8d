"""The command line tells the truth: every setting is a flag and a variable, documented once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
from chanctx.bot.cli import demo_fixture, main, parser
from chanctx.bot.launch.logs import configure_logging
from chanctx.bot.launch.options import (
    SETTINGS,
    Options,
    SettingsError,
    default_text,
    resolve_options,
)
from chanctx.bot.launch.settings import load_settings

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text()
COMMANDS = ("run", "record", "replay")


def readme_settings() -> list[list[str]]:
    table = README.split("<!-- settings table")[1].split("<!-- end of settings table")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def help_text(command: str) -> str:
    sub = parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return str(sub.format_help())


def test_the_readme_table_is_the_settings_table() -> None:
    rows = readme_settings()
    assert len(rows) == len(SETTINGS) > 10
    for row, setting in zip(rows, SETTINGS, strict=True):
        _, flag, env, default, commands = row
        assert flag == f"`{setting.flag}`" and env == f"`{setting.env}`"
        assert default == default_text(setting), setting.flag
        assert [c.strip() for c in commands.split(",")] == [
            c for c in COMMANDS if c in setting.commands
        ]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_setting_of_a_command_is_in_its_help(command: str) -> None:
    text = help_text(command)
    for setting in SETTINGS:
        assert (setting.flag in text) == (command in setting.commands), (command, setting.flag)
        if command in setting.commands:
            assert setting.env in text


def test_the_issue_list_of_settings_reaches_run_and_replay() -> None:
    wanted = {
        "--thread-budget", "--snapshot-budget", "--window", "--model", "--data-dir", "--home",
        "--compaction", "--compaction-threshold", "--history-per-channel", "--attach-media",
    }  # fmt: skip
    for command in ("run", "replay"):
        assert wanted <= {s.flag for s in SETTINGS if command in s.commands}


def test_flag_beats_variable_beats_default() -> None:
    env = {"CHANCTX_THREAD_BUDGET": "1_000", "CHANCTX_COMPACTION": "off"}
    assert resolve_options(Namespace(), {}, "replay") == Options()
    from_env = resolve_options(Namespace(), env, "replay")
    assert from_env.thread_budget == 1_000 and from_env.compaction == "off"
    args = parser().parse_args(["replay", "x", "--thread-budget", "2000", "--attach-media"])
    both = resolve_options(args, env, "replay")
    assert both.thread_budget == 2_000 and both.attach_media and both.compaction == "off"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--thread-budget", "lots"], {}, "--thread-budget must be a positive whole number"),
        (["--window", "-1"], {}, "--window must be a whole number of messages"),
        ([], {"CHANCTX_COMPACTION_THRESHOLD": "1.5"}, "CHANCTX_COMPACTION_THRESHOLD must be"),
        ([], {"CHANCTX_COMPACTION": "squash"}, "one of trim, summarize, off, got 'squash'"),
        ([], {"CHANCTX_ATTACH_MEDIA": "maybe"}, "CHANCTX_ATTACH_MEDIA must be 1 or 0"),
        (["--log-format", "xml"], {}, "--log-format must be one of text, json"),
        ([], {"CHANCTX_PORT": "70000"}, "CHANCTX_PORT must be a TCP port"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(
    argv: list[str], env: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = ["run", *argv] if "CHANCTX_PORT" in env else ["replay", "--demo", *argv]
    assert main(command, env=env) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chanctx: ") and message in err[0], err


def test_replay_needs_exactly_one_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay"], env={}) == 2
    assert main(["replay", "--demo", str(demo_fixture())], env={}) == 2
    assert "a fixture directory or --demo" in capsys.readouterr().err


def test_run_takes_its_options_from_flags_and_secrets_from_the_environment() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "ANTHROPIC_API_KEY": "k-1"}
    args = parser().parse_args(["run", "--http", "--port", "8081", "--window", "5"])
    settings = load_settings(options=resolve_options(args, env, "run"), env=env)
    assert settings.mode == "http" and settings.port == 8081
    assert settings.options.window == 5 and settings.data_dir == Path(".chanctx")


@pytest.mark.slow
def test_the_demo_flag_replays_the_same_transcript_as_the_fixture_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", "--demo"], env={}) == 0
    by_flag = capsys.readouterr().out
    assert main(["replay", str(ROOT / "fixtures" / "demo")], env={}) == 0
    by_path = capsys.readouterr().out
    assert by_flag.splitlines()[1:] == by_path.splitlines()[1:]  # line 0 names the path
    assert "Turn 2:" in by_flag


@pytest.mark.slow
def test_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "chanctx.bot.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert re.fullmatch(r"chanctx \d+\.\d+\.\d+\S*\n", result.stdout)


def test_logs_carry_timestamp_level_and_logger(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    try:
        configure_logging("info", "text")
        logging.getLogger("chanctx.test").info("hello %s", "there")
        line = capsys.readouterr().err.strip()
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO chanctx\.test: hello there", line
        )
        configure_logging("info", "json")
        logging.getLogger("chanctx.test").warning("careful")
        entry = json.loads(capsys.readouterr().err)
        assert entry["level"] == "WARNING" and entry["logger"] == "chanctx.test"
        assert entry["message"] == "careful" and entry["ts"].endswith("Z")
    finally:
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.setLevel(logging.WARNING)


def test_settings_error_is_the_settings_module_one() -> None:
    from chanctx.bot.launch import settings

    assert settings.SettingsError is SettingsError
