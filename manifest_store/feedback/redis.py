"""Votes on answers in Redis: the answer may be posted by one replica and reacted to (or its
feedback button clicked) through another.

    chanctx:<team>:feedback:answer:<channel>:<ts>   the turn a posted message answered
    chanctx:<team>:feedback:votes:<turn>            list of votes (JSON), oldest first

Both are kept 90 days from their last write (the local store keeps the newest 50,000 answers).
The rules are the local store's: the reactions the operator chose, a reaction taken back no
longer counts, the other button replaces a person's earlier click.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final

from chanctx.manifest_store.feedback.base import HARMFUL, HELPFUL, Verdict, Vote, verdict_of
from chanctx.manifest_store.feedback.local import LocalFeedbackStore
from chanctx.manifest_store.redis_connection import guarded, namespace

__all__ = ["RedisFeedbackStore"]

_KEEP: Final = 90 * 86_400


class RedisFeedbackStore(LocalFeedbackStore):
    def __init__(
        self,
        client: Any,
        team: str,
        *,
        clock: Callable[[], float] = time.time,
        helpful: frozenset[str] = HELPFUL,
        harmful: frozenset[str] = HARMFUL,
    ) -> None:
        super().__init__(None, clock=clock, helpful=helpful, harmful=harmful)
        self._client = client
        self._prefix = namespace(team) + "feedback:"

    def record_answer(self, channel: str, ts: str, turn: str) -> None:
        with guarded("remember a posted answer"):
            self._client.set(f"{self._prefix}answer:{channel}:{ts}", turn, ex=_KEEP)

    def turn_of(self, channel: str, ts: str) -> str | None:
        with guarded("look up a posted answer"):
            raw = self._client.get(f"{self._prefix}answer:{channel}:{ts}")
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    def record_reaction(
        self, channel: str, ts: str, user: str, reaction: str, *, added: bool
    ) -> Vote | None:
        verdict = verdict_of(reaction, self._helpful, self._harmful)
        if verdict is None:
            return None
        turn = self.turn_of(channel, ts)
        if turn is None:
            return None
        vote = Vote(turn, user, verdict, added, f"reaction:{reaction}", self._clock())
        self._push(vote)
        return vote

    def record_click(
        self, channel: str, ts: str, user: str, *, helpful: bool, turn: str | None = None
    ) -> Vote | None:
        verdict: Verdict = "helpful" if helpful else "harmful"
        other: Verdict = "harmful" if helpful else "helpful"
        # A turn id names its channel first; a block naming another channel is not believed.
        turn = self.turn_of(channel, ts) or (
            turn if turn and turn.startswith(f"{channel}:") else None
        )
        if turn is None:
            return None
        now = self._clock()
        held = {v.verdict: v.added for v in self.votes(turn)
                if v.user == user and v.source.startswith("button:")}  # fmt: skip
        if held.get(other):  # changed their mind: the other button no longer counts
            self._push(Vote(turn, user, other, False, f"button:{other}", now))
        vote = Vote(turn, user, verdict, True, f"button:{verdict}", now)
        self._push(vote)
        return vote

    def votes(self, turn: str) -> list[Vote]:
        with guarded("read votes"):
            rows = self._client.lrange(f"{self._prefix}votes:{turn}", 0, -1)
        found: list[Vote] = []
        for raw in rows:
            entry = json.loads(raw)
            if entry.get("verdict") in ("helpful", "harmful"):
                found.append(Vote(**{k: entry[k] for k in Vote.__dataclass_fields__}))
        return found

    def tally(self, turn: str) -> dict[Verdict, int]:
        holding: dict[tuple[str, Verdict], bool] = {}
        for vote in self.votes(turn):
            holding[(vote.user, vote.verdict)] = vote.added
        counts: dict[Verdict, int] = {"helpful": 0, "harmful": 0}
        for (_, verdict), held in holding.items():
            counts[verdict] += held
        return counts

    def _push(self, vote: Vote) -> None:
        key = f"{self._prefix}votes:{vote.turn}"
        with guarded("record a vote"):
            pipe = self._client.pipeline(transaction=True)
            pipe.rpush(key, json.dumps(vote.__dict__, sort_keys=True))
            pipe.expire(key, _KEEP)
            pipe.execute()
