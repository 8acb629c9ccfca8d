"""A replay report as a transcript a person reads."""

from __future__ import annotations

import json
from typing import Any

from chanctx.context import ChannelSnapshot, ThreadContext

__all__ = ["render_transcript"]


def _adjacent_line(adjacent: Any) -> str:
    extras = []
    if adjacent.thread_activity:
        extras.append(f"{adjacent.thread_activity.reply_count} replies")
    extras.extend(adjacent.reactions)
    if adjacent.has_media:
        extras.append("media")
    tail = f"  [{'; '.join(extras)}]" if extras else ""
    return f"    {adjacent.ts}  {adjacent.author.display_name}: {adjacent.snippet[:70]}{tail}"


def _context_lines(context: dict[str, Any]) -> list[str]:
    snapshot = ChannelSnapshot.model_validate(context["snapshot"])
    tokens = context["tokens"]
    lines = [
        f"  ChannelSnapshot: {len(snapshot.adjacent)} adjacent messages, {tokens['snapshot']} tokens"
    ]
    lines.extend(_adjacent_line(a) for a in snapshot.adjacent)
    if context["thread"] is None:
        lines.append("  ThreadContext: none (the mention is not in a thread)")
    else:
        thread = ThreadContext.model_validate(context["thread"])
        cut = thread.truncation
        omitted = (
            f", omitted {cut.omitted_range_ts[0]} .. {cut.omitted_range_ts[1]}"
            if cut.omitted_range_ts
            else ""
        )
        lines.append(
            f"  ThreadContext: root + {cut.included_replies}/{cut.total_replies} replies, "
            f"{tokens['thread']} tokens{omitted}"
        )
        lines.append(f"    root  {thread.root.author.display_name}: {thread.root.text[:70]}")
        for reply in thread.replies:
            mark = " (cut)" if reply.is_truncated else ""
            lines.append(f"    {reply.ts}  {reply.author.display_name}: {reply.text[:70]}{mark}")
    lines.extend(f"  note: {note}" for note in context.get("notes", []))
    lines.append(f"  Context for Claude: {tokens['total_input']} tokens in all")
    return lines


def _shown_lines(turn: dict[str, Any]) -> list[str]:
    """How the answer reached the user: the calls in order, with the message's length after
    each (a stream grows; a replacement shows the whole)."""
    posted = turn.get("posted") or []
    if not posted:
        return []
    steps = [f"{p['method'].removeprefix('chat.')} {len(p['text'] or '')}" for p in posted]
    lines = [f"  Shown: {' -> '.join(steps)} characters"]
    feedback = turn.get("feedback") or {}
    if feedback.get("helpful") or feedback.get("harmful"):
        lines.append(
            f"  Feedback: {feedback['helpful']} helpful, {feedback['harmful']} not helpful"
        )
    return lines


def _interaction_lines(report: dict[str, Any]) -> list[str]:
    if not report.get("interactions"):
        return []
    lines = ["\nSlash commands and button clicks, in the order sent:"]
    for item in report.get("interactions") or []:
        lines.append(f"\n{item['kind']} by {item['user']} in {item['channel']}: {item['input']}")
        answer = item.get("response") or "(acknowledged)"
        lines.extend(f"  | {line}" for line in str(answer).splitlines())
    return lines


def render_transcript(report: dict[str, Any]) -> str:
    calls = report["slack_api_calls"]
    lines = [
        f"chanctx replay: {report['fixture']} ({report['events']} events, {len(report['turns'])} answers)",
        f"Answers from {report['answers_from']}, against loopback fakes of Slack and the Messages "
        'API (no network, no credentials). "requests" at the end counts Messages API requests: '
        "a turn makes one, plus one per round of tool calls.",
    ]
    for skipped in report.get("skipped_mentions", []):
        lines.append(f"Skipped the mention {skipped['channel']} {skipped['ts']}: {skipped['why']}")
    for number, turn in enumerate(report["turns"], start=1):
        context = turn["context"]
        if context is None:
            lines.append(
                f"\nTurn {number}: {turn['channel']} {turn['anchor_ts']}: no context ({turn['error']})"
            )
            continue
        anchor = ChannelSnapshot.model_validate(context["snapshot"]).anchor
        channel = context["snapshot"]["channel"]["name"]
        where = "in a thread" if anchor.thread_id else "top-level"
        team = f" [workspace {turn['team']}]" if turn.get("team") else ""
        lines.append(
            f"\nTurn {number}{team}: #{channel}, {where}, {anchor.author.display_name} "
            f"at {anchor.ts}"
        )
        lines.append(f"  > {anchor.text}")
        lines.extend(_context_lines(context))
        for call in turn.get("tool_calls", []):
            flag = " (error)" if call["is_error"] else ""
            lines.append(
                f"  Tool {call['name']}{flag}: {json.dumps(call['input'], sort_keys=True)}"
            )
            lines.append(f"    -> {len(call['output'])} characters")
        if turn["reply"]:
            lines.append("  Reply:")
            lines.extend(f"    {line}" for line in turn["reply"].splitlines())
        else:
            lines.append("  Reply: none (context only)")
        lines.extend(_shown_lines(turn))
        if turn["error"]:
            lines.append(f"  Error: {turn['error']}")
    lines.extend(_interaction_lines(report))
    for channel, bullets in report.get("playbook", {}).items():
        lines.append(f"\nPlaybook of {channel}: {len(bullets)} bullets")
        for bullet in bullets:
            lines.append(
                f"  [{bullet['id']}] helpful={bullet['helpful']} harmful={bullet['harmful']} "
                f"{bullet['state']} :: {bullet['content']}"
            )
    spent = ", ".join(f"{method} x{n}" for method, n in calls.items()) or "none"
    lines.append(f"\nSlack Web API calls: {spent}")
    claude = report["claude"]
    if claude.get("requests"):
        lines.append(
            f"Claude: {claude['requests']} requests; input tokens {claude['input_tokens']} uncached, "
            f"{claude['cache_creation_input_tokens']} written to and {claude['cache_read_input_tokens']} "
            "read from the prompt cache"
        )
    return "\n".join(lines)
