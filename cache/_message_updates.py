"""How a stored message changes: a reply added or deleted updates its root's thread metadata, an
edit replaces its text, a deleted root with live replies becomes a tombstone.

A root's metadata (``reply_count``, ``latest_reply``, ``reply_users``) is the platform's
snapshot advanced by the replies seen since: a reply newer than the root's ``latest_reply`` is
new since that snapshot and adds one; an older one was already counted, so it only raises the
count to the number of replies known.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chanctx.cache._ts_keys import raw_ts_key
from chanctx.context import FileRef, Message
from chanctx.context.timestamps import validate_ts

__all__ = ["edited", "merge_root", "tombstone", "with_new_reply", "without_reply"]


def _latest(replies: Iterable[Message]) -> str | None:
    best: str | None = None
    best_key = -1
    for reply in replies:
        key = raw_ts_key(reply.ts)
        if key > best_key:
            best, best_key = reply.ts, key
    return best


def _ordered_users(replies: Iterable[Message]) -> list[str]:
    users: list[str] = []
    for reply in replies:
        if reply.user_id and reply.user_id not in users:
            users.append(reply.user_id)
    return users


def _meta_rank(msg: Message) -> tuple[int, int]:
    latest = -1 if msg.latest_reply is None else raw_ts_key(msg.latest_reply)
    return latest, msg.reply_count


def with_new_reply(root: Message, reply: Message, known: int) -> Message:
    """``root`` after a new ``reply`` arrived; ``known`` counts the known replies, it included."""
    latest = root.latest_reply
    if latest is None or raw_ts_key(reply.ts) > raw_ts_key(latest):
        count = max(root.reply_count + 1, known)
        latest = reply.ts
    else:  # older than the snapshot's latest reply: the platform already counted it
        count = max(root.reply_count, known)
    users = root.reply_users
    if reply.user_id and reply.user_id not in users:
        users = (*users, reply.user_id)
    return root.model_copy(
        update={
            "reply_count": count,
            "latest_reply": latest,
            "reply_users": users,
            "thread_ts": root.ts,
        }
    )


def merge_root(new: Message, old: Message | None, known: Sequence[Message]) -> Message:
    """A root (re)recorded: the fresher thread metadata of ``new``/``old``, plus ``known`` replies.

    An event copy of a root usually carries no thread metadata, so it must not wipe the count we
    kept current; a platform snapshot with a newer ``latest_reply`` wins over ours.
    """
    if old is None and not known:
        return new
    base = new
    if old is not None and not old.is_reply and _meta_rank(old) > _meta_rank(new):
        base = old
    count = max(base.reply_count, len(known))
    latest = base.latest_reply
    users = list(base.reply_users)
    for reply in known:
        if latest is None or raw_ts_key(reply.ts) > raw_ts_key(latest):
            latest = reply.ts
        if reply.user_id and reply.user_id not in users:
            users.append(reply.user_id)
    meta = (count, latest, tuple(users))
    if meta == (new.reply_count, new.latest_reply, new.reply_users):
        return new
    update: dict[str, Any] = {"reply_count": count, "latest_reply": latest, "reply_users": meta[2]}
    if count and new.thread_ts is None:
        update["thread_ts"] = new.ts
    return new.model_copy(update=update)


def without_reply(root: Message, gone: Message, remaining: Sequence[Message]) -> Message:
    """``root`` after its reply ``gone`` was deleted; ``remaining`` are the replies still known."""
    count = max(root.reply_count - 1, len(remaining))
    latest = root.latest_reply
    users = root.reply_users
    if count == len(remaining):  # every reply is known: recompute exactly
        latest = _latest(remaining)
        present = _ordered_users(remaining)
        users = tuple(u for u in root.reply_users if u in present) + tuple(
            u for u in present if u not in root.reply_users
        )
    elif latest is not None and raw_ts_key(latest) == raw_ts_key(gone.ts) and remaining:
        latest = _latest(remaining)  # best known; some replies were never seen
    return root.model_copy(
        update={"reply_count": count, "latest_reply": latest, "reply_users": users}
    )


def tombstone(root: Message) -> Message:
    """What Slack shows for a deleted root whose thread lives on."""
    return root.model_copy(update={"deleted": True, "text": "", "files": (), "reactions": ()})


def edited(
    msg: Message, text: str, edited_ts: str | None, files: Sequence[FileRef] | None
) -> Message:
    update: dict[str, Any] = {"text": text}
    if edited_ts is not None:
        update["edited_ts"] = validate_ts(edited_ts)
    if files is not None:
        update["files"] = tuple(files)
    return msg.model_copy(update=update)
