"""``/chanctx``: help, what the bot holds for this channel, and forgetting a thread.

Answers go back in the command's acknowledgement, which Slack shows only to the person who
typed it. Slash commands are not sent from inside threads, so ``forget`` names the thread by
its message link (or ts) and asks for ``confirm`` before anything is deleted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chanctx.bot.core.runtime import Runtime
from chanctx.bot.events.routing import current
from slack_bolt import Ack, App

__all__ = ["COMMAND", "register", "thread_ts_of"]

COMMAND = "/chanctx"

HELP = (
    "*/chanctx* — what I know and keep in this channel\n"
    "• `/chanctx status`: what is cached here, my budgets, and the last answer's token use\n"
    "• `/chanctx forget <message link>`: forget a thread's conversation with me (asks to "
    "confirm)\n"
    "• `/chanctx help`: this message\n"
    "Mention me (@chanctx) in a channel or a thread to ask a question; tell me how an answer "
    "went with the buttons under it (or react :+1: / :-1:)."
)

# https://acme.slack.com/archives/C0123ABCD/p1781020801000100[?thread_ts=...]
_LINK = re.compile(r"/archives/(?P<channel>[A-Z0-9]+)/p(?P<seconds>\d{10})(?P<micros>\d{6})")
_TS = re.compile(r"\d{10}\.\d{6}")


def thread_ts_of(argument: str) -> tuple[str | None, str] | None:
    """(channel named by a link or None, ts) from a message link or a ts; None if neither.
    A link to a reply names its thread through ``thread_ts``."""
    root = re.search(r"[?&]thread_ts=(\d{10}\.\d{6})", argument)
    link = _LINK.search(argument)
    if link is not None:
        ts = root.group(1) if root else f"{link['seconds']}.{link['micros']}"
        return link["channel"], ts
    if _TS.fullmatch(argument.strip()):
        return None, argument.strip()
    return None


def _status(runtime: Runtime, channel: str) -> str:
    engine = runtime.engine
    messages = engine.held(channel)
    settings = engine.settings
    name = engine.names.channels.get(channel, channel)
    lines = [
        f"*chanctx in #{name}*",
        f"• {messages:,} messages of this channel in memory (searchable by my tools)",
        f"• budgets: snapshot {settings.snapshot_budget:,} tokens, thread "
        f"{settings.thread_budget:,} tokens, {settings.window} nearby messages",
    ]
    with runtime.lock:
        usage = runtime.last_usage.get(channel)
    if usage:
        fresh = usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
        read = usage.get("cache_read_input_tokens", 0)
        share = read / (fresh + read) if fresh + read else 0.0
        lines.append(
            f"• last answer here: {fresh + read:,} input tokens ({share:.0%} read from the "
            f"prompt cache), {usage.get('output_tokens', 0):,} output tokens, "
            f"{usage.get('requests', 0)} request(s)"
        )
    else:
        lines.append("• no answer here since I started")
    return "\n".join(lines)


def _forget(runtime: Runtime, channel: str, words: list[str]) -> str:
    if not words:
        return "Which thread? `/chanctx forget <message link>` (Copy link on the thread's message)."
    found = thread_ts_of(words[0])
    if found is None:
        return f"`{words[0][:80]}` is not a Slack message link or ts."
    named, ts = found
    if named is not None and named != channel:
        return "That thread is in another channel: run the command there."
    if words[1:2] != ["confirm"]:
        return (
            f"This forgets our conversation in thread {ts} (what I was told and answered, and "
            f"the files I read there). Run `/chanctx forget {words[0]} confirm` to do it."
        )
    forget: Callable[[str, str], bool] | None = getattr(runtime.responder, "forget", None)
    if forget is None or not forget(channel, ts):
        return f"I hold no conversation for thread {ts} here."
    return f"Forgotten: thread {ts}. The next mention there starts afresh."


def register(app: App) -> None:
    @app.command(COMMAND)
    def on_command(ack: Ack, command: dict[str, Any]) -> None:
        runtime = current()
        words = str(command.get("text") or "").split()
        channel = str(command.get("channel_id") or "")
        verb = words[0].lower() if words else "help"
        if verb == "status":
            ack(text=_status(runtime, channel))
        elif verb == "forget":
            ack(text=_forget(runtime, channel, words[1:]))
        elif verb == "help":
            ack(text=HELP)
        else:
            ack(text=f"I don't know `{verb[:40]}`.\n\n{HELP}")
