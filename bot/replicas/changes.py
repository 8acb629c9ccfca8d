"""The entries of the change stream: what one replica saw or learned, for all of them.

Two kinds, both compact JSON (a message is its model without default fields):

* what an event meant (``rec``, ``edit``, ``del``, ``react``, ``pin``), decided once by the replica
  that received the event and applied by every replica, itself included, in stream order;
* an event the caches ignore but the channel store keeps (``slack``: a deleted channel or file,
  a new channel or person name), as Slack sent it, so every replica's store forgets and names
  alike;
* what a replica learned from Slack (``warm``, ``msgs``, ``thread``, ``name``), applied at once
  by the replica that asked and by the others when they read it, so no other replica asks again;
* what the backfill stored (``bf``: a page's messages with the cursors moved in its write), for
  the other replicas' own stores, so the replica that takes the backfill over goes on from there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chanctx.bot.core.channel_record import store_events
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.slack.intake import Delete, Edit, Ignore, IntakeAction, Pin, React, Record
from chanctx.cache.channel_store import BackfillCursor, CursorSaved, MessagePosted, StoreEvent
from chanctx.context import FileRef, Message

__all__ = [
    "EVENT_KINDS",
    "apply_change",
    "backfill_fill",
    "encode_action",
    "encode_stored",
    "fill",
    "message_data",
]

EVENT_KINDS = frozenset({"rec", "edit", "del", "react", "pin"})


def message_data(message: Message) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_defaults=True)


def _messages(rows: Any) -> list[Message]:
    return [Message.model_validate(row) for row in rows]


def encode_action(action: IntakeAction) -> str | None:
    """The stream entry for what an event meant; None for an event that changes nothing."""
    data: dict[str, Any]
    if isinstance(action, Record):
        data = {"k": "rec", "m": message_data(action.message)}
        if action.only_if_new:
            data["new"] = 1
    elif isinstance(action, Edit):
        data = {"k": "edit", "c": action.channel, "ts": action.ts, "text": action.text}
        if action.edited_ts:
            data["ets"] = action.edited_ts
        if action.files is not None:
            data["files"] = [f.model_dump(mode="json", exclude_defaults=True) for f in action.files]
    elif isinstance(action, Delete):
        data = {"k": "del", "c": action.channel, "ts": action.ts}
    elif isinstance(action, React):
        data = {"k": "react", "c": action.channel, "ts": action.ts, "name": action.name,
                "u": action.user, "add": int(action.added)}  # fmt: skip
    elif isinstance(action, Pin):
        data = {"k": "pin", "m": message_data(action.message), "add": int(action.added)}
    else:
        return None
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def encode_stored(team: str, action: IntakeAction, event: Mapping[str, Any]) -> str | None:
    """The stream entry for an event the caches ignore and the store keeps; None for others."""
    if not isinstance(action, Ignore) or not store_events(team, action, event):
        return None
    return json.dumps({"k": "slack", "e": event}, separators=(",", ":"), ensure_ascii=False)


def fill(kind: str, **data: Any) -> str:
    """The stream entry for something learned from Slack."""
    return json.dumps({"k": kind, **data}, separators=(",", ":"), ensure_ascii=False)


def _action(data: dict[str, Any]) -> IntakeAction:
    kind = data["k"]
    if kind == "rec":
        return Record(Message.model_validate(data["m"]), only_if_new=bool(data.get("new")))
    if kind == "edit":
        files = data.get("files")
        return Edit(
            data["c"],
            data["ts"],
            data["text"],
            data.get("ets"),
            None if files is None else tuple(FileRef.model_validate(f) for f in files),
        )
    if kind == "del":
        return Delete(data["c"], data["ts"])
    if kind == "react":
        return React(data["c"], data["ts"], data["name"], data["u"], bool(data["add"]))
    return Pin(Message.model_validate(data["m"]), bool(data["add"]))


def apply_change(engine: ContextEngine, raw: str | bytes, *, mine: bool, shared: bool) -> str:
    """Apply one stream entry to ``engine``; its kind. What any replica received is applied
    here, in order; what this replica learned itself (``mine``) is in its caches and store
    already. ``shared``: one store for every replica (PostgreSQL), which the replica that
    received or fetched it wrote; else each replica keeps its own store, and what the stream
    says goes into it too, so a restart finds it there without Slack or the stream.
    Raises ValueError/KeyError/TypeError for an entry it cannot read, and an OSError when
    the replica's own store cannot take it (the entry is then applied again later)."""
    data = json.loads(raw)
    kind = str(data["k"])
    if kind in EVENT_KINDS:
        engine.apply(_action(data), store=not shared)
    elif kind == "slack":
        # Stored by the receiving replica too when the store is shared: writing it again is
        # harmless (forgetting what is gone, a name it has), and the caches forget here.
        engine.handle(data["e"])
    elif mine:
        pass
    elif kind == "warm":
        messages = _messages(data["m"])
        engine.learn_warm(data["c"], messages)
        if engine.record is not None and not shared:
            limit = engine.settings.cold_start_messages
            engine.record.warmed(data["c"], messages, limit=limit)
    elif kind in ("msgs", "thread"):
        _learn(engine, data, kind, shared=shared)
    elif kind == "bf":  # the backfill's pages reach the store only, as where they were read
        if engine.record is not None and not shared:
            engine.record.write(_backfilled(engine.record.team, data))
    elif kind == "name":
        engine.learn_name(data["t"], data["id"], data["v"])
        if engine.record is not None and not shared:
            engine.record.named(data["t"], data["id"], data["v"])
    else:
        raise KeyError(kind)
    return kind


def backfill_fill(events: Sequence[StoreEvent]) -> str:
    """The stream entry for one write of the backfill: its messages and moved cursors."""
    return fill(
        "bf",
        m=[message_data(e.message) for e in events if isinstance(e, MessagePosted)],
        cur=[
            [e.channel, e.kind, e.cursor.model_dump(mode="json", exclude_defaults=True)]
            for e in events
            if isinstance(e, CursorSaved)
        ],
    )


def _backfilled(team: str, data: dict[str, Any]) -> list[StoreEvent]:
    events: list[StoreEvent] = [MessagePosted(team, m) for m in _messages(data["m"])]
    for channel, kind, cursor in data.get("cur") or []:
        events.append(
            CursorSaved(team, str(channel), str(kind), BackfillCursor.model_validate(cursor))
        )
    return events


def _learn(engine: ContextEngine, data: dict[str, Any], kind: str, *, shared: bool) -> None:
    """Messages another replica fetched from Slack: a page, or (part of) a thread."""
    messages = _messages(data["m"])
    if kind == "msgs":
        engine.learn_messages(messages)
    else:
        partial = data.get("partial")
        engine.learn_thread(
            data["c"],
            data["r"],
            messages,
            complete=bool(data["whole"]),
            partial=(partial[0], partial[1]) if partial else None,
        )
    if engine.record is not None and not shared:
        engine.record.fetched(messages)


def thread_fill(
    channel: str,
    root_ts: str,
    messages: Sequence[Message],
    *,
    complete: bool,
    partial: tuple[str | None, str | None] | None,
) -> str:
    return fill(
        "thread",
        c=channel,
        r=root_ts,
        m=[message_data(m) for m in messages],
        whole=int(complete),
        partial=list(partial) if partial else None,
    )
