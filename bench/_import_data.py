"""A generated Slack export for ``python -m bench import``, written as a stream into a ZIP.

The workspace has public and private channels, DMs and group DMs; its messages have threads
(roots with ``reply_count``, ``reply_users`` and ``latest_reply``, then their replies), edits,
reactions, file shares, bot messages, joins and topic changes, and non-ASCII text, in the
proportions a busy engineering workspace shows. One day file is built and written at a time,
so generating a million messages needs the memory of one day, not of the export. The same
seed and size give the same bytes, so the file is cached between runs.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TEAM", "Workspace", "write_export"]

TEAM = "T0BENCHIMP"
START = 1_700_000_000  # the first day's midnight, UTC
DAY = 86_400
PER_DAY = 400  # messages a day file holds (about; threads may run a little over)
WORDS = [
    "deploy",
    "checkout",
    "api",
    "timeout",
    "rollback",
    "incident",
    "latency",
    "cache",
    "pool",
    "redis",
    "postgres",
    "queue",
    "worker",
    "retry",
    "alert",
    "pager",
    "oncall",
    "canary",
    "release",
    "branch",
    "merge",
    "review",
    "flaky",
    "test",
    "build",
    "pipeline",
    "docker",
    "kubernetes",
    "node",
    "pod",
    "memory",
    "cpu",
    "disk",
    "quota",
    "limit",
    "token",
    "auth",
    "login",
    "session",
    "invoice",
    "billing",
    "report",
    "dashboard",
    "metric",
    "graph",
    "spike",
    "error",
    "warning",
    "trace",
    "span",
    "log",
]
ACCENTED = (
    "café",
    "naïve",
    "Zürich",
    "São Paulo",
    "déjà vu",
    "straße",
    "日本語",
    "🎉",
    "ça marche",
)
EMOJI = ("eyes", "+1", "tada", "white_check_mark", "fire", "thinking_face")


@dataclass(frozen=True)
class Conversation:
    id: str
    name: str
    kind: str  # "public", "private", "dm", "mpim"

    @property
    def folder(self) -> str:
        return self.id if self.kind == "dm" else self.name


@dataclass(frozen=True)
class Workspace:
    users: tuple[str, ...]
    conversations: tuple[Conversation, ...]

    @classmethod
    def make(cls, people: int = 60) -> Workspace:
        users = tuple(f"U0BENCH{n:03d}" for n in range(people))
        convs = [Conversation(f"C0PUB{n:05d}", f"team-{n:02d}", "public") for n in range(14)]
        convs += [Conversation(f"G0PRV{n:05d}", f"private-{n:02d}", "private") for n in range(4)]
        convs += [Conversation(f"D0DM{n:06d}", f"D0DM{n:06d}", "dm") for n in range(4)]
        convs += [Conversation(f"G0MPIM{n:04d}", f"mpdm-group-{n}", "mpim") for n in range(2)]
        return cls(users, tuple(convs))


def _text(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(4, 28))
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(ACCENTED))
    if rng.random() < 0.1:
        words.append(f"v{rng.randint(1, 60)}.{rng.randint(0, 9)}")
    return " ".join(words)


def _ts(seconds: float, n: int) -> str:
    return f"{int(seconds)}.{n % 1_000_000:06d}"


class _Day:
    """The messages of one conversation's day, with threads whose replies follow their roots."""

    def __init__(self, rng: random.Random, users: tuple[str, ...], day: int) -> None:
        self.rng, self.users, self.day = rng, users, day

    def messages(self, count: int) -> list[dict[str, Any]]:
        rng, out = self.rng, list[dict[str, Any]]()
        base = START + self.day * DAY
        step = DAY / (count + 1)
        seq = 0
        while len(out) < count:
            seq += 1
            at = base + len(out) * step
            message = self._one(at, seq)
            out.append(message)
            if rng.random() < 0.08 and len(out) < count - 3:  # a thread
                replies = rng.randint(1, 6)
                people = rng.sample(self.users, min(3, len(self.users)))
                root_ts = message["ts"]
                reply_ts = [_ts(at + 1 + r, seq * 10 + r + 1) for r in range(replies)]
                message.update(
                    thread_ts=root_ts,
                    reply_count=replies,
                    reply_users=people,
                    latest_reply=reply_ts[-1],
                    replies=[{"user": rng.choice(people), "ts": ts} for ts in reply_ts],
                )
                for ts in reply_ts:
                    reply = {
                        "type": "message",
                        "user": rng.choice(people),
                        "ts": ts,
                        "thread_ts": root_ts,
                        "parent_user_id": message.get("user", ""),
                        "text": _text(rng),
                    }
                    if rng.random() < 0.03:
                        reply["subtype"] = "thread_broadcast"
                    out.append(reply)
        return out

    def _one(self, at: float, seq: int) -> dict[str, Any]:
        rng = self.rng
        user = rng.choice(self.users)
        ts = _ts(at, seq)
        roll = rng.random()
        if roll < 0.01:
            return {"type": "message", "subtype": "channel_join", "user": user, "ts": ts,
                    "text": f"<@{user}> has joined the channel"}  # fmt: skip
        if roll < 0.015:
            topic = _text(rng)
            return {"type": "message", "subtype": "channel_topic", "user": user, "ts": ts,
                    "text": f"set the channel topic: {topic}", "topic": topic}  # fmt: skip
        if roll < 0.035:
            return {"type": "message", "subtype": "bot_message", "bot_id": "B0DEPLOY01",
                    "username": "deploybot", "ts": ts, "text": _text(rng),
                    "bot_profile": {"id": "B0DEPLOY01", "name": "deploybot"}}  # fmt: skip
        message: dict[str, Any] = {
            "client_msg_id": f"{seq:08x}-aaaa-bbbb-cccc-{self.day:012d}",
            "type": "message",
            "text": _text(rng),
            "user": user,
            "ts": ts,
            "team": TEAM,
            "user_team": TEAM,
            "source_team": TEAM,
            "user_profile": {"real_name": f"Person {user[-3:]}", "display_name": user[-3:].lower()},
        }
        if rng.random() < 0.04:
            message["edited"] = {"user": user, "ts": _ts(at + 30, seq)}
        if rng.random() < 0.06:
            picked = rng.sample(EMOJI, rng.randint(1, 2))
            message["reactions"] = [
                {"name": name, "users": (who := rng.sample(self.users, rng.randint(1, 3))),
                 "count": len(who)} for name in picked
            ]  # fmt: skip
        if rng.random() < 0.02:
            fid = f"F0{self.day:05d}{seq:05d}"
            message["files"] = [
                {"id": fid, "name": f"report-{seq}.pdf", "title": f"Report {seq} — résumé",
                 "mimetype": "application/pdf", "size": rng.randint(1_000, 900_000),
                 "url_private": f"https://files.slack.com/files-pri/{TEAM}-{fid}/report.pdf"}
            ]  # fmt: skip
            message["subtype"] = "file_share"
        return message


def _plan(total: int, workspace: Workspace) -> Iterator[tuple[Conversation, int, int]]:
    """(conversation, day, messages) until ``total``: busy public channels get most."""
    weights = [
        {"public": 6, "private": 3, "dm": 1, "mpim": 1}[c.kind] for c in workspace.conversations
    ]
    share = [total * w // sum(weights) for w in weights]
    share[0] += total - sum(share)
    for conversation, count in zip(workspace.conversations, share, strict=True):
        day = 0
        while count > 0:
            n = min(PER_DAY, count)
            yield conversation, day, n
            count -= n
            day += 1


def write_export(
    path: Path, total: int, *, seed: int = 27, progress: Callable[[int], object] | None = None
) -> int:
    """Write an export of about ``total`` messages to the ZIP ``path``; messages written."""
    rng = random.Random(seed)
    workspace = Workspace.make()
    written = 0
    partial = path.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("users.json", _dump([_user(u) for u in workspace.users]))
        for file, kind in (("channels.json", "public"), ("groups.json", "private"),
                           ("dms.json", "dm"), ("mpims.json", "mpim")):  # fmt: skip
            chosen = [c for c in workspace.conversations if c.kind == kind]
            archive.writestr(file, _dump([_conversation(c, workspace.users) for c in chosen]))
        for conversation, day, count in _plan(total, workspace):
            messages = _Day(rng, workspace.users, day).messages(count)
            name = _date(day)
            archive.writestr(f"{conversation.folder}/{name}.json", _dump(messages))
            written += len(messages)
            if progress is not None:
                progress(len(messages))
    partial.replace(path)
    return written


def _date(day: int) -> str:
    return (dt.date(2023, 11, 14) + dt.timedelta(days=day)).isoformat()


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=4).encode()


def _user(user: str) -> dict[str, Any]:
    return {
        "id": user,
        "team_id": TEAM,
        "name": f"person{user[-3:]}",
        "real_name": f"Person {user[-3:]}",
        "profile": {"real_name": f"Person {user[-3:]}", "display_name": user[-3:].lower()},
    }


def _conversation(conversation: Conversation, users: tuple[str, ...]) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": conversation.id, "members": list(users[:8])}
    if conversation.kind != "dm":
        entry["name"] = conversation.name
        entry["topic"] = {"value": "incidents and deploys"}
        entry["purpose"] = {"value": "où l'on parle de tout"}
    return entry
