"""Many workspaces (``run --http --oauth``): one runtime per installed team, nothing shared.

Each team gets its own runtime, built on its first request from its installation (the bot
token in the installation store) and kept in its own data directory, ``<data>/teams/<team id>/``:
its turn journal, session logs, feedback, assistant-pane threads, and in memory its history,
thread and starter caches, membership cache and poster. Keyed by team by construction: no
structure is shared, so nothing of one workspace can reach another's answers.

Uninstalling (``app_uninstalled``, or ``tokens_revoked`` naming the bot's token) stops that
team's runtime, deletes its data directory and its installation. At start, teams with a data
directory are brought up at once so their unfinished answers are finished (recovery).

The installation store is one seam: slack_sdk's file store in ``<data>/installations`` by
default, any ``InstallationStore`` (a Redis one for replicas) otherwise.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from chanctx.bot.core.runtime import Runtime
from slack_bolt import App, BoltContext
from slack_sdk import WebClient
from slack_sdk.oauth.installation_store import InstallationStore

__all__ = ["Workspaces", "register_uninstall"]

logger = logging.getLogger("chanctx.workspaces")
# A team id as Slack writes it; anything else never names a directory (no path tricks).
_TEAM: Final = re.compile(r"[TE][A-Z0-9]{2,30}")

# (team id, its client, its data directory) -> the team's runtime
BuildRuntime = Callable[[str, WebClient, Path], Runtime]


class Workspaces:
    def __init__(
        self,
        store: InstallationStore,
        build: BuildRuntime,
        *,
        data_dir: Path,
        api_url: str,
        grace: float = 1.5,
        recover_in_background: bool = True,
    ) -> None:
        self.store = store
        self._build = build
        self._root = data_dir / "teams"
        self._api_url = api_url
        self._grace = grace
        self._background = recover_in_background
        self._lock = threading.Lock()
        self._runtimes: dict[str, Runtime] = {}

    def team_dir(self, team: str) -> Path:
        if not _TEAM.fullmatch(team):
            raise ValueError(f"not a Slack team id: {team[:40]!r}")
        return self._root / team

    def teams(self) -> list[str]:
        with self._lock:
            return sorted(self._runtimes)

    def running(self, team: str | None) -> Runtime | None:
        """The team's runtime if it is running here; never builds one (never blocks)."""
        if team is None:
            return None
        with self._lock:
            return self._runtimes.get(team)

    def runtime_for(self, team: str | None) -> Runtime | None:
        """The team's runtime, built on first use; None if it is not installed here."""
        if team is None or not _TEAM.fullmatch(team):
            return None
        with self._lock:
            runtime = self._runtimes.get(team)
            if runtime is not None:
                return runtime
            bot = self.store.find_bot(enterprise_id=None, team_id=team)
            if bot is None or not bot.bot_token:
                return None
            client = WebClient(token=bot.bot_token, base_url=self._api_url)
            try:
                runtime = self._build(team, client, self.team_dir(team))
            except Exception as error:  # a revoked token, Slack down: try again next request
                logger.warning("could not start team %s: %s", team, error)
                return None
            self._runtimes[team] = runtime
        self._recover(team, runtime)
        return runtime

    def start(self) -> int:
        """Bring up every team with a data directory, finishing what it left; how many."""
        if not self._root.is_dir():
            return 0
        started = 0
        for path in sorted(self._root.iterdir()):
            if path.is_dir() and self.runtime_for(path.name) is not None:
                started += 1
        return started

    def uninstall(self, team: str) -> bool:
        """Forget a team: stop its runtime, delete its data and its installation."""
        if not _TEAM.fullmatch(team):
            return False
        with self._lock:
            runtime = self._runtimes.pop(team, None)
        if runtime is not None:
            if runtime.engine.record is not None:  # the shared channel store forgets it too
                try:
                    runtime.engine.record.forget_team()
                except OSError as error:
                    logger.warning("team %s: its stored channels stay: %s", team, error)
            if runtime.runner.stop(self._grace):
                runtime.close_stores()
            else:
                logger.warning("team %s uninstalled with answers in flight; they are dropped", team)
        shutil.rmtree(self.team_dir(team), ignore_errors=True)
        self.store.delete_all(enterprise_id=None, team_id=team)
        logger.info("team %s uninstalled: its data is deleted", team)
        return runtime is not None

    def close(self) -> bool:
        """Stop every team's runtime; True if none had answers still running."""
        with self._lock:
            runtimes = list(self._runtimes.values())
        clean = True
        for runtime in runtimes:
            if runtime.runner.stop(self._grace):
                runtime.close_stores()
            else:
                clean = False
        return clean

    def _recover(self, team: str, runtime: Runtime) -> None:
        def recover() -> None:
            try:
                runtime.recover()
            except Exception:
                logger.exception("recovery failed for team %s", team)

        if self._background:
            threading.Thread(target=recover, name=f"chanctx-recover-{team}", daemon=True).start()
        else:
            recover()


def register_uninstall(app: App, workspaces: Workspaces) -> None:
    """``app_uninstalled`` and ``tokens_revoked`` (the bot's) delete the team's data."""

    @app.event("app_uninstalled")
    def on_uninstalled(context: BoltContext) -> None:
        if context.team_id:
            workspaces.uninstall(str(context.team_id))

    @app.event("tokens_revoked")
    def on_revoked(event: dict[str, Any], context: BoltContext) -> None:
        tokens = event.get("tokens") if isinstance(event.get("tokens"), dict) else {}
        if context.team_id and (tokens or {}).get("bot"):
            workspaces.uninstall(str(context.team_id))
