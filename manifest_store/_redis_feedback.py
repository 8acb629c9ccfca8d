"""Reactions on answers in Redis: the answer may be posted by one replica and reacted to
through another.

    chanctx:<team>:feedback:answer:<channel>:<ts>   the turn a posted message answered
    chanctx:<team>:feedback:votes:<turn>            list of votes (JSON), oldest first

Both are kept 90 days from their last write (the local store keeps the newest 50,000 answers).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final

from chanctx.manifest_store._feedback import FeedbackStore, Verdict, Vote, verdict_of
from chanctx.manifest_store._redis import guarded, namespace

__all__ = ["RedisFeedbackStore"]

_KEEP: Final = 90 * 86_400


class RedisFeedbackStore(FeedbackStore):
    def __init__(self, client: Any, team: str, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(None, clock=clock)
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
        verdict = verdict_of(reaction)
        if verdict is None:
            return None
        turn = self.turn_of(channel, ts)
        if turn is None:
            return None
        vote = Vote(turn, user, verdict, added, f"reaction:{reaction}", self._clock())
        key = f"{self._prefix}votes:{turn}"
        with guarded("record a vote"):
            pipe = self._client.pipeline(transaction=True)
            pipe.rpush(key, json.dumps(vote.__dict__, sort_keys=True))
            pipe.expire(key, _KEEP)
            pipe.execute()
        return vote

    def tally(self, turn: str) -> dict[Verdict, int]:
        with guarded("count votes"):
            rows = self._client.lrange(f"{self._prefix}votes:{turn}", 0, -1)
        holding: dict[tuple[str, Verdict], bool] = {}
        for raw in rows:
            vote = json.loads(raw)
            verdict = verdict_of(str(vote["source"]).removeprefix("reaction:"))
            if verdict is not None:
                holding[(str(vote["user"]), verdict)] = bool(vote["added"])
        counts: dict[Verdict, int] = {"helpful": 0, "harmful": 0}
        for (_, verdict), held in holding.items():
            counts[verdict] += held
        return counts
