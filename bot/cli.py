"""The ``chanctx`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from context import ChanctxError, default_counter

from .engine import BuiltContext, ContextEngine, ContextSettings
from .fixture import load_fixture
from .intake import Delete, Edit, Ignore, React, Record

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chanctx", description="Channel-aware context for Claude in Slack."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser(
        "context",
        help="Build the context Claude would get for each mention in a fixture (offline).",
        description=(
            "Feed a fixture's events through intake into the channel caches and, for every "
            "mention, build its ChannelSnapshot and ThreadContext within the budgets. "
            "Example: chanctx context fixtures/demo"
        ),
    )
    show.add_argument("fixture", help="a fixture directory (see fixtures/README.md)")
    show.add_argument("--json", action="store_true", help="print a machine-readable report")
    show.add_argument("--thread-budget", type=int, default=ContextSettings.thread_budget)
    show.add_argument("--snapshot-budget", type=int, default=ContextSettings.snapshot_budget)
    show.add_argument(
        "--window", type=int, default=ContextSettings.window, help="adjacent messages"
    )
    show.add_argument("--model", default=None, help="model id, chooses the token family")
    return parser


def _context_report(args: argparse.Namespace) -> tuple[dict[str, Any], list[BuiltContext]]:
    fixture = load_fixture(args.fixture)
    engine = ContextEngine(
        me=fixture.me,
        names=fixture.names,
        settings=ContextSettings(
            thread_budget=args.thread_budget,
            snapshot_budget=args.snapshot_budget,
            window=args.window,
        ),
        counter=default_counter(args.model),
    )
    tally = {"messages": 0, "edits": 0, "deletions": 0, "reactions": 0, "ignored": 0}
    kinds = {
        Record: "messages",
        Edit: "edits",
        Delete: "deletions",
        React: "reactions",
        Ignore: "ignored",
    }
    built: list[BuiltContext] = []
    answered: set[tuple[str, str]] = set()
    for event in fixture.events():
        action = engine.handle(event)
        tally[kinds[type(action)]] += 1
        # One mention arrives as a message and an app_mention: answer the pair once.
        key = (str(event.get("channel")), str(event.get("ts")))
        if event.get("type") == "app_mention" and key not in answered:
            answered.add(key)
            context = engine.context_for(*key)
            if context is not None:
                built.append(context)
    turns = [
        {
            "channel": c.anchor.channel,
            # The thread the answer goes to: a top-level mention is answered under itself.
            "thread_ts": c.anchor.root_ts,
            "anchor_ts": c.anchor.ts,
            "context": {
                "snapshot": c.snapshot.model_dump(mode="json"),
                "thread": c.thread.model_dump(mode="json") if c.thread else None,
                "tokens": {
                    "snapshot": c.snapshot_tokens,
                    "thread": c.thread_tokens,
                    "total_input": c.snapshot_tokens + c.thread_tokens,
                },
            },
        }
        for c in built
    ]
    report = {
        "fixture": str(fixture.path),
        "events": len(fixture.envelopes),
        "intake": tally,
        "turns": turns,
    }
    return report, built


def _print_readable(
    report: dict[str, Any], built: list[BuiltContext], args: argparse.Namespace
) -> None:
    tally = report["intake"]
    print(
        f"chanctx context: {report['fixture']} ({report['events']} events: "
        + ", ".join(f"{n} {k}" for k, n in tally.items())
        + ")"
    )
    for number, context in enumerate(built, start=1):
        snap, thread = context.snapshot, context.thread
        print(
            f"\nMention {number} in #{snap.channel.name} by {snap.anchor.author.display_name} "
            f"at {snap.anchor.ts}"
        )
        print(f"  > {snap.anchor.text}")
        print(
            f"  ChannelSnapshot: {len(snap.adjacent)} adjacent messages, "
            f"{context.snapshot_tokens} tokens (budget {args.snapshot_budget})"
        )
        for adjacent in snap.adjacent:
            extras = []
            if adjacent.thread_activity:
                extras.append(f"{adjacent.thread_activity.reply_count} replies")
            extras.extend(adjacent.reactions)
            if adjacent.has_media:
                extras.append("media")
            tail = f"  [{'; '.join(extras)}]" if extras else ""
            print(
                f"    {adjacent.ts}  {adjacent.author.display_name}: {adjacent.snippet[:70]}{tail}"
            )
        if thread is None:
            print("  ThreadContext: none (the mention is not in a thread)")
            continue
        t = thread.truncation
        print(
            f"  ThreadContext: root + {t.included_replies}/{t.total_replies} replies, "
            f"{context.thread_tokens} tokens (budget {args.thread_budget})"
            + (
                f", omitted {t.omitted_range_ts[0]} .. {t.omitted_range_ts[1]}"
                if t.omitted_range_ts
                else ""
            )
        )
        print(f"    root  {thread.root.author.display_name}: {thread.root.text[:70]}")
        for reply in thread.replies:
            mark = " (cut)" if reply.is_truncated else ""
            print(f"    {reply.ts}  {reply.author.display_name}: {reply.text[:70]}{mark}")
        print(
            f"  Context for Claude: {context.snapshot_tokens + context.thread_tokens} tokens in all"
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        report, built = _context_report(args)
    except (ChanctxError, OSError) as error:
        print(f"chanctx: {error}", file=sys.stderr)
        return 2
    try:
        if args.json:
            print(json.dumps(report, indent=2, sort_keys=True))
        else:
            _print_readable(report, built, args)
    except BrokenPipeError:
        # The reader went away (`| head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
