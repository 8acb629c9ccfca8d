"""The running bot's side of ``chanctx forget``: its admin token file and what a forget reaches.

``admin.json`` in the data dir holds the admin route's address and a random bearer token; it is
created with mode 0600 (only the bot's user reads it, as with the rest of the data dir) before
the server starts, and removed when it stops. ``chanctx forget`` reads it only when the channel
store's writer lock says a bot is running, so a file left by a killed bot is never trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from chanctx.bot.claude.session import ClaudeResponder
from chanctx.bot.core.channel_record import OpenStore
from chanctx.bot.core.forgetting import Expiring, Forgetting, Redactable, RedactingStore
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.events.workspaces import Workspaces
from chanctx.bot.launch.options import Options
from chanctx.manifest_store import PLAYBOOK_DIR, LocalPlaybookStore, SessionStore, TurnJournal
from chanctx.manifest_store.redaction import RedactionCount, Redactor
from chanctx.manifest_store.sessions import RedisSessionStore
from chanctx.manifest_store.turns.local import FILE_NAME as TURNS_FILE
from pydantic import BaseModel

__all__ = [
    "ADMIN_FILE",
    "AdminFile",
    "expire_sessions",
    "forgetting_for",
    "forgetting_for_teams",
    "read_admin_file",
    "remove_admin_file",
    "write_admin_file",
    "writers_of",
]

ADMIN_FILE: Final = "admin.json"
# Files the bot's writers hold open or rewrite themselves: redacted by their owner (or
# holding no message text: feedback and the assistant pane's threads), never by the walk.
_HELD: Final = ("feedback.jsonl", "assistant_threads.jsonl", ADMIN_FILE)


class AdminFile(BaseModel):
    url: str
    token: str
    pid: int


def write_admin_file(data_dir: Path, host: str, port: int) -> AdminFile:
    """Draw a token and write ``admin.json`` (0600, atomically); the route uses the token."""
    shown = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    if ":" in shown:
        shown = f"[{shown}]"
    admin = AdminFile(
        url=f"http://{shown}:{port}", token=secrets.token_urlsafe(32), pid=os.getpid()
    )
    path = data_dir / ADMIN_FILE
    temporary = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(admin.model_dump_json())
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    return admin


def remove_admin_file(data_dir: Path, admin: AdminFile) -> None:
    """Remove ``admin.json`` if it is still ours (a later start may have replaced it)."""
    path = data_dir / ADMIN_FILE
    with contextlib.suppress(OSError, ValueError):
        if read_admin_file(data_dir) == admin:
            path.unlink()


def read_admin_file(data_dir: Path) -> AdminFile:
    """The running bot's address and token; OSError or ValueError when unreadable."""
    return AdminFile.model_validate(json.loads((data_dir / ADMIN_FILE).read_text()))


def writers_of(runtime: Runtime, data_dir: Path) -> tuple[list[Redactable], Callable[[Path], bool]]:
    """The running writers of ``data_dir`` that redact their own files, and which files those
    are (the tree walk must leave them to their owner)."""
    owners: list[Redactable] = []
    held_files: set[str] = set(_HELD)
    held_dirs: set[str] = set()
    turns = runtime.turns
    if isinstance(turns, TurnJournal):
        owners.append(turns)
        held_files.add(TURNS_FILE)
    playbooks = runtime.playbooks.store if runtime.playbooks is not None else None
    if isinstance(playbooks, LocalPlaybookStore):
        owners.append(playbooks)
        held_dirs.add(PLAYBOOK_DIR)
    responder = runtime.responder
    if isinstance(responder, ClaudeResponder) and isinstance(responder.store, SessionStore):
        owners.append(responder.store)
        held_dirs.add(responder.store.directory.name)
    elif isinstance(responder, ClaudeResponder) and isinstance(
        responder.store, RedisSessionStore
    ):  # the sessions every replica shares: no file here, the lists in Redis
        owners.append(responder.store)
    root = data_dir.resolve()

    def held(path: Path) -> bool:
        try:
            parts = path.resolve().relative_to(root).parts
        except ValueError:  # not under this runtime's folder
            return False
        return (len(parts) == 1 and parts[0] in held_files) or (
            len(parts) > 1 and parts[0] in held_dirs
        )

    return owners, held


def forgetting_for(runtime: Runtime, channels: OpenStore, data_dir: Path) -> Forgetting:
    """What a forget reaches in this process: the store (through its committer), the
    engine's caches, and the files of the data dir (each writer redacts its own)."""
    owners, held = writers_of(runtime, data_dir)

    def drop_cached(team: str, channel: str, ts: Sequence[str]) -> None:
        if team == runtime.team_id:
            runtime.engine.drop_cached(channel, ts)

    return _wired(Forgetting(channels, data_dir, drop_cached=drop_cached, owners=owners, held=held))


class _Teams:
    """Every workspace running in an ``--oauth`` process, as one writer of the data dir."""

    def __init__(self, workspaces: Workspaces) -> None:
        self.workspaces = workspaces

    def _writers(self) -> list[tuple[list[Redactable], Callable[[Path], bool]]]:
        found = []
        for team in self.workspaces.teams():
            runtime = self.workspaces.runtime_for(team)
            if runtime is not None:
                found.append(writers_of(runtime, self.workspaces.team_dir(team)))
        return found

    def redact(self, redactor: Redactor) -> RedactionCount:
        count = RedactionCount()
        for owners, _ in self._writers():
            for owner in owners:
                done = owner.redact(redactor)
                if isinstance(done, RedactionCount):
                    count.add(done)
        return count

    def held(self, path: Path) -> bool:
        return any(held(path) for _, held in self._writers())

    def expire(self, before: float) -> int:
        return sum(
            owner.expire(before)
            for owners, _ in self._writers()
            for owner in owners
            if isinstance(owner, Expiring)
        )

    def drop_cached(self, team: str, channel: str, ts: Sequence[str]) -> None:
        if team in self.workspaces.teams():
            runtime = self.workspaces.runtime_for(team)
            if runtime is not None:
                runtime.engine.drop_cached(channel, ts)


def forgetting_for_teams(workspaces: Workspaces, channels: OpenStore, data_dir: Path) -> Forgetting:
    """``forgetting_for`` of an ``--oauth`` process: every running workspace's caches and
    files (each under ``teams/<team>/``), one store."""
    teams = _Teams(workspaces)
    return _wired(
        Forgetting(
            channels, data_dir, drop_cached=teams.drop_cached, owners=[teams], held=teams.held
        )
    )


def _wired(forgetting: Forgetting) -> Forgetting:
    """Live deletions and edits redact through ``forgetting`` too."""
    if isinstance(forgetting.opened, RedactingStore):
        forgetting.opened.on_erased = forgetting.redact_later
    return forgetting


def expire_sessions(forgetting: Forgetting, options: Options) -> None:
    """With ``--retention-days``: session logs idle that long go, at start and every
    ``--purge-interval``, as the store's purge takes the messages they quote."""
    if options.retention_days is not None:
        forgetting.start_expiry(options.retention_days, options.purge_interval)
