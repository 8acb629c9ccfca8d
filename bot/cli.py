"""The ``chanctx`` command line: replay, run, record."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence

from chanctx.bot.engine import ContextSettings
from chanctx.context import ChanctxError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chanctx", description="Channel-aware context for Claude in Slack."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    commands = parser.add_subparsers(dest="command", required=True)

    replay = commands.add_parser(
        "replay",
        help="Replay a recorded fixture offline through the real app and print a transcript.",
        description=(
            "Replay a fixture directory (fixtures/README.md) through the real Bolt app against a "
            "loopback fake Slack Web API: no network, no credentials, deterministic. "
            "Example: chanctx replay fixtures/demo --json"
        ),
    )
    replay.add_argument("fixture", help="a fixture directory")
    replay.add_argument("--json", action="store_true", help="print the machine-readable report")
    replay.add_argument("--thread-budget", type=int, default=ContextSettings.thread_budget)
    replay.add_argument("--snapshot-budget", type=int, default=ContextSettings.snapshot_budget)
    replay.add_argument(
        "--window", type=int, default=ContextSettings.window, help="adjacent messages"
    )
    replay.add_argument("--model", default=None, help="model id; picks the token family")
    replay.add_argument(
        "--overflow", choices=["queue", "degrade"], default="queue", help="rate-limit policy"
    )

    for name, text in (
        ("run", "Run the bot against Slack (Socket Mode, or --http)."),
        ("record", "Run the bot and write what it receives as a fixture (secrets redacted)."),
    ):
        command = commands.add_parser(
            name,
            help=text,
            description=text + " Settings: SLACK_BOT_TOKEN, and SLACK_APP_TOKEN (Socket Mode) or "
            "SLACK_SIGNING_SECRET (--http). Example: chanctx "
            + name
            + (" out/" if name == "record" else ""),
        )
        if name == "record":
            command.add_argument(
                "out_dir", help="directory to write events.jsonl and slack_api.json to"
            )
        command.add_argument("--http", action="store_true", help="serve the Events API over HTTP")
        command.add_argument("--port", type=int, default=3000)
        command.add_argument("--host", default="0.0.0.0", help="address to listen on with --http")
        command.add_argument(
            "--no-claude", action="store_true", help="context only: answer nothing"
        )
    return parser


def _replay(args: argparse.Namespace) -> int:
    from chanctx.bot.replay.fixture import load_fixture
    from chanctx.bot.replay.runner import ReplayOptions, replay
    from chanctx.bot.replay.transcript import render_transcript

    options = ReplayOptions(
        settings=ContextSettings(
            thread_budget=args.thread_budget,
            snapshot_budget=args.snapshot_budget,
            window=args.window,
        ),
        model=args.model,
        overflow=args.overflow,
    )
    report = replay(load_fixture(args.fixture), options=options)
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else render_transcript(report))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from chanctx.bot.serve import build_runtime, known_state, serve
    from chanctx.bot.settings import load_settings
    from slack_sdk import WebClient

    settings = load_settings(
        http=args.http, port=args.port, host=args.host, claude=not args.no_claude
    )
    runtime = build_runtime(WebClient(token=settings.bot_token), settings)
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return _replay(args) if args.command == "replay" else _serve(args)
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
