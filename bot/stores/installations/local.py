"""Slack OAuth installations on local disk: slack_sdk's own file store, under the data dir."""

from __future__ import annotations

from pathlib import Path

from slack_sdk.oauth.installation_store import FileInstallationStore

__all__ = ["local_installations"]


def local_installations(data_dir: Path, client_id: str) -> FileInstallationStore:
    """Installations in ``<data_dir>/installations``, one folder per workspace."""
    return FileInstallationStore(base_dir=str(data_dir / "installations"), client_id=client_id)
