"""The ``chanctx`` command line: replay, run, record, fakes, playbook, import, store, query,
forget.

Every setting is a flag and an environment variable (``chanctx.bot.launch.options``); secrets
come from the environment only. A bad setting is one line on stderr naming it, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from chanctx.bot.export.command import add_import_parser, run_import
from chanctx.bot.launch.logs import configure_logging
from chanctx.bot.launch.options import (
    Command,
    Options,
    add_options,
    context_settings,
    resolve_options,
    session_settings,
)
from chanctx.bot.launch.store_command import add_store_parser, run_store
from chanctx.bot.playbooks.command import add_playbook_parser, run_playbook
from chanctx.context import ChanctxError

__all__ = ["main", "parser"]


def _version() -> str:
    try:
        return metadata.version("chanctx")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="chanctx", description="Channel-aware context for Claude in Slack."
    )
    root.add_argument("--version", action="version", version=f"chanctx {_version()}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    replay = commands.add_parser(
        "replay",
        help="Replay a recorded fixture offline through the real app and print a transcript.",
        description=(
            "Replay a fixture directory (fixtures/README.md) through the real Bolt app and the real "
            "anthropic client against loopback fakes: no network, no credentials, deterministic. "
            "Examples: chanctx replay --demo; chanctx replay fixtures/demo --json"
        ),
    )
    replay.add_argument("fixture", nargs="?", help="a fixture directory")
    replay.add_argument(
        "--demo", action="store_true", help="replay the demo fixture bundled with chanctx"
    )
    replay.add_argument("--json", action="store_true", help="print the machine-readable report")
    replay.add_argument(
        "--requests-out",
        metavar="FILE",
        type=Path,
        help="write every Messages API request body the replay sent to FILE (JSONL, one a line)",
    )
    replay.add_argument(
        "--continue",
        dest="continue_data_dir",
        action="store_true",
        help="go on from what --data-dir holds: mentions it answered before are skipped (and "
        "counted in the report); without it a replay starts fresh",
    )
    replay.add_argument(
        "--serve",
        metavar="PORT",
        type=int,
        help="after the replay, serve the context query API over the replayed state on "
        "127.0.0.1:PORT until interrupted (with --api-keys only those keys may read, each its "
        "channels; without, anyone on this machine)",
    )
    add_options(replay, "replay")

    for name, text in (
        ("run", "Run the bot against Slack (Socket Mode, or --http)."),
        ("record", "Run the bot and write what it receives as a fixture (secrets redacted)."),
    ):
        command = commands.add_parser(
            name,
            help=text,
            description=text + " Secrets from the environment: SLACK_BOT_TOKEN, and "
            "SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (--http); ANTHROPIC_API_KEY "
            "unless --no-claude. Example: chanctx " + name + (" out/" if name == "record" else ""),
        )
        if name == "record":
            command.add_argument(
                "out_dir", help="directory to write events.jsonl and slack_api.json to"
            )
        add_options(command, name)  # type: ignore[arg-type]

    add_playbook_parser(commands)
    add_import_parser(commands)
    add_store_parser(commands)
    from chanctx.bot.launch.query_command import add_query_parser

    add_query_parser(commands)
    from chanctx.bot.launch.forget_command import add_forget_parser

    add_forget_parser(commands)

    fakes = commands.add_parser(
        "fakes",
        help="Serve the fake Slack Web API and fake Messages API until killed (smoke tests).",
        description=(
            "Serve a fixture's fake Slack Web API and fake Messages API on loopback ports, for "
            "smoke-testing a deployment without Slack or Claude. Then run the bot with "
            "SLACK_API_URL=http://127.0.0.1:SLACK_PORT/api/ and "
            "ANTHROPIC_BASE_URL=http://127.0.0.1:ANTHROPIC_PORT. "
            "Example: chanctx fakes fixtures/demo --slack-port 8101 --anthropic-port 8102"
        ),
    )
    fakes.add_argument("fixture", help="a fixture directory (its slack_api.json and cassette)")
    fakes.add_argument("--slack-port", type=int, required=True)
    fakes.add_argument("--anthropic-port", type=int, required=True)
    fakes.add_argument("--anthropic-latency-ms", type=int, default=0, help="delay per answer")
    fakes.add_argument(
        "--post-error-rate",
        type=float,
        default=0.0,
        help="share of answer calls (posts, stream calls, updates) answered 500 or 429 (Retry-After 1)",
    )
    fakes.add_argument("--seed", type=int, default=0, help="seed for the injected errors")
    fakes.add_argument(
        "--slack-tier",
        choices=("standard", "limited"),
        default="standard",
        help="limited: conversations.history/.replies at 1 call a minute and 15 messages a call "
        "(HTTP 429 with Retry-After beyond), as Slack serves apps outside its Marketplace; "
        "standard: Tier 3, 50 calls a minute",
    )
    fakes.add_argument(
        "--slack-minute-seconds",
        type=float,
        default=60.0,
        help="how long the tier's minute lasts (tests and benchmarks only; default 60)",
    )
    return root


def demo_fixture() -> Path:
    """The demo fixture shipped inside the package (``chanctx.fixtures``)."""
    return Path(str(resources.files("chanctx.fixtures").joinpath("demo")))


def _replay(args: argparse.Namespace, options: Options) -> int:
    from chanctx.bot.core.embeddings import EmbeddingSimilarity, load_embed
    from chanctx.bot.core.recipe_runner import RecipeRunner, load_recipe
    from chanctx.bot.launch.settings import SettingsError
    from chanctx.bot.replay.fixture import load_fixture
    from chanctx.bot.replay.runner import ReplayOptions, replay

    if args.demo == bool(args.fixture):
        raise SettingsError("replay needs a fixture directory or --demo (one of the two)")
    # A replay reads --data-dir from its flag only, never from CHANCTX_DATA_DIR (an operator who
    # also runs the bot has it set): the same fixture gives the same report every time.
    data_dir = options.data_dir if args.data_dir is not None else None
    if data_dir is not None and not args.continue_data_dir and _holds_state(data_dir):
        raise SettingsError(
            f"--data-dir {data_dir} holds an earlier run's state; add --continue to go on from "
            "it (mentions answered there are skipped), or give an empty directory"
        )
    fixture = load_fixture(demo_fixture() if args.demo else args.fixture)
    home = (options.home or fixture.path).resolve()
    report = replay(
        fixture,
        options=ReplayOptions(
            settings=context_settings(options),
            model=options.model,
            overflow=options.overflow,
            claude=options.claude,
            session=session_settings(options),
            data_dir=data_dir,
            continued=args.continue_data_dir,
            recipe=RecipeRunner(load_recipe(home), home=home, cwd=Path.cwd()),
            history_per_channel=options.history_per_channel,
            history_mb=options.history_mb,
            requests_out=args.requests_out,
            curator=options.curator or "offline",
            curator_model=options.curator_model,
            reactions=(
                frozenset(options.helpful_reactions),
                frozenset(options.harmful_reactions),
            ),
            similar=EmbeddingSimilarity(load_embed(options.playbook_embed))
            if options.playbook_embed
            else None,
        ),
        then=_serve_replayed(args.serve, args.json, options.api_keys)
        if args.serve is not None
        else None,
    )
    if args.serve is None:
        print(_shown(report, args.json))
    return 0


def _holds_state(data_dir: Path) -> bool:
    return data_dir.is_dir() and any(data_dir.iterdir())


def _shown(report: dict[str, Any], as_json: bool) -> str:
    from chanctx.bot.replay.transcript import render_transcript

    return json.dumps(report, indent=2, sort_keys=True) if as_json else render_transcript(report)


def _serve_replayed(
    port: int, as_json: bool, keys_file: Path | None
) -> Callable[[Any, dict[str, Any]], None]:
    """Print the report, then serve the query API over the replayed state until interrupted;
    with a keys file, only its keys, each for its channels (as ``run`` serves it)."""
    from chanctx.bot.launch.one_workspace import load_api_keys
    from chanctx.bot.launch.settings import SettingsError
    from chanctx.bot.server import build_asgi_app, run_server
    from chanctx.bot.server.query_api import query_routes
    from chanctx.bot.server.query_sources import QuerySources
    from chanctx.bot.stores.profiles.local import LocalProfileStore

    if not 0 < port < 65536:
        raise SettingsError(f"--serve: {port} is not a TCP port (1-65535)")
    keys = load_api_keys(keys_file) if keys_file is not None else None  # checked before replaying

    def serve(bot: Any, report: dict[str, Any]) -> None:
        print(_shown(report, as_json), flush=True)
        profiles = LocalProfileStore(bot.data_dir)
        sources = QuerySources(
            bot.engine,
            recipe=bot.recipe,
            media=bot.media,
            playbooks=bot.playbooks.store if bot.playbooks else None,
        )
        routes = query_routes(
            bot.engine,
            keys,
            profiles,
            turns=lambda: list(bot.runtime.runner.results),
            sources=sources,
        )
        app = build_asgi_app(bot.app, extra_routes=routes)
        print(
            f"serving http://127.0.0.1:{port}/api/context/query and "
            f"http://127.0.0.1:{port}/inspector (Ctrl-C stops)",
            flush=True,
        )
        run_server(app, "127.0.0.1", port)

    return serve


def _serve(args: argparse.Namespace, options: Options, env: Mapping[str, str]) -> int:
    from chanctx.bot.launch.channel_store import open_channel_store
    from chanctx.bot.launch.one_workspace import build_runtime, known_state, load_api_keys, serve
    from chanctx.bot.launch.preflight import check_data_dir, check_port, quiet_token_warning
    from chanctx.bot.launch.settings import load_settings
    from slack_sdk import WebClient

    settings = load_settings(options=options, env=env)
    # Everything an operator can get wrong locally is checked before the first network call.
    check_data_dir(settings.data_dir)
    if settings.options.api_keys is not None:
        load_api_keys(settings.options.api_keys)
    if settings.mode == "http":
        check_port(settings.host, settings.port)
    quiet_token_warning(logging.getLogger("chanctx.bolt"))
    if settings.oauth and args.command == "run":
        from chanctx.bot.launch.oauth_workspaces import serve_oauth

        serve_oauth(settings)
        return 0
    channels = open_channel_store(settings.data_dir, options)
    client = WebClient(token=settings.bot_token, base_url=settings.slack_api_url)
    try:
        runtime = build_runtime(client, settings, channels=channels)
    except BaseException:
        channels.close()
        raise
    if args.command == "record":
        from chanctx.bot.replay.record import Recorder

        recorder = Recorder(args.out_dir)
        try:
            serve(settings, runtime=runtime, first_middleware=recorder.middleware)
        finally:
            recorder.write_state(known_state(runtime))
            recorder.close()
        return 0
    serve(settings, runtime=runtime)
    return 0


def _fakes(args: argparse.Namespace) -> int:
    from chanctx.bot.launch.settings import SettingsError
    from chanctx.bot.replay.fakes_server import serve_fakes

    for flag, port in (
        ("--slack-port", args.slack_port),
        ("--anthropic-port", args.anthropic_port),
    ):
        if not 0 < port < 65536:
            raise SettingsError(f"{flag} must be a TCP port (1-65535), got {port}")
    if not 0 < args.slack_minute_seconds < 86_400:
        raise SettingsError(
            f"--slack-minute-seconds must be a positive number, got {args.slack_minute_seconds}"
        )
    if not 0.0 <= args.post_error_rate <= 1.0:
        raise SettingsError(
            f"--post-error-rate must be between 0 and 1, got {args.post_error_rate}"
        )
    serve_fakes(
        args.fixture,
        slack_port=args.slack_port,
        anthropic_port=args.anthropic_port,
        anthropic_latency_ms=args.anthropic_latency_ms,
        post_error_rate=args.post_error_rate,
        seed=args.seed,
        slack_tier=args.slack_tier,
        slack_minute_seconds=args.slack_minute_seconds,
    )
    return 0


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    args = parser().parse_args(argv)
    command: Command = args.command
    try:
        options = resolve_options(args, env, command)
        configure_logging(options.log_level, options.log_format)
        if command == "replay":
            return _replay(args, options)
        if command == "fakes":
            return _fakes(args)
        if command == "playbook":
            return run_playbook(args, env)
        if command == "import":
            return run_import(args, env)
        if command == "store":
            return run_store(args, env)
        if command == "query":
            from chanctx.bot.launch.query_command import run_query_command

            return run_query_command(args, env)
        if command == "forget":
            from chanctx.bot.launch.forget_command import run_forget

            return run_forget(args, env)
        return _serve(args, options, env)
    except BrokenPipeError:
        # The reader went away (`| head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except (ChanctxError, OSError) as error:
        print(f"chanctx: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
