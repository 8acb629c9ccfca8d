"""The playbooks' durable store: one append-only JSONL file per channel in the data dir
(``playbooks/<channel>.jsonl``), every line fsynced, as crash-safe as the session logs.

A line records a result, never an instruction to redo: ``bullet`` (a bullet's whole state after
a change), ``drop`` (a bullet pruned), ``alias`` (an id merged into another), ``use`` (the
bullets a turn put in front of Claude) and ``voted`` (a person's verdict already counted, so a
reaction taken back and given again never counts twice). Loading folds the lines in order, so
a log written by an older chanctx loads the same whatever its rules were. A torn last line
(a crash mid-write) or a damaged one is skipped with a warning naming file and line. When a
file holds several times the lines its state needs, it is rewritten atomically (a temporary
file, fsync, rename).

``LocalPlaybookStore`` meets ``PlaybookStore`` (``base.py``); without a data dir it keeps the
playbooks in memory only.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, TextIO

from chanctx.context.playbook import Bullet, Delta, Playbook, Similarity
from chanctx.manifest_store.jsonl import line_of, rewrite_atomically
from chanctx.manifest_store.redaction import RedactionCount, Redactor, redact_file
from pydantic import ValidationError

__all__ = ["MAX_ACTIVE", "MAX_KEPT", "PLAYBOOK_DIR", "LocalPlaybookStore"]

logger = logging.getLogger("chanctx.playbook")

PLAYBOOK_DIR: Final = "playbooks"
MAX_ACTIVE: Final = 300  # active bullets kept per channel; the least useful go beyond
MAX_KEPT: Final = 200  # superseded / quarantined bullets kept for review
_MAX_USES: Final = 5_000  # turns whose bullets are remembered for votes, per channel
_MAX_VOTED: Final = 20_000
_CHANNEL = re.compile(r"^[A-Z0-9]{2,32}$")


class _Channel:
    """One channel's playbook, its turns' bullets and counted votes, and its open file."""

    def __init__(self, name: str, path: Path | None) -> None:
        self.name = name
        self.path = path
        self.playbook = Playbook()
        self.uses: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        # Turns answered here from another channel's playbook (the assistant pane): where
        # their votes go.
        self.routes: OrderedDict[str, str] = OrderedDict()
        self.voted: OrderedDict[str, bool] = OrderedDict()
        self.lines = 0
        self.handle: TextIO | None = None
        self.lock = threading.Lock()


class LocalPlaybookStore:
    """Playbooks in ``<data_dir>/playbooks/``; thread-safe (a lock per channel)."""

    def __init__(
        self,
        data_dir: Path | None,
        *,
        max_active: int = MAX_ACTIVE,
        max_kept: int = MAX_KEPT,
        on_change: Callable[[str], None] | None = None,
        similar: Similarity | None = None,
    ) -> None:
        """``similar``: an embedding model's similarity for merging near-duplicates (word
        overlap without one)."""
        self.similar = similar
        self.root = data_dir / PLAYBOOK_DIR if data_dir is not None else None
        self._max_active, self._max_kept = max_active, max_kept
        self._channels: dict[str, _Channel] = {}
        self._guard = threading.Lock()
        self._on_change = on_change
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)

    # -- reading -----------------------------------------------------------------------------

    def channels(self) -> list[str]:
        known = set(self._channels)
        if self.root is not None:
            known |= {p.stem for p in self.root.glob("*.jsonl") if _CHANNEL.match(p.stem)}
        return sorted(known)

    def bullets(self, channel: str) -> list[Bullet]:
        held = self._open(channel)
        with held.lock:
            self._catch_up(held)
            return held.playbook.bullets

    def playbook(self, channel: str) -> Playbook:
        """A copy of the channel's playbook (selecting from it needs no lock)."""
        held = self._open(channel)
        with held.lock:
            self._catch_up(held)
            return self.new_playbook(held.playbook.bullets, held.playbook.aliases)

    def used_by(self, channel: str, turn: str) -> list[str]:
        held = self._open(channel)
        with held.lock:
            self._catch_up(held)
            return list(held.uses.get(turn, ()))

    # -- writing -----------------------------------------------------------------------------

    def apply(self, channel: str, deltas: Sequence[Delta], now: float) -> list[str]:
        """Apply a curator's deltas, merge near-duplicates, keep the bounds; the ids touched."""
        held = self._open(channel)
        with self._exclusive(held):
            before = {b.id: b for b in held.playbook.bullets}
            touched = [i for d in deltas if (i := held.playbook.apply(d, now)) is not None]
            for kept, gone in held.playbook.refine():
                self._write(held, {"kind": "alias", "from": gone, "to": kept})
            for bullet_id in held.playbook.prune(self._max_active, self._max_kept):
                self._write(held, {"kind": "drop", "id": bullet_id})
            self._write_changed(held, before)
        self._changed(channel)
        return touched

    def record_use(
        self, channel: str, turn: str, ids: Sequence[str], *, answered_in: str | None = None
    ) -> None:
        """The bullets of ``channel``'s playbook ``turn`` put in front of Claude: a vote on its
        answer lands on them. ``answered_in``: where the answer was posted, when that is
        another channel (the assistant pane answers from the channel the user views); a vote
        there is routed here, after a restart too."""
        held = self._open(channel)
        with self._exclusive(held):
            _remember(held.uses, turn, tuple(ids), _MAX_USES)
            self._write(held, {"kind": "use", "turn": turn, "ids": list(ids)})
        if answered_in is not None and answered_in != channel:
            there = self._open(answered_in)
            with self._exclusive(there):
                _remember(there.routes, turn, channel, _MAX_USES)
                self._write(there, {"kind": "route", "turn": turn, "to": channel})

    def vote(self, channel: str, turn: str, user: str, *, helpful: bool, now: float) -> list[str]:
        """A person's verdict on ``turn``'s answer, counted once per person, turn and verdict
        (taking a reaction back and giving it again does not count twice: counters only
        grow). The ids whose counters changed."""
        key = f"{turn}|{user}|{'helpful' if helpful else 'harmful'}"
        held = self._open(channel)
        with held.lock:
            self._catch_up(held)
            routed = held.routes.get(turn)
        if routed is not None and routed != channel:
            return self.vote(routed, turn, user, helpful=helpful, now=now)
        with self._exclusive(held):
            ids = held.uses.get(turn, ())
            if key in held.voted or not ids:
                return []
            before = {b.id: b for b in held.playbook.bullets}
            changed = held.playbook.vote(ids, helpful=helpful, now=now)
            _remember(held.voted, key, True, _MAX_VOTED)
            self._write(held, {"kind": "voted", "key": key})
            self._write_changed(held, before)
        self._changed(channel)
        return changed

    def replace(self, channel: str, bullets: Sequence[Bullet]) -> None:
        """Import: the channel's playbook becomes ``bullets`` (reviewed and edited offline)."""
        held = self._open(channel)
        with self._exclusive(held):
            before = {b.id: b for b in held.playbook.bullets}
            held.playbook = self.new_playbook(bullets)
            for bullet_id in before.keys() - {b.id for b in bullets}:
                self._write(held, {"kind": "drop", "id": bullet_id})
            self._write_changed(held, before)
        self._changed(channel)

    def redact(self, redactor: Redactor) -> RedactionCount:
        """Erased Slack text out of every channel's file (atomically), then its state is
        loaded again from the file, so no copy in memory writes it back."""
        count = RedactionCount()
        if self.root is None or not redactor or not self.root.is_dir():
            return count
        for path in sorted(self.root.glob("*.jsonl")):
            if not _CHANNEL.match(path.stem):
                continue
            held = self._open(path.stem)
            with self._exclusive(held):
                if held.handle is not None:
                    held.handle.close()
                    held.handle = None
                found = redact_file(path, redactor)
                if found.lines:
                    held.playbook = self.new_playbook()
                    held.uses.clear()
                    held.routes.clear()
                    held.voted.clear()
                    held.lines = 0
                    self._load(held)
                count.add(found)
        return count

    def close(self) -> None:
        with self._guard:
            held_all = list(self._channels.values())
        for held in held_all:
            with held.lock:
                if held.handle is not None:
                    held.handle.close()
                    held.handle = None

    # -- internals ---------------------------------------------------------------------------

    def new_playbook(
        self, bullets: Iterable[Bullet] = (), aliases: dict[str, str] | None = None
    ) -> Playbook:
        return Playbook(bullets, aliases, similar=self.similar)

    # -- where the lines live (overridden by the Redis store) --------------------------------

    @contextmanager
    def _exclusive(self, held: _Channel) -> Iterator[None]:
        """One writer at a time for the channel, with its state current."""
        with held.lock:
            yield

    def _catch_up(self, held: _Channel) -> None:
        """Fold lines other writers appended since (none: this process is the only one)."""

    def _changed(self, channel: str) -> None:
        if self._on_change is not None:
            self._on_change(channel)

    def _open(self, channel: str) -> _Channel:
        if not _CHANNEL.match(channel):
            raise ValueError(f"not a channel id: {channel!r}")
        with self._guard:
            held = self._channels.get(channel)
            if held is not None:
                return held
            held = _Channel(
                channel, self.root / f"{channel}.jsonl" if self.root is not None else None
            )
            held.playbook = self.new_playbook()
            self._load(held)
            self._channels[channel] = held
            return held

    def _write_changed(self, held: _Channel, before: dict[str, Bullet]) -> None:
        for bullet in held.playbook.bullets:
            if before.get(bullet.id) != bullet:
                self._write(held, {"kind": "bullet", "bullet": bullet.model_dump(mode="json")})
        live = len(held.playbook.bullets) + len(held.uses) + len(held.voted) + len(held.routes)
        if held.lines > 4 * live + 1_000:
            self._rewrite(held)

    def _write(self, held: _Channel, entry: dict[str, Any]) -> None:
        if held.path is None:
            held.lines += 1
            return
        if held.handle is None:
            held.handle = held.path.open("a", encoding="utf-8")
        held.handle.write(line_of(entry))
        held.handle.flush()
        os.fsync(held.handle.fileno())
        held.lines += 1

    def _rewrite(self, held: _Channel) -> None:
        """The state in as few lines as it needs, swapped in atomically."""
        if held.path is None:
            held.lines = 0
            return
        if held.handle is not None:
            held.handle.close()
            held.handle = None
        held.lines = rewrite_atomically(held.path, _state_lines(held))

    def _load(self, held: _Channel) -> None:
        if held.path is None or not held.path.exists():
            return
        bullets: dict[str, Bullet] = {}
        aliases: dict[str, str] = {}
        torn = False
        with held.path.open("rb") as raw:
            for number, line in enumerate(raw, 1):
                torn = not line.endswith(b"\n")
                try:
                    _fold(json.loads(line), bullets, aliases, held)
                except (ValueError, KeyError, TypeError, ValidationError):
                    logger.warning("%s:%d: skipped an unreadable line", held.path, number)
                held.lines += 1
        held.playbook = self.new_playbook(bullets.values(), aliases)
        if torn:  # a crash mid-line: the next entry must not be glued to it
            held.handle = held.path.open("a", encoding="utf-8")
            held.handle.write("\n")


def _fold(
    entry: dict[str, Any], bullets: dict[str, Bullet], aliases: dict[str, str], held: _Channel
) -> None:
    kind = entry["kind"]
    if kind == "bullet":
        bullet = Bullet.model_validate(entry["bullet"])
        bullets[bullet.id] = bullet
    elif kind == "drop":
        bullets.pop(str(entry["id"]), None)
    elif kind == "alias":
        gone, kept = str(entry["from"]), str(entry["to"])
        bullets.pop(gone, None)
        aliases[gone] = kept
    elif kind == "use":
        _remember(held.uses, str(entry["turn"]), tuple(str(i) for i in entry["ids"]), _MAX_USES)
    elif kind == "voted":
        _remember(held.voted, str(entry["key"]), True, _MAX_VOTED)
    elif kind == "route":
        _remember(held.routes, str(entry["turn"]), str(entry["to"]), _MAX_USES)
    else:
        raise KeyError(kind)


def _state_lines(held: _Channel) -> Iterable[dict[str, Any]]:
    for bullet in held.playbook.bullets:
        yield {"kind": "bullet", "bullet": bullet.model_dump(mode="json")}
    for gone, kept in held.playbook.aliases.items():
        yield {"kind": "alias", "from": gone, "to": kept}
    for turn, to in held.routes.items():
        yield {"kind": "route", "turn": turn, "to": to}
    for turn, ids in held.uses.items():
        yield {"kind": "use", "turn": turn, "ids": list(ids)}
    for key in held.voted:
        yield {"kind": "voted", "key": key}


def _remember(table: OrderedDict[str, Any], key: str, value: Any, limit: int) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > limit:
        table.popitem(last=False)
