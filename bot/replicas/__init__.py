"""Floor 2, replicas: state several replicas of one bot share in Redis (``--redis-url``).

``changes`` / ``feed`` (the change stream every replica's channel state is fed from),
``turn_queue`` (taking turns from the shared queue) and ``replicas`` (the pieces wired for the
runtime). The Redis connection and the bot's stores with Redis backends are in ``bot/stores``;
the turn store and session logs live in ``manifest_store`` with their local twins.
"""

from __future__ import annotations

__all__: list[str] = []
