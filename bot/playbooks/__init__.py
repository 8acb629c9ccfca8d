"""Floor 1, playbooks: a channel's learned playbook (reading, feedback, learning after an
answer), its two curators (offline and Claude) and the ``chanctx playbook`` command."""

from __future__ import annotations

__all__: list[str] = []
