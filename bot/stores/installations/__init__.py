"""Slack OAuth installations: each workspace's bot token. The interface is slack_sdk's
``InstallationStore``; ``local``: slack_sdk's file store in the data dir; ``redis``: keys per
workspace, shared by replicas."""

from __future__ import annotations

from slack_sdk.oauth.installation_store import InstallationStore

__all__ = ["InstallationStore"]
