"""The rules a stored message follows whichever backend holds it: what a posted copy does to
the stored one, thread counters kept from the copy that knows more, a reaction counted once per
person. One place, so the SQLite and PostgreSQL stores cannot drift apart on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from chanctx.cache import ts_key
from chanctx.cache.channel_store._records import MessageEdited, ReactionChanged, WriteResult
from chanctx.cache.channel_store._rows import MessageRow, version_of
from chanctx.context import Message, Reaction

__all__ = [
    "Posted",
    "RowColumns",
    "StoredRow",
    "edited",
    "posted_over",
    "reacted",
    "reacted_row",
    "retention_horizon",
    "same_copy",
    "sort_posts",
    "tally",
    "thread_rank",
]


class StoredRow(Protocol):
    """A stored message as both backends read it back."""

    @property
    def version(self) -> int: ...

    @property
    def deleted(self) -> int | bool: ...

    def message(self, channel: str) -> Message: ...


@dataclass(frozen=True)
class Posted:
    """What a posted copy does to the stored row: nothing (``deleted``: a tombstone holds the
    key; ``known``: the store already has this or newer), or ``write`` the merged message,
    which ``erases`` old text when its text or files changed."""

    outcome: Literal["deleted", "known", "write"]
    message: Message | None = None
    erases: bool = False


def posted_over(message: Message, old: StoredRow) -> Posted:
    if old.deleted:
        return Posted("deleted")
    if version_of(message.edited_ts) < old.version:
        return Posted("known")  # an older copy: the edit seen already stays
    before = old.message(message.channel)
    if not message.is_reply and thread_rank(before) > thread_rank(message):
        # An event copy of a root carries no thread counters: keep the ones stored.
        message = message.model_copy(
            update={
                "reply_count": before.reply_count,
                "latest_reply": before.latest_reply,
                "reply_users": before.reply_users,
                "thread_ts": before.thread_ts or message.thread_ts,
            }
        )
    if message == before:
        return Posted("known")
    erases = message.text != before.text or message.files != before.files
    return Posted("write", message, erases)


def retention_horizon(retention_days: int | None, now: float) -> int | None:
    """The ts key below which a message is older than the retention period (None: kept
    forever); a period longer than the epoch's age keeps everything."""
    if retention_days is None:
        return None
    seconds = int(now - retention_days * 86_400)
    return ts_key(f"{max(seconds, 0)}.000000")


def thread_rank(message: Message) -> tuple[int, int]:
    latest = -1 if message.latest_reply is None else ts_key(message.latest_reply)
    return latest, message.reply_count


def reacted(
    reactions: tuple[Reaction, ...], name: str, user: str, *, added: bool
) -> tuple[Reaction, ...]:
    """``reactions`` after ``user`` added or removed ``name`` (counted once per user; a user the
    platform did not list may still take one off, as the channel history does)."""
    out = list(reactions)
    for index, reaction in enumerate(out):
        if reaction.name != name:
            continue
        if added:
            if user in reaction.users:
                return reactions
            out[index] = reaction.model_copy(
                update={"count": reaction.count + 1, "users": (*reaction.users, user)}
            )
            return tuple(out)
        if user in reaction.users:
            users = tuple(u for u in reaction.users if u != user)
        elif reaction.count > len(reaction.users):
            users = reaction.users
        else:
            return reactions
        if reaction.count <= 1:
            del out[index]
        else:
            out[index] = reaction.model_copy(update={"count": reaction.count - 1, "users": users})
        return tuple(out)
    if added:
        out.append(Reaction(name=name, count=1, users=(user,)))
    return tuple(out)


# What a change of a stored message comes to when it stores nothing: the WriteResult count it
# falls under (never stored, a tombstone, or already as asked).
Refused = Literal["unknown", "deleted", "known"]


def edited(old: StoredRow | None, event: MessageEdited) -> Message | Refused:
    """The message an edit makes of the stored row; an edit no newer than the stored copy's,
    or one that changes nothing, is known."""
    if old is None:
        return "unknown"
    if old.deleted:
        return "deleted"
    if version_of(event.edited_ts) < old.version:
        return "known"
    before = old.message(event.channel)
    update: dict[str, object] = {"text": event.text, "edited_ts": event.edited_ts}
    if event.files is not None:
        update["files"] = event.files
    after = before.model_copy(update=update)
    return "known" if after == before else after


def reacted_row(old: StoredRow | None, event: ReactionChanged) -> Message | Refused:
    """The message one person's reaction makes of the stored row (counted once per person)."""
    if old is None:
        return "unknown"
    if old.deleted:
        return "deleted"
    before = old.message(event.channel)
    reactions = reacted(before.reactions, event.name, event.user, added=event.added)
    if reactions == before.reactions:
        return "known"
    return before.model_copy(update={"reactions": reactions})


def tally(result: WriteResult, refused: Refused) -> None:
    """Count a change that stored nothing under its reason."""
    if refused == "unknown":
        result.unknown += 1
    elif refused == "deleted":
        result.deleted += 1
    else:
        result.known += 1


class RowColumns(Protocol):
    """A stored row's columns, as a bulk post compares them with an incoming row."""

    ts: str
    thread_ts: str | None
    user_id: str
    text: str
    reply_count: int
    flags: int
    more: str | None
    version: int


def same_copy(old: RowColumns, row: MessageRow) -> bool:
    """The stored row already holds exactly this copy (so the rule says "known")."""
    return (
        old.ts == row[1]
        and old.thread_ts == row[3]
        and old.user_id == row[4]
        and old.text == row[5]
        and old.reply_count == row[6]
        and old.flags == row[7]
        and old.more == row[8]
        and old.version == row[9]
    )


def sort_posts(
    rows: Sequence[MessageRow],
    erased_through: int | None,
    horizon: int | None,
    result: WriteResult,
) -> tuple[dict[int, MessageRow], list[MessageRow], set[int]]:
    """A bulk post's rows sorted by how they must go in: the rows before the first that needs
    the per-event rule (``fresh``, one copy of each key, the candidates for the bulk insert),
    then that row and every one after it in order through the rule (``one_by_one``), and the
    keys of those. A tombstone or a key seen twice needs the rule, and what follows it must
    wait for it: a reply's tombstone counts the reply out of its root, so a root posted after
    it in the batch must not be stored before it. Rows of a forgotten range or past retention
    before that point are only counted."""
    fresh: dict[int, MessageRow] = {}
    one_by_one: list[MessageRow] = []
    slow_keys: set[int] = set()
    for row in rows:
        key = row[0]
        if one_by_one or row[10] or key in fresh:
            one_by_one.append(row)
            slow_keys.add(key)
        elif erased_through is not None and key <= erased_through:
            result.deleted += 1
        elif horizon is not None and key < horizon:
            result.expired += 1
        else:
            fresh[key] = row
    return fresh, one_by_one, slow_keys
