"""Where benchmarks find large external data: ``--data DIR`` or ``CHANCTX_BENCHDATA``, else
``../shared/benchdata`` beside the checkout. Tests never read it."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "benchdata"


def benchdata(given: str | None = None) -> Path:
    return Path(given or os.environ.get("CHANCTX_BENCHDATA") or DEFAULT)
