"""Floor 4, launching: the options and settings of a run, and wiring the pieces for one
workspace (``one_workspace``) or every workspace that installs the app (``oauth_workspaces``)."""

from __future__ import annotations

__all__: list[str] = []
