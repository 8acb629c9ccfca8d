"""A Slack export read as a stream of records: users, channels, then each channel's messages.

An export is ``users.json``, the conversation lists (``channels.json`` public, ``groups.json``
private, ``dms.json`` and ``mpims.json`` direct and group messages) and one folder per
conversation holding a JSON array of messages per day (``2024-05-01.json``). Public and group-DM
folders are named after the conversation, DM folders after its id.

Nothing is loaded whole: each day file is parsed on its own, so memory follows the largest day,
not the export. What cannot be read becomes a ``Problem`` naming the file (and the message's
place in it) while everything else is still read; a message without a usable ``ts`` is one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from chanctx.bot.export.source import ExportSource, MemberRefused, unsafe_reason

__all__ = [
    "ExportChannel",
    "ExportDay",
    "ExportMessage",
    "ExportUser",
    "Problem",
    "RawDay",
    "has_surrogate_escape",
    "is_slack_ts",
    "message_problem",
    "parse_day",
    "read_export",
    "unicode_problem",
]

Kind = Literal["public", "private", "dm", "mpim"]
_LISTS: tuple[tuple[str, Kind], ...] = (
    ("channels.json", "public"),
    ("groups.json", "private"),
    ("dms.json", "dm"),
    ("mpims.json", "mpim"),
)
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_TS = re.compile(r"\d{1,10}\.\d{1,6}")  # whole (fullmatch): no trailing newline either
_ID = re.compile(r"^[A-Z0-9]{2,30}$")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
is_slack_ts = _TS.fullmatch  # the whole string is a Slack ts (what message_problem accepts)


@dataclass(frozen=True)
class ExportUser:
    id: str
    team: str
    name: str
    real_name: str
    display_name: str
    is_bot: bool
    deleted: bool


@dataclass(frozen=True)
class ExportChannel:
    id: str
    name: str
    kind: Kind
    folder: str
    members: tuple[str, ...] = ()
    topic: str = ""
    purpose: str = ""
    pins: tuple[str, ...] = ()  # ts of pinned messages, when the export lists them


@dataclass(frozen=True)
class ExportMessage:
    channel: ExportChannel
    message: dict[str, Any]  # as Slack wrote it, ``ts`` checked
    where: str  # "general/2024-05-01.json #3", for messages about it


@dataclass(frozen=True)
class ExportDay:
    """One day file's messages as parsed (a list; each item still to be checked with
    :func:`message_problem`): what ``read_export(..., days=True)`` yields instead of
    one record per message, so a fast reader pays nothing per message it does not need."""

    channel: ExportChannel
    name: str  # "general/2024-05-01.json"
    messages: list[Any]
    escapes: bool = False  # the file holds a surrogate escape (see unicode_problem)

    def records(self) -> Iterator[ExportMessage | Problem]:
        for index, message in enumerate(self.messages):
            where = f"{self.name} #{index}"
            problem = message_problem(message, where)
            if problem is None and self.escapes:
                problem = unicode_problem(message, where)
            yield ExportMessage(self.channel, message, where) if problem is None else problem


@dataclass(frozen=True)
class RawDay:
    """One day file's bytes, not parsed yet: what ``read_export(..., days="raw")`` yields, for
    a reader with a faster decoder of its own (``parse_day`` is the one to fall back on)."""

    channel: ExportChannel
    name: str
    data: bytes


@dataclass(frozen=True)
class Problem:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class _Lists:
    channels: list[ExportChannel] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    found_any: bool = False


Record = ExportUser | ExportChannel | ExportMessage | ExportDay | RawDay | Problem


def read_export(
    source: ExportSource, *, only: set[str] | None = None, days: bool | Literal["raw"] = False
) -> Iterator[Record]:
    """Users, then conversations, then their messages day by day; ``Problem`` for what could
    not be read. ``only``: conversation ids or names to read (others are not opened).
    ``days``: one :class:`ExportDay` a day file instead of a record a message; ``"raw"``: one
    :class:`RawDay` (its bytes) a day file."""
    names = sorted(source.names())
    for name in names:
        reason = unsafe_reason(name)
        if reason is not None:
            yield Problem(name, f"refused, {reason}; not read")
    yield from _users(source, names)
    lists = _conversations(source, set(names))
    yield from lists.problems
    chosen = [c for c in lists.channels if only is None or c.id in only or c.name in only]
    for channel in chosen:
        yield channel
    known = {c.folder for c in lists.channels}
    for folder in sorted({n.split("/", 1)[0] for n in names if "/" in n} - known):
        if unsafe_reason(folder) is None:
            yield Problem(folder + "/", "a folder no conversation list names; skipped")
    for channel in chosen:
        files = [n for n in names if n.startswith(channel.folder + "/")]
        for day in files:
            if not _DAY.match(day.removeprefix(channel.folder + "/")):
                yield Problem(day, "not a day file (YYYY-MM-DD.json); skipped")
                continue
            found = _raw_day(source, channel, day) if days == "raw" else _day(source, channel, day)
            if isinstance(found, Problem | RawDay) or days:
                yield found
            else:
                yield from found.records()


def _load(source: ExportSource, name: str) -> tuple[Any, Problem | None]:
    """The parsed file, or the problem reading it."""
    try:
        raw = source.read(name)
    except MemberRefused as error:
        return None, Problem(name, str(error).removeprefix(f"{name}: "))
    return _parsed(name, raw)


def _parsed(name: str, raw: bytes) -> tuple[Any, Problem | None]:
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError as error:
        return None, Problem(name, f"not UTF-8 (byte {error.start})")
    except json.JSONDecodeError as error:
        return None, Problem(
            name, f"not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        )
    except RecursionError:
        return None, Problem(name, "JSON nested too deeply")


def _users(source: ExportSource, names: list[str]) -> Iterator[ExportUser | Problem]:
    if "users.json" not in names:
        return
    data, problem = _load(source, "users.json")
    if problem is not None:
        yield problem
        return
    if not isinstance(data, list):
        yield Problem("users.json", "not a JSON array of users")
        return
    for index, user in enumerate(data):
        if not isinstance(user, dict) or not _ID.match(str(user.get("id", ""))):
            yield Problem(f"users.json #{index}", "a user without a valid id; skipped")
            continue
        found = user.get("profile")
        profile: dict[str, Any] = found if isinstance(found, dict) else {}
        yield ExportUser(
            id=str(user["id"]),
            team=str(user.get("team_id") or user.get("team") or ""),
            name=str(user.get("name") or ""),
            real_name=str(user.get("real_name") or profile.get("real_name") or ""),
            display_name=str(profile.get("display_name") or ""),
            is_bot=bool(user.get("is_bot")),
            deleted=bool(user.get("deleted")),
        )


def _conversations(source: ExportSource, names: set[str]) -> _Lists:
    lists = _Lists()
    seen: set[str] = set()
    for file, kind in _LISTS:
        if file not in names:
            continue
        lists.found_any = True
        data, problem = _load(source, file)
        if problem is not None:
            lists.problems.append(problem)
            continue
        if not isinstance(data, list):
            lists.problems.append(Problem(file, "not a JSON array of conversations"))
            continue
        for index, entry in enumerate(data):
            channel = _channel(entry, kind)
            if channel is None:
                lists.problems.append(
                    Problem(f"{file} #{index}", "a conversation without a valid id")
                )
            elif channel.id not in seen:
                seen.add(channel.id)
                lists.channels.append(channel)
    return lists


def _channel(entry: Any, kind: Kind) -> ExportChannel | None:
    if not isinstance(entry, dict) or not _ID.match(str(entry.get("id", ""))):
        return None
    ident = str(entry["id"])
    name = str(entry.get("name") or ident)
    folder = ident if kind == "dm" else name
    if unsafe_reason(folder) is not None or "/" in folder:
        folder = ident

    def text(key: str) -> str:
        value = entry.get(key)
        return str(value.get("value") or "") if isinstance(value, dict) else ""

    members = entry.get("members")
    pins = entry.get("pins")
    return ExportChannel(
        id=ident,
        name=name,
        kind=kind,
        folder=folder,
        members=tuple(str(m) for m in members) if isinstance(members, list) else (),
        topic=text("topic"),
        purpose=text("purpose"),
        pins=tuple(str(p["id"]) for p in pins if isinstance(p, dict) and "id" in p)
        if isinstance(pins, list)
        else (),
    )


def _raw_day(source: ExportSource, channel: ExportChannel, day: str) -> RawDay | Problem:
    try:
        return RawDay(channel, day, source.read(day))
    except MemberRefused as error:
        return Problem(day, str(error).removeprefix(f"{day}: "))


def _day(source: ExportSource, channel: ExportChannel, day: str) -> ExportDay | Problem:
    found = _raw_day(source, channel, day)
    return found if isinstance(found, Problem) else parse_day(found)


def parse_day(day: RawDay) -> ExportDay | Problem:
    """The day file's messages as ``json.loads`` reads them, or the problem naming why not."""
    data, problem = _parsed(day.name, day.data)
    if problem is not None:
        return problem
    if not isinstance(data, list):
        return Problem(day.name, "not a JSON array of messages")
    return ExportDay(day.channel, day.name, data, has_surrogate_escape(day.data))


def has_surrogate_escape(raw: bytes) -> bool:
    """The bytes hold a ``\\ud8xx``-style escape (maybe a lone surrogate: see unicode_problem)."""
    return _SURROGATE_ESCAPE.search(raw) is not None


def message_problem(message: Any, where: str) -> Problem | None:
    """Why an item of a day file is no message (None when it has a usable ts)."""
    if not isinstance(message, dict):
        return Problem(where, "not a message object")
    ts = message.get("ts")
    if not isinstance(ts, str) or not _TS.fullmatch(ts):
        return Problem(where, "no ts" if ts is None else f"ts {ts!r} is not a Slack ts")
    return None


def unicode_problem(message: Any, where: str) -> Problem | None:
    """A message holding a lone surrogate (a ``\\ud800`` escape JSON allows but UTF-8 cannot
    store): refused, as it could not be written. Checked only in a day whose bytes hold such
    an escape (``ExportDay.escapes``), since a valid pair is an escape too."""
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        return Problem(where, f"not valid Unicode (a lone surrogate at character {error.start})")
    return None
