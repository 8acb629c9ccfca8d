"""A tiny embedding model for the tests, as an operator would plug one in with
``--playbook-embed tests.support.word_vectors:embed``: words hashed into 64 dimensions, with a few
synonyms folded together, so a paraphrase that shares few words still lands close."""

from __future__ import annotations

import hashlib
import re

_SYNONYMS = {"maintains": "owns", "owner": "owns", "runs": "owns", "pager": "pages",
             "paged": "pages", "alerts": "pages", "goes": "pages", "go": "pages"}  # fmt: skip
_STOP = {"the", "a", "an", "and", "its", "it", "to", "of", "who", "is"}


def embed(texts: list[str]) -> list[list[float]]:
    vectors = []
    for text in texts:
        vector = [0.0] * 64
        for word in re.findall(r"[a-z0-9-]+", text.lower()):
            if word in _STOP:
                continue
            word = _SYNONYMS.get(word, word)
            vector[hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
        vectors.append(vector)
    return vectors


def broken(texts: list[str]) -> list[list[float]]:
    raise RuntimeError("the model is not loaded")
