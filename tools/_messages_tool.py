"""channel_messages: a thread, messages by id, or a file's metadata, all from this channel only."""

from __future__ import annotations

from collections.abc import Sequence

from chanctx.cache import ts_key
from chanctx.context import Message, ThreadContext, Truncation, build_thread_context, iso_from_ts
from chanctx.context.budget import Chunk
from chanctx.context.render import author_of, media_of, text_of
from chanctx.tools._env import Env, ToolResult, not_found
from chanctx.tools._fit import cut_text, fit_ranked
from chanctx.tools._inputs import ChannelMessagesInput
from chanctx.tools._outputs import (
    FetchedMessage,
    MediaInfo,
    MediaOutput,
    MessagesOutput,
    ThreadOutput,
)
from chanctx.tools._outputs import output_json as _json

__all__ = ["run_channel_messages"]

# The tool only describes the file; the bot attaches its content after this result when it can
# download it (bot/claude/session_media.py), or a line saying why it could not.
MEDIA_NOTE = (
    "The file itself follows this result as a content block when it could be attached. If "
    "nothing follows, you cannot see its content: tell the user what the file is (name, type, "
    "size) and that you cannot open it."
)
DELETED_ROOT = "[this message was deleted; its thread remains]"
MISSING_ROOT = "[the thread's first message is not available]"


def run_channel_messages(env: Env, args: ChannelMessagesInput) -> ToolResult:
    if args.thread_id is not None:
        return _thread(env, args.thread_id, args.max_replies)
    if args.message_ids is not None:
        return _messages(env, args.message_ids)
    assert args.media_artifact_id is not None  # the input model guarantees exactly one
    return _media(env, args.media_artifact_id)


# -- thread ---------------------------------------------------------------------------------


def _join(*parts: str | None) -> str | None:
    return " ".join(p for p in parts if p) or None


def _thread(env: Env, thread_id: str, max_replies: int) -> ToolResult:
    try:
        lookup = env.view.thread(thread_id)
    except Exception as error:  # a platform failure must not break the tool loop
        return ToolResult(
            f"thread {thread_id} could not be read right now ({type(error).__name__}); "
            "try again later or search with channel_context",
            is_error=True,
        )
    key = ts_key(thread_id)
    root = lookup.root if lookup.root is not None and lookup.root.channel == env.channel else None
    if root is not None and root.is_reply:
        assert root.thread_ts is not None
        return ToolResult(
            f"message {thread_id} is a reply, not a thread root: call channel_messages "
            f"with thread_id {root.thread_ts}",
            is_error=True,
        )
    replies = sorted(
        {
            ts_key(r.ts): r
            for r in lookup.replies
            if env.own(r) is not None
            and r.thread_ts is not None
            and ts_key(r.thread_ts) == key
            and ts_key(r.ts) != key
        }.items()
    )
    all_replies = [reply for _, reply in replies]
    if root is None or root.deleted:
        if not all_replies:
            return not_found("thread", [thread_id])
        # The thread outlives its first message; say so rather than show an empty root.
        if root is None:
            root = Message(
                channel=env.channel, ts=thread_id, thread_ts=thread_id, text=MISSING_ROOT
            )
        else:
            root = root.model_copy(update={"text": DELETED_ROOT, "files": ()})
    return ToolResult(_fit_thread(env, root, all_replies, max_replies, lookup.note))


def _thread_output(
    context: ThreadContext,
    replies: Sequence[Message],
    offered: int,
    cut_root: bool,
    note: str | None,
    *,
    terse: bool = False,
) -> ThreadOutput:
    """The answer, its truncation block restated against *all* replies, not the offered ones.

    ``terse`` swaps the explanations for one short sentence: at the smallest budgets the
    explanation itself would not fit (the truncation block still says what was left out).
    """
    total, included = len(replies), len(context.replies)
    omitted = total - included
    context = context.model_copy(
        update={
            "truncation": Truncation(
                total_replies=total,
                included_replies=included,
                omitted_range_ts=(
                    (iso_from_ts(replies[0].ts), iso_from_ts(replies[omitted - 1].ts))
                    if omitted
                    else None
                ),
            )
        }
    )
    cut_reply = any(reply.is_truncated for reply in context.replies)
    truncated = bool(omitted or cut_root or cut_reply)
    why: str | None = None
    if terse:
        why = "Cut to fit the output budget." if truncated else None
    elif omitted and included == offered:
        why = (
            f"{omitted} older replies are not included (max_replies): call again with a larger "
            "max_replies (up to 500) to read them."
        )
    elif omitted:
        why = (
            f"{omitted} older replies are not included, to fit the output budget: search them "
            "with channel_context (an intent, and since) or fetch them with message_ids."
        )
    cuts: str | None = None
    if not terse:
        cuts = "The root's text was cut to fit the output budget." if cut_root else None
        if cut_reply:
            cuts = _join(cuts, "The oldest reply shown was cut (is_truncated).")
    return ThreadOutput(
        thread=context, truncated=True if truncated else None, note=_join(why, cuts, note)
    )


def _fit_thread(
    env: Env, root: Message, replies: list[Message], max_replies: int, note: str | None
) -> str:
    offered = replies[-max_replies:]

    def fits(output: ThreadOutput) -> bool:
        return env.counter.count(_json(output)) <= env.budget

    def build(budget: int) -> ThreadContext:
        return build_thread_context(
            root, offered, budget_tokens=max(budget, 0), counter=env.counter, names=env.names
        )

    # Reserve room for the wrapper and the longest note, then let the builder pack replies.
    empty = build(0)
    worst = max(
        env.counter.count(_json(_thread_output(empty, replies, offered_count, True, note)))
        for offered_count in (0, len(offered))
    )
    context = build(env.budget - (worst - env.counter.count(empty.model_dump_json())))
    output = _thread_output(context, replies, len(offered), False, note)
    while context.replies and not fits(output):
        context = context.model_copy(update={"replies": context.replies[1:]})
        output = _thread_output(context, replies, len(offered), False, note)
    if fits(output):
        return _json(output)

    # The root alone is over the budget (a thread's context keeps its root whole, but the
    # tool's output budget is a hard cap): cut its text and keep no replies; tersely if need be.
    for terse in (False, True):

        def with_root_text(text: str, terse: bool = terse) -> ThreadOutput:
            cut = context.model_copy(
                update={"root": context.root.model_copy(update={"text": text}), "replies": []}
            )
            return _thread_output(cut, replies, len(offered), True, note, terse=terse)

        text = cut_text(context.root.text, lambda t: fits(with_root_text(t)))
        if text is not None:
            return _json(with_root_text(text))
    return _json(with_root_text(""))


# -- messages by id -------------------------------------------------------------------------


def _messages(env: Env, ids: list[str]) -> ToolResult:
    asked: list[str] = []
    seen: set[int] = set()
    for ts in ids:  # a repeated id is answered once, where it was first asked
        if ts_key(ts) not in seen:
            seen.add(ts_key(ts))
            asked.append(ts)
    found: list[Message] = []
    missing: list[str] = []
    for ts in asked:
        message = env.own(env.view.get(ts))
        if message is None:
            missing.append(ts)
        else:
            found.append(message)
    if missing:
        return not_found("message", missing)
    chunks = [
        Chunk(
            key=m.ts,
            text=text_of(m, env.names),
            item=FetchedMessage(
                message_id=m.ts,
                ts=iso_from_ts(m.ts),
                author=author_of(m, env.names),
                text=text_of(m, env.names),
                media=media_of(m),
            ),
        )
        for m in found
    ]

    def render(items: list[FetchedMessage], omitted: int, cut: int) -> str:
        # Bounded wording (not the list of ids): the note must fit small budgets too.
        why = (
            f"{omitted} of the messages asked for were left out to fit the output budget, "
            f"from {asked[len(asked) - omitted]} on (in the order asked): ask for them in "
            "another call."
            if omitted
            else None
        )
        cuts = f"The text of {cut} message(s) was cut (ends with '...')." if cut else None
        return _json(
            MessagesOutput(
                messages=items, truncated=True if omitted or cut else None, note=_join(why, cuts)
            )
        )

    fitted = fit_ranked(
        chunks,
        render=render,
        budget=env.budget,
        counter=env.counter,
        item_json=lambda item: item.model_dump_json(),
    )
    return ToolResult(render(fitted.items, fitted.omitted, fitted.cut))


# -- media ----------------------------------------------------------------------------------


def _media(env: Env, artifact_id: str) -> ToolResult:
    # Newest first: a file shared again later is reported where it was last shared.
    for message in reversed(env.messages()):
        for ref in message.files:
            if ref.artifact_id == artifact_id:
                info = MediaInfo(
                    artifact_id=ref.artifact_id,
                    media_type=ref.media_type,
                    filename=ref.filename,
                    byte_length=ref.byte_length,
                    source_message_id=message.ts,
                )
                return ToolResult(_json(MediaOutput(media=info, note=MEDIA_NOTE)))
    return not_found("media artifact", [artifact_id])
