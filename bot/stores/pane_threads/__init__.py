"""Assistant pane threads: which channel the user was viewing when a pane thread started."""

from __future__ import annotations

__all__: list[str] = []
