"""``chanctx forget --channel C | --user U | --message LINK``: erase a channel, a person's
messages or one message from the data dir, as Slack's own deletions are erased.

With the bot stopped the command opens the channel store as its writer: it writes
``ChannelForgotten`` / ``UserForgotten`` / ``MessageDeleted`` (the store's erase pass follows),
then rewrites every other file of the data dir that quoted the erased text with ``[deleted]``
in its place. While the bot runs (it holds the store's writer lock) the command asks it,
through the admin route whose address and token the bot wrote to ``admin.json``; the bot does
the same through its own committer and drops the messages from its caches.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chanctx.bot.core.data_flags import add_data_dir, data_dir_of
from chanctx.bot.core.forget_request import ForgetAnswer, ForgetRequest, parse_link
from chanctx.bot.core.forgetting import plan_erasure, redact_data_dir
from chanctx.bot.launch.admin import ADMIN_FILE, read_admin_file
from chanctx.bot.server.admin_api import ADMIN_FORGET
from chanctx.cache.channel_store import DB_NAME, SqliteChannelStore, StoreError, StoreLocked
from chanctx.manifest_store.redaction import MARKER
from pydantic import ValidationError

__all__ = ["add_forget_parser", "run_forget"]


class ForgetFailed(Exception):
    """One line for the operator; the command exits 2."""


def add_forget_parser(commands: Any) -> None:
    command = commands.add_parser(
        "forget",
        help="Erase a channel, a person's messages or one message from the data dir.",
        description=(
            "Erase from the channel store and from every file of the data dir (session logs, "
            "the turn journal, playbooks: the text becomes [deleted]). Works with the bot "
            "stopped (the store is opened directly) or running with --http (the bot is asked "
            "through its admin route). Examples: chanctx forget --channel C0123; chanctx forget "
            "--user U0456; chanctx forget --message "
            "https://acme.slack.com/archives/C0123/p1700000000000100"
        ),
    )
    target = command.add_mutually_exclusive_group(required=True)
    target.add_argument("--channel", help="a channel id: every message in it, and its name")
    target.add_argument("--user", help="a user id: every message they wrote, and their name")
    target.add_argument("--message", metavar="LINK", help="a Slack permalink, or CHANNEL:TS")
    command.add_argument(
        "--team", default=None, help="the workspace id (default: every workspace that has it)"
    )
    add_data_dir(command)
    command.add_argument(
        "--timeout", type=float, default=60.0,
        help="seconds to wait for a running bot's answer (default 60)",
    )  # fmt: skip


def run_forget(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    data_dir = data_dir_of(args, env)
    try:
        request = _request(args)
        if not args.timeout > 0:
            raise ForgetFailed(
                f"--timeout must be a positive number of seconds, got {args.timeout}"
            )
        if not (data_dir / DB_NAME).exists():
            raise ForgetFailed(f"no channel store in {data_dir} ({DB_NAME}); nothing to erase")
        answer = _forget(data_dir, request, args.timeout)
    except ForgetFailed as error:
        print(f"chanctx forget: {error}", file=sys.stderr)
        return 2
    print(shown(request, answer))
    return 0 if answer.teams or answer.pending else 1


def _request(args: argparse.Namespace) -> ForgetRequest:
    try:
        if args.message is not None:
            channel, ts = parse_link(args.message)
            return ForgetRequest(team=args.team, channel=channel, ts=ts)
        return ForgetRequest(team=args.team, channel=args.channel, user=args.user)
    except ValidationError as error:
        first = error.errors()[0]
        raise ForgetFailed(f"{first['loc'][0] if first['loc'] else 'request'}: {first['msg']} "
                           f"(got {first.get('input')!r})") from None  # fmt: skip
    except ValueError as error:
        raise ForgetFailed(str(error)) from None


def _forget(data_dir: Path, request: ForgetRequest, timeout: float) -> ForgetAnswer:
    try:
        store = SqliteChannelStore(data_dir)
    except StoreLocked:
        return _ask_running_bot(data_dir, request, timeout)
    except StoreError as error:
        raise ForgetFailed(str(error)) from None
    try:
        plan = plan_erasure(store, request)
        # Files first: killed before the store write, the texts are still in the store and
        # the same command run again finishes the job.
        count = redact_data_dir(data_dir, plan.texts)
        store.write(plan.events)  # the erase pass runs before this returns
    except OSError as error:
        raise ForgetFailed(f"the channel store refused the erasure: {error}") from None
    finally:
        store.close()
    answer = plan.answer()
    answer.files, answer.lines = count.files, count.lines
    return answer


def _ask_running_bot(data_dir: Path, request: ForgetRequest, timeout: float) -> ForgetAnswer:
    try:
        admin = read_admin_file(data_dir)
    except (OSError, ValueError):
        raise ForgetFailed(
            f"a bot is running on {data_dir} but left no {ADMIN_FILE} (it serves Socket Mode, "
            "or was started by an older chanctx): stop it and run chanctx forget again"
        ) from None
    call = urllib.request.Request(
        admin.url + ADMIN_FORGET,
        data=request.model_dump_json(exclude_none=True).encode(),
        headers={"Authorization": f"Bearer {admin.token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(call, timeout=timeout) as response:
            return ForgetAnswer.model_validate_json(response.read())
    except urllib.error.HTTPError as error:
        raise ForgetFailed(
            f"the running bot at {admin.url} refused: {error.code} {_error_of(error.read())}"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ForgetFailed(
            f"the running bot (pid {admin.pid}) does not answer at {admin.url}: {reason}"
        ) from None
    except ValidationError:
        raise ForgetFailed(f"the running bot at {admin.url} sent an unreadable answer") from None


def _error_of(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error", ""))[:300]
    except (ValueError, AttributeError):
        return body[:300].decode("utf-8", "replace")


def shown(request: ForgetRequest, answer: ForgetAnswer) -> str:
    """One line: what was erased, where, and what is still under way."""
    if answer.pending and not answer.teams:
        return (
            f"{request.describe()}: accepted; the bot is still reading what it covers and "
            "erases it in the background (its log says what was erased)"
        )
    if not answer.teams:
        return f"{request.describe()}: not in the channel store; 0 messages erased"
    channels = (
        f", {answer.channels} channel{'s' * (answer.channels != 1)}" if answer.channels else ""
    )
    files = (
        f"; {answer.lines} line{'s' * (answer.lines != 1)} in {answer.files} "
        f"file{'s' * (answer.files != 1)} of the data dir now say {MARKER}"
        if answer.lines
        else "; no other file of the data dir quoted it"
    )
    pending = "; the bot finishes the erase pass in the background" if answer.pending else ""
    return (
        f"{request.describe()}: {answer.messages} message{'s' * (answer.messages != 1)} "
        f"erased{channels} (team {', '.join(answer.teams)}){files}{pending}"
    )
