"""Agent profiles on local disk: kept in ``<data dir>/profiles.json``, rewritten whole on each change (write to a temporary file,
fsync, rename), so a crash leaves the old file or the new one, never half of either.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from chanctx.bot.stores.profiles.store import MAX_PROFILES, AgentProfile, ProfileStore
from pydantic import ValidationError

__all__ = ["LocalProfileStore"]

logger = logging.getLogger("chanctx.profiles")
FILE_NAME = "profiles.json"


class LocalProfileStore(ProfileStore):
    """Profiles by name, durable in ``data_dir`` (in memory when it is None). Thread-safe."""

    def __init__(self, data_dir: Path | None) -> None:
        self.path = data_dir / FILE_NAME if data_dir is not None else None
        self._lock = threading.Lock()
        self._profiles: dict[str, AgentProfile] = {}
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def get(self, name: str) -> AgentProfile | None:
        with self._lock:
            return self._profiles.get(name)

    def all(self) -> list[AgentProfile]:
        with self._lock:
            return sorted(self._profiles.values(), key=lambda p: p.name)

    def put(self, profile: AgentProfile) -> bool:
        """Store ``profile``; True if it replaced one of the same name. ValueError when full."""
        with self._lock:
            replaced = profile.name in self._profiles
            if not replaced and len(self._profiles) >= MAX_PROFILES:
                raise ValueError(f"at most {MAX_PROFILES} profiles")
            self._profiles[profile.name] = profile
            self._save()
            return replaced

    def delete(self, name: str) -> bool:
        with self._lock:
            if self._profiles.pop(name, None) is None:
                return False
            self._save()
            return True

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = self.path.with_suffix(".tmp")
        data = [p.model_dump() for p in sorted(self._profiles.values(), key=lambda p: p.name)]
        with fresh.open("w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        fresh.replace(self.path)

    def _load(self, path: Path) -> None:
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            logger.warning("%s: unreadable, starting with no profiles (%s)", path, error)
            return
        for number, row in enumerate(rows if isinstance(rows, list) else [], 1):
            try:
                profile = AgentProfile.model_validate(row)
            except ValidationError:
                logger.warning("%s: profile %d skipped, it is not valid", path, number)
                continue
            self._profiles[profile.name] = profile
