"""An embedding model for the playbook's near-duplicate merge, when the operator installs one.

``--playbook-embed MODULE:FUNCTION`` names a function that takes a list of texts and returns one
vector each (a list of floats): a few lines around any local model, e.g. sentence-transformers:

    # my_embed.py, next to the bot
    from sentence_transformers import SentenceTransformer
    _model = SentenceTransformer("all-MiniLM-L6-v2")
    def embed(texts): return _model.encode(texts).tolist()

Two bullets are then alike when their vectors' cosine is at least 0.85 (the playbook's merge threshold),
instead of by word overlap; naming different things (identifiers, commands) still keeps them
apart. Vectors are cached by text (the newest 10,000). A failing model merges nothing (logged
once), it never stops an answer.
"""

from __future__ import annotations

import importlib
import logging
import math
import threading
from collections.abc import Callable, Sequence
from typing import Final

from cachetools import LRUCache
from chanctx.context import ChanctxError

__all__ = ["EmbeddingSimilarity", "load_embed"]

logger = logging.getLogger("chanctx.playbook")

Embed = Callable[[list[str]], Sequence[Sequence[float]]]
_CACHED: Final = 10_000


class EmbeddingError(ChanctxError):
    """The embedding function named by the operator cannot be loaded."""


def load_embed(spec: str) -> Embed:
    """The function ``MODULE:FUNCTION`` names; EmbeddingError saying what is wrong."""
    module_name, _, function = spec.partition(":")
    if not module_name or not function:
        raise EmbeddingError(f"--playbook-embed {spec!r}: expected MODULE:FUNCTION")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise EmbeddingError(
            f"--playbook-embed {spec!r}: cannot import {module_name} ({error})"
        ) from None
    found = getattr(module, function, None)
    if not callable(found):
        raise EmbeddingError(f"--playbook-embed {spec!r}: {module_name} has no function {function}")
    return found  # type: ignore[no-any-return]


class EmbeddingSimilarity:
    """``similar(a, b)``: the cosine of the two texts' vectors."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._vectors: LRUCache[str, tuple[float, ...]] = LRUCache(maxsize=_CACHED)
        self._lock = threading.Lock()
        self._failed = False

    def __call__(self, a: str, b: str) -> float:
        vectors = self._vectors_of([a, b])
        if vectors is None:
            return 0.0
        left, right = vectors
        return sum(x * y for x, y in zip(left, right, strict=True))

    def _vectors_of(self, texts: list[str]) -> list[tuple[float, ...]] | None:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            try:
                made = [_unit(v) for v in self._embed(missing)]
                if len(made) != len(missing) or len({len(v) for v in made}) > 1:
                    raise ValueError("one vector of one size per text was expected")
            except Exception as error:  # the operator's model: merge nothing, say it once
                if not self._failed:
                    logger.warning("the playbook's embedding model failed: %s", error)
                    self._failed = True
                return None
            with self._lock:
                self._vectors.update(zip(missing, made, strict=True))
        with self._lock:
            found = [self._vectors.get(t) for t in texts]
        return None if any(v is None for v in found) else [v for v in found if v is not None]


def _unit(vector: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(float(x) * float(x) for x in vector)) or 1.0
    return tuple(float(x) / norm for x in vector)
