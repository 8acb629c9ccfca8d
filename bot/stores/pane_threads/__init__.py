"""Assistant pane threads: which channel the user was viewing when a pane thread started.
``store``: the interface; ``local``: a JSONL file in the data dir; ``redis``: one hash a thread,
shared by replicas."""

from __future__ import annotations

from chanctx.bot.stores.pane_threads.store import PaneThreads

__all__ = ["PaneThreads"]
