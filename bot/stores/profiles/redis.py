"""Agent profiles in Redis, so every replica's query API serves the same ones.

One hash, ``chanctx:<team>:profiles`` (name -> the profile's JSON): a write is one HSET, so a
profile is replaced whole or not at all. Same interface as the local store; a Redis
outage raises StoreUnavailable, which the server answers 503.
"""

from __future__ import annotations

import logging
from typing import Any

from chanctx.bot.stores.profiles.store import MAX_PROFILES, AgentProfile, ProfileStore
from chanctx.manifest_store import guarded, namespace
from pydantic import ValidationError

__all__ = ["RedisProfileStore"]

logger = logging.getLogger("chanctx.profiles")

# KEYS: the hash. ARGV: name, JSON, limit. 1 replaced, 0 added, -1 full.
_PUT = """
local replaced = redis.call('HEXISTS', KEYS[1], ARGV[1])
if replaced == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return replaced
"""


class RedisProfileStore(ProfileStore):
    def __init__(self, client: Any, team: str) -> None:
        self._client = client
        self.key = namespace(team) + "profiles"
        self._put = client.register_script(_PUT)

    def _parse(self, raw: Any) -> AgentProfile | None:
        try:
            return AgentProfile.model_validate_json(raw)
        except ValidationError:
            logger.warning("%s: a stored profile is not valid and was skipped", self.key)
            return None

    def get(self, name: str) -> AgentProfile | None:
        with guarded("read a profile"):
            raw = self._client.hget(self.key, name)
        return None if raw is None else self._parse(raw)

    def all(self) -> list[AgentProfile]:
        with guarded("list profiles"):
            rows = self._client.hvals(self.key)
        found = (self._parse(raw) for raw in rows)
        return sorted((p for p in found if p is not None), key=lambda p: p.name)

    def put(self, profile: AgentProfile) -> bool:
        with guarded("store a profile"):
            answer = int(
                self._put(
                    keys=[self.key],
                    args=[profile.name, profile.model_dump_json(), MAX_PROFILES],
                )
            )
        if answer < 0:
            raise ValueError(f"at most {MAX_PROFILES} profiles")
        return answer == 1

    def delete(self, name: str) -> bool:
        with guarded("delete a profile"):
            return bool(self._client.hdel(self.key, name))
