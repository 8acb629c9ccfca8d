"""Every operator setting, declared once: its flag, its environment variable, its default.

The CLI builds its flags from this table, the README's settings table is checked against it, and
a value is resolved the same way everywhere: the flag if given, else the environment variable,
else the default. A bad value stops start-up with one line naming the flag, the variable and the
value. Secrets are not here: tokens and keys come from the environment only (a command line is
visible to every user of the machine in ``ps``), see ``chanctx.bot.launch.settings``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from chanctx.bot.core.data_flags import DEFAULT_HISTORY_MB
from chanctx.bot.launch.option_values import (
    choice,
    database_url,
    fraction,
    gigabytes,
    interval,
    names,
    non_negative_int,
    path,
    port,
    positive_int,
    redacted_url,
    seconds,
    switch,
    text_value,
)
from chanctx.context import ChanctxError
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from chanctx.bot.claude.session import SessionSettings
    from chanctx.bot.core.built_context import ContextSettings

__all__ = [
    "SETTINGS",
    "Options",
    "Setting",
    "SettingsError",
    "add_options",
    "context_settings",
    "resolve_options",
    "session_settings",
]

Command = Literal[
    "run", "record", "replay", "fakes", "playbook", "import", "store", "query", "forget"
]
SERVING: frozenset[Command] = frozenset({"run", "record"})
ALL: frozenset[Command] = frozenset({"run", "record", "replay"})


class SettingsError(ChanctxError):
    """A missing or malformed setting; the message names it and says what is expected."""


class Options(BaseModel):
    """The resolved settings of one command (secrets excluded)."""

    model_config = ConfigDict(frozen=True)

    thread_budget: int = 8_000
    snapshot_budget: int = 1_500
    window: int = 20
    model: str = "claude-sonnet-5"
    data_dir: Path | None = None  # run: ./.chanctx; replay: a temporary directory
    home: Path | None = None  # run: the working directory; replay: the fixture directory
    compaction: Literal["trim", "summarize", "off"] = "trim"
    compaction_threshold: float = 0.8
    history_per_channel: int = 5_000
    history_mb: int = DEFAULT_HISTORY_MB  # history + indexes (bot/core/data_flags.py)
    retention_days: int | None = None  # None: keep every message
    store_gb: float | None = None  # None: no bound but the disk
    purge_interval: float = 86_400.0  # retention's purge: daily (shorter only for tests)
    index_after: float = 0.5  # seconds a new message may wait for its full-text words
    attach_media: bool = False
    overflow: Literal["queue", "degrade"] = "queue"
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    http: bool = False
    oauth: bool = False
    host: str = "0.0.0.0"
    port: int = 3000
    claude: bool = True
    redis_url: str | None = None
    database_url: str | None = None  # None: the SQLite store in the data dir
    turn_lease: float = 30.0
    change_retention: int = 100_000
    api_keys: Path | None = None
    claude_deadline: float = 120.0
    slack_fetches_per_turn: int = 3
    max_wait: float = 60.0
    stale_serve_ttl: float = 3600.0
    # None: off for run and record, the offline rules for replay.
    curator: Literal["off", "offline", "claude"] | None = None
    curator_model: str = "claude-haiku-4-5"
    helpful_reactions: tuple[str, ...] = (
        "+1",
        "thumbsup",
        "white_check_mark",
        "heavy_check_mark",
        "tada",
    )
    harmful_reactions: tuple[str, ...] = ("-1", "thumbsdown", "x", "no_entry_sign")
    playbook_embed: str | None = None  # MODULE:FUNCTION of an embedding model
    # Slack's rate tier and the background backfill (bot/launch/slack_budget.py).
    slack_tier: Literal["standard", "limited"] = "standard"
    slack_minute_seconds: float = 60.0  # tests and benchmarks against the fake only
    backfill: Literal["off", "recent", "all"] = "recent"
    backfill_days: int = 30


@dataclass(frozen=True)
class Setting:
    """One row of the settings table (and of the README's)."""

    name: str  # the Options field
    flag: str
    env: str
    parse: Callable[[str], Any]
    expected: str  # what a valid value is, for the error message
    help: str
    commands: frozenset[Command] = ALL
    # A switch takes no value on the command line (its flag turns it on, or off for --no-*).
    switch_value: bool | None = None
    choices: tuple[str, ...] = ()
    shown_default: str = ""  # the default as the README shows it, where the value alone misleads
    secret_value: bool = False  # a URL that may carry a password: errors show it redacted


def _choice_setting(name: str, flag: str, env: str, help_: str, *choices: str) -> Setting:
    return Setting(
        name, flag, env, choice(*choices), "one of " + ", ".join(choices), help_, choices=choices
    )


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "thread_budget", "--thread-budget", "CHANCTX_THREAD_BUDGET", positive_int,
        "a positive whole number of tokens", "tokens for the ThreadContext JSON",
    ),
    Setting(
        "snapshot_budget", "--snapshot-budget", "CHANCTX_SNAPSHOT_BUDGET", positive_int,
        "a positive whole number of tokens", "tokens for the ChannelSnapshot JSON",
    ),
    Setting(
        "window", "--window", "CHANCTX_WINDOW", non_negative_int,
        "a whole number of messages (0 or more)", "adjacent channel messages in the snapshot",
    ),
    Setting(
        "model", "--model", "CHANCTX_MODEL", text_value, "a model id",
        "Claude model id; also picks the token counting family",
    ),
    Setting(
        "data_dir", "--data-dir", "CHANCTX_DATA_DIR", path, "a directory path",
        "where session logs are kept",
        shown_default="./.chanctx (replay: a temporary directory)",
    ),
    Setting(
        "home", "--home", "CHANCTX_HOME", path, "a directory path",
        "where context.yaml and its files are read",
        shown_default=". (replay: the fixture directory)",
    ),
    _choice_setting(
        "compaction", "--compaction", "CHANCTX_COMPACTION",
        "how a session is compacted near the window", "trim", "summarize", "off",
    ),
    Setting(
        "compaction_threshold", "--compaction-threshold", "CHANCTX_COMPACTION_THRESHOLD",
        fraction, "a fraction above 0 and at most 1",
        "share of the context window at which a session is compacted",
    ),
    Setting(
        "history_per_channel", "--history-per-channel", "CHANCTX_HISTORY_PER_CHANNEL",
        positive_int, "a positive whole number of messages",
        "newest messages per channel kept in memory (the snapshot's window); with the channel "
        "store, search covers every stored message",
    ),
    Setting(
        "history_mb", "--history-mb", "CHANCTX_HISTORY_MB",
        positive_int, "a positive whole number of MiB",
        "memory the history and the search indexes may hold; the least recently used "
        "channel's oldest messages (and least recently searched channel's index) go first",
    ),
    Setting(
        "retention_days", "--retention-days", "CHANCTX_RETENTION_DAYS", positive_int,
        "a positive whole number of days",
        "days the channel store keeps a message; older ones are erased daily",
        commands=SERVING, shown_default="keep",
    ),
    Setting(
        "store_gb", "--store-gb", "CHANCTX_STORE_GB", gigabytes, "a positive number of GB",
        "disk the channel store may use; past it the oldest messages are erased (logged)",
        commands=SERVING, shown_default="none (the disk)",
    ),
    Setting(
        "purge_interval", "--purge-interval", "CHANCTX_PURGE_INTERVAL", interval,
        "seconds from 1 to 86400",
        "how often --retention-days erases what is past it (and at start)",
        commands=SERVING, shown_default="86400 s (daily)",
    ),
    Setting(
        "index_after", "--index-after", "CHANCTX_INDEX_AFTER", seconds,
        "seconds between 0 and 86400",
        "how long the channel store may leave a new message out of its full-text index "
        "(indexed in batches after the commit; the caches hold it meanwhile)",
        commands=SERVING, shown_default="0.5 s",
    ),
    Setting(
        "attach_media", "--attach-media", "CHANCTX_ATTACH_MEDIA", switch, "1 or 0",
        "attach the thread's files inline (opt-in)", switch_value=True,
    ),
    _choice_setting(
        "overflow", "--overflow", "CHANCTX_OVERFLOW",
        "at the Slack rate limit: wait, or serve what the caches hold", "queue", "degrade",
    ),
    _choice_setting(
        "log_format", "--log-format", "CHANCTX_LOG_FORMAT",
        "log lines as text or one JSON object each", "text", "json",
    ),
    _choice_setting(
        "log_level", "--log-level", "CHANCTX_LOG_LEVEL", "least severe level logged",
        "debug", "info", "warning", "error",
    ),
    Setting(
        "http", "--http", "CHANCTX_HTTP", switch, "1 or 0",
        "serve the HTTP Events API instead of Socket Mode", commands=SERVING, switch_value=True,
    ),
    Setting(
        "oauth", "--oauth", "CHANCTX_OAUTH", switch, "1 or 0",
        "with --http: many workspaces, installed through Slack's OAuth flow "
        "(SLACK_CLIENT_ID, SLACK_CLIENT_SECRET)", commands=frozenset({"run"}), switch_value=True,
    ),
    Setting(
        "host", "--host", "CHANCTX_HOST", text_value, "an address",
        "address to listen on with --http", commands=SERVING,
    ),
    Setting(
        "port", "--port", "CHANCTX_PORT", port, "a TCP port (1-65535)",
        "port to listen on with --http", commands=SERVING, shown_default="3000",
    ),
    Setting(
        "redis_url", "--redis-url", "CHANCTX_REDIS_URL", text_value, "a redis:// URL",
        "Redis shared by replicas: queue, outbox, sessions, channel state, rate limits",
        commands=SERVING, shown_default="none (one process)", secret_value=True,
    ),
    Setting(
        "database_url", "--database-url", "CHANCTX_DATABASE_URL", database_url,
        "a postgresql:// URL",
        "the channel store on PostgreSQL, shared by replicas, instead of the data dir's SQLite",
        commands=SERVING, shown_default="none (SQLite in the data dir)", secret_value=True,
    ),
    Setting(
        "turn_lease", "--turn-lease", "CHANCTX_TURN_LEASE", seconds,
        "a positive number of seconds",
        "with Redis: a dead replica's turns are answered by another after this long",
        commands=SERVING, shown_default="30 s",
    ),
    Setting(
        "change_retention", "--change-retention", "CHANCTX_CHANGE_RETENTION", positive_int,
        "a positive whole number of changes",
        "with Redis: changes the shared stream keeps, for replicas that start late",
        commands=SERVING,
    ),
    Setting(
        "api_keys", "--api-keys", "CHANCTX_API_KEYS", path, "a file path",
        "the query API's keys file (key -> channel ids or \"*\"); without it the API is off "
        "(replay --serve: open to loopback)",
        commands=ALL, shown_default="none (API off)",
    ),
    Setting(
        "claude_deadline", "--claude-deadline", "CHANCTX_CLAUDE_DEADLINE", seconds,
        "a positive number of seconds", "longest a turn may spend with Claude, tools included",
        shown_default="120 s",
    ),
    Setting(
        "max_wait", "--max-wait", "CHANCTX_MAX_WAIT", seconds, "a positive number of seconds",
        "rate-limit time a turn may wait for a thread before answering with what it has",
        shown_default="60 s",
    ),
    Setting(
        "stale_serve_ttl", "--stale-serve-ttl", "CHANCTX_STALE_SERVE_TTL", seconds,
        "a positive number of seconds",
        "a thread fetched this recently is served, with a note, when a refresh fails",
        shown_default="3600 s",
    ),
    Setting(
        "slack_fetches_per_turn", "--slack-fetches-per-turn", "CHANCTX_SLACK_FETCHES_PER_TURN",
        non_negative_int, "a whole number (0 or more)",
        "Slack fetches Claude's tools may make for one answer (threads not cached)",
    ),
    Setting(
        "curator", "--curator", "CHANCTX_CURATOR", choice("off", "offline", "claude"),
        "one of off, offline, claude",
        "who grows the channel playbooks after each answer: nobody, the offline rules, or one "
        "cheap Claude call", choices=("off", "offline", "claude"),
        shown_default="off (replay: offline)",
    ),
    Setting(
        "curator_model", "--curator-model", "CHANCTX_CURATOR_MODEL", text_value, "a model id",
        "the model of --curator claude",
    ),
    Setting(
        "helpful_reactions", "--helpful-reactions", "CHANCTX_HELPFUL_REACTIONS", names,
        "reaction names separated by commas",
        "reactions on an answer that say it helped (feedback, the playbook's counters)",
        shown_default="+1, thumbsup, white_check_mark, heavy_check_mark, tada",
    ),
    Setting(
        "harmful_reactions", "--harmful-reactions", "CHANCTX_HARMFUL_REACTIONS", names,
        "reaction names separated by commas",
        "reactions on an answer that say it did not help", shown_default="-1, thumbsdown, x, no_entry_sign",
    ),
    Setting(
        "playbook_embed", "--playbook-embed", "CHANCTX_PLAYBOOK_EMBED", text_value, "MODULE:FUNCTION",
        "an embedding model for merging near-duplicate playbook bullets (a function from texts "
        "to vectors)", shown_default="none (word overlap)",
    ),
    Setting(
        "claude", "--no-claude", "CHANCTX_CLAUDE", switch, "1 or 0",
        "context only: answer nothing (CHANCTX_CLAUDE=0)", switch_value=False,
        shown_default="answer with Claude",
    ),
    # Slack's rate tier and the background backfill.
    Setting(
        "slack_tier", "--slack-tier", "CHANCTX_SLACK_TIER", choice("standard", "limited"),
        "one of standard, limited",
        "Slack's limit on history reads: standard (Tier 3, internal and Marketplace apps) or "
        "limited (1 call a minute of 15 messages, other distributed apps)",
        commands=SERVING, choices=("standard", "limited"),
    ),
    Setting(
        "slack_minute_seconds", "--slack-minute-seconds", "CHANCTX_SLACK_MINUTE_SECONDS",
        seconds, "a positive number of seconds",
        "tests only: how long the tier's minute lasts (the fake Slack's own knob)",
        commands=SERVING, shown_default="60 s",
    ),
    Setting(
        "backfill", "--backfill", "CHANCTX_BACKFILL", choice("off", "recent", "all"),
        "one of off, recent, all",
        "page older channel history into the store in the background: off, recent "
        "(--backfill-days back) or all", commands=SERVING, choices=("off", "recent", "all"),
    ),
    Setting(
        "backfill_days", "--backfill-days", "CHANCTX_BACKFILL_DAYS", positive_int,
        "a positive whole number of days", "how far back --backfill recent reaches",
        commands=SERVING,
    ),
)  # fmt: skip


def default_text(setting: Setting) -> str:
    """The default as the README shows it."""
    if setting.shown_default:
        return setting.shown_default
    value = Options.model_fields[setting.name].default
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def add_options(parser: argparse.ArgumentParser, command: Command) -> None:
    """Add every setting of ``command`` as a flag whose absence is visible (default None)."""
    for setting in SETTINGS:
        if command not in setting.commands:
            continue
        text = f"{setting.help} [env {setting.env}; default {default_text(setting)}]"
        if setting.switch_value is not None:
            parser.add_argument(
                setting.flag,
                dest=setting.name,
                action="store_const",
                const=setting.switch_value,
                default=None,
                help=text,
            )
        else:
            parser.add_argument(
                setting.flag,
                dest=setting.name,
                default=None,
                metavar=setting.name.upper(),
                help=text,
            )


def resolve_options(args: argparse.Namespace, env: Mapping[str, str], command: Command) -> Options:
    """Flag, else environment variable, else default; every value checked with a clear error."""
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if command not in setting.commands:
            continue
        given = getattr(args, setting.name, None)
        if isinstance(given, bool):
            values[setting.name] = given
            continue
        source, raw = (
            (setting.flag, given) if given is not None else (setting.env, env.get(setting.env))
        )
        if raw is None or (source == setting.env and not raw.strip()):
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError:
            raise SettingsError(
                f"{source} must be {setting.expected}, got "
                f"{redacted_url(raw) if setting.secret_value else raw!r}"
                + (f" (flag {setting.flag})" if source == setting.env else f" (env {setting.env})")
            ) from None
    return Options(**values)


def context_settings(options: Options) -> ContextSettings:
    """The context engine's budgets and window, as the options name them."""
    from chanctx.bot.core.built_context import ContextSettings

    return ContextSettings(
        thread_budget=options.thread_budget,
        snapshot_budget=options.snapshot_budget,
        window=options.window,
        max_wait_seconds=options.max_wait,
        stale_serve_ttl=options.stale_serve_ttl,
    )


def session_settings(options: Options) -> SessionSettings:
    """The Claude session settings the options name (imported here, not at the top, so that
    ``chanctx --help`` does not load the Anthropic SDK)."""
    from chanctx.bot.claude.session import SessionSettings

    return SessionSettings(
        model=options.model,
        compaction=options.compaction,
        compaction_threshold=options.compaction_threshold,
        attach_media=options.attach_media,
        deadline_seconds=options.claude_deadline,
        slack_fetches_per_turn=options.slack_fetches_per_turn,
    )
