"""Votes on answers in the data dir, for one process.

One append-only JSONL file in the data dir (``feedback.jsonl``, each line fsynced): ``answer``
lines tie a posted message (channel, ts) to the turn that produced it, ``vote`` lines record a
person's reaction on one of those messages, or a click on its feedback buttons (the other
button's earlier click is taken back: a person holds one button verdict per answer). The
playbook reads the votes of a turn to credit or blame what was in its context.
A damaged line is skipped with one warning naming the file and line, as in the turn journal.

The store remembers the newest 50,000 answers and the votes of the newest 50,000 voted turns;
when the file holds four times more lines than that state needs, it is rewritten to just that
state (atomically), so a bot that runs for years keeps a file of bounded size.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TextIO

from chanctx.manifest_store.feedback.base import HARMFUL, HELPFUL, Verdict, Vote, verdict_of
from chanctx.manifest_store.jsonl import line_of, rewrite_atomically

__all__ = ["FEEDBACK_FILE", "LocalFeedbackStore"]

logger = logging.getLogger("chanctx.feedback")

FEEDBACK_FILE: Final = "feedback.jsonl"
_MAX_ANSWERS: Final = 50_000  # posted answers remembered for reactions (oldest forgotten)
_MIN_LINES_TO_COMPACT: Final = 256  # below this a rewrite saves too little to be worth it


class LocalFeedbackStore:
    """Answers and the votes on them, durable in ``data_dir``. Thread-safe."""

    def __init__(
        self,
        data_dir: Path | None,
        *,
        clock: Callable[[], float] = time.time,
        helpful: frozenset[str] = HELPFUL,
        harmful: frozenset[str] = HARMFUL,
        max_answers: int = _MAX_ANSWERS,
    ) -> None:
        """``helpful`` / ``harmful``: the reaction names that say so (the operator's choice);
        ``max_answers``: how many posted answers, and voted turns, are remembered."""
        self.path = data_dir / FEEDBACK_FILE if data_dir is not None else None
        self._clock = clock
        self._max_answers = max_answers
        self._helpful, self._harmful = helpful, harmful
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._votes: OrderedDict[str, list[Vote]] = OrderedDict()
        self._handle: TextIO | None = None
        self._lines = 0  # lines in the file, to know when most of them are stale
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn = False
            if self.path.exists():
                self._load(self.path)
                with self.path.open("rb") as raw:
                    raw.seek(0, os.SEEK_END)
                    if raw.tell():
                        raw.seek(-1, os.SEEK_END)
                        torn = raw.read(1) != b"\n"
            self._handle = self.path.open("a", encoding="utf-8")
            if torn:  # a crash mid-line: the next entry must not be glued to it
                self._handle.write("\n")

    def record_answer(self, channel: str, ts: str, turn: str) -> None:
        """A message the bot posted for ``turn``: reactions on it count for that turn."""
        with self._lock:
            self._remember(channel, ts, turn)
            self._write({"op": "answer", "channel": channel, "ts": ts, "turn": turn})

    def turn_of(self, channel: str, ts: str) -> str | None:
        with self._lock:
            return self._answers.get((channel, ts))

    def record_reaction(
        self, channel: str, ts: str, user: str, reaction: str, *, added: bool
    ) -> Vote | None:
        """A reaction on a message: a vote if it is one of our answers and a verdict emoji."""
        verdict = verdict_of(reaction, self._helpful, self._harmful)
        with self._lock:
            turn = self._answers.get((channel, ts))
            if verdict is None or turn is None:
                return None
            vote = Vote(turn, user, verdict, added, f"reaction:{reaction}", self._clock())
            self._apply_vote(vote)
            self._write({"op": "vote", **vote.__dict__})
            return vote

    def record_click(
        self, channel: str, ts: str, user: str, *, helpful: bool, turn: str | None = None
    ) -> Vote | None:
        """A click on an answer's feedback buttons: a vote on its turn (the message's turn, or
        ``turn`` named by the button's block when this store no longer knows the message)."""
        verdict: Verdict = "helpful" if helpful else "harmful"
        other: Verdict = "harmful" if helpful else "helpful"
        with self._lock:
            known = self._answers.get((channel, ts))
            # A turn id names its channel first; a block naming another channel is not believed.
            turn = known or (turn if turn and turn.startswith(f"{channel}:") else None)
            if turn is None:
                return None
            now = self._clock()
            held = self._held_buttons(turn, user)
            if other in held:  # changed their mind: the other button no longer counts
                taken = Vote(turn, user, other, False, f"button:{other}", now)
                self._apply_vote(taken)
                self._write({"op": "vote", **taken.__dict__})
            vote = Vote(turn, user, verdict, True, f"button:{verdict}", now)
            self._apply_vote(vote)
            self._write({"op": "vote", **vote.__dict__})
            return vote

    def votes(self, turn: str) -> list[Vote]:
        with self._lock:
            return list(self._votes.get(turn, []))

    def tally(self, turn: str) -> dict[Verdict, int]:
        """People who currently hold each verdict on ``turn`` (a reaction taken back no longer
        counts; one person counts once per verdict)."""
        with self._lock:
            holding: dict[tuple[str, str], bool] = {}
            for vote in self._votes.get(turn, []):
                holding[(vote.user, vote.verdict)] = vote.added
        counts: dict[Verdict, int] = {"helpful": 0, "harmful": 0}
        for (_, verdict), held in holding.items():
            counts[verdict] += held  # type: ignore[index]
        return counts

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    # -- internals --------------------------------------------------------------------------

    def _remember(self, channel: str, ts: str, turn: str) -> None:
        self._answers[(channel, ts)] = turn
        self._answers.move_to_end((channel, ts))
        while len(self._answers) > self._max_answers:
            self._answers.popitem(last=False)

    def _held_buttons(self, turn: str, user: str) -> set[Verdict]:
        held: dict[Verdict, bool] = {}
        for vote in self._votes.get(turn, []):
            if vote.user == user and vote.source.startswith("button:"):
                held[vote.verdict] = vote.added
        return {verdict for verdict, on in held.items() if on}

    def _apply_vote(self, vote: Vote) -> None:
        self._votes.setdefault(vote.turn, []).append(vote)
        self._votes.move_to_end(vote.turn)
        while len(self._votes) > self._max_answers:  # memory and the file stay bounded
            self._votes.popitem(last=False)

    def _write(self, entry: dict[str, Any]) -> None:
        if self._handle is None:
            return
        self._handle.write(line_of(entry))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._lines += 1
        if self._lines > 4 * max(self._live_lines(), _MIN_LINES_TO_COMPACT):
            self._compact()

    def _live_lines(self) -> int:
        return len(self._answers) + sum(map(len, self._votes.values()))

    def _state_lines(self) -> list[dict[str, Any]]:
        """What the store holds, in an order that loads back into the same state: answers
        oldest first, then each remembered turn's votes in the order they were cast."""
        entries: list[dict[str, Any]] = [
            {"op": "answer", "channel": channel, "ts": ts, "turn": turn}
            for (channel, ts), turn in self._answers.items()
        ]
        entries.extend({"op": "vote", **vote.__dict__} for votes in self._votes.values()
                       for vote in votes)  # fmt: skip
        return entries

    def _compact(self) -> None:
        assert self.path is not None and self._handle is not None
        self._handle.close()
        self._lines = rewrite_atomically(self.path, self._state_lines())
        self._handle = self.path.open("a", encoding="utf-8")

    def _load(self, path: Path) -> None:
        with path.open("rb") as raw:
            for number, line in enumerate(raw, 1):
                self._lines += 1
                try:
                    entry = json.loads(line)
                    if entry["op"] == "answer":
                        self._remember(str(entry["channel"]), str(entry["ts"]), str(entry["turn"]))
                    elif entry["op"] == "vote":
                        fields = {k: entry[k] for k in Vote.__dataclass_fields__}
                        if fields["verdict"] not in ("helpful", "harmful"):
                            raise ValueError(fields["verdict"])
                        self._apply_vote(Vote(**fields))
                    else:
                        raise KeyError(entry["op"])
                except (ValueError, KeyError, TypeError, AttributeError):
                    logger.warning("%s:%d: skipped an unreadable line", path, number)
