"""Offline token counting: Claude's tokenizer counts, reconstructed.

Claude 3's and Claude 4.8's tokenizers are not public. ``PieceCounter`` is chanctx's own
implementation of the reconstruction published as ctok 1.3.0 (MIT, Sander Land), whose counts
agree with Anthropic's ``count_tokens`` on its held-out sets:

* ``_stream``/``_charclass``: the text is normalised (NFC, controls dropped, odd spaces folded)
  and rewritten into a marked stream: word-boundary markers around words, case markers in front
  of capitalised and all-caps words (lowercased behind them), border markers on punctuation and
  digits beside spaces, a single space between two words folded into their markers;
* ``_tiling``: the count is the minimum number of measured pieces (``_vocab``, ctok's
  vocabularies in ``data/``) that tile the stream, a character no piece covers costing its
  UTF-8 bytes' tiling. Chunk and segment costs are cached (bounded), which is what makes it fast.
  A whole text of 64 characters or more has its count remembered by ``PieceCounter`` under
  its digest (bounded; no text kept): the query API counts the same blocks on every answer.

It reproduces ctok on every text of the calibration sets (``tests/test_tokens.py``; ratios and
speed in ``bench/RESULTS.md``). Counts are *content* tokens: ``count_tokens`` on a one-message
request minus the message frame. The empty text is 0 (ctok prices it at v3's lone frame marker;
nothing is sent for no text). Python 3.11's Unicode data is 14.0, ctok ran on 15.0: characters
added in Unicode 15 may be counted differently.

Concatenation: a tokenizer count is not subadditive (two texts joined can change the markers at
the join). Budgets never rely on it: every packer re-counts the whole rendered JSON and drops
items until it fits. ``tests/test_tokens.py`` bounds the drift at a separator.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from functools import cache
from typing import Final, Literal, Protocol, runtime_checkable

from chanctx.context._tiling import Tiler
from chanctx.context._vocab import VocabName, vocabulary

__all__ = ["Family", "PieceCounter", "TokenCounter", "default_counter", "family_for_model"]

Family = Literal["claude_v3", "claude_v4_7", "claude_v4_8"]


# Family -> (vocabulary, whether the message frame ends in a word boundary). v4.8 reuses the
# pieces measured on Opus 4.7; its frame ends without the boundary, so a leading space costs.
_VOCABULARIES: Final[dict[Family, tuple[VocabName, bool]]] = {
    "claude_v3": ("v3", True),
    "claude_v4_7": ("v4_7", True),
    "claude_v4_8": ("v4_7", False),
}


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


# --- the model id -> tokenizer family rule -------------------------------------------------------


def family_for_model(model: str | None) -> Family:
    """The tokenizer family of an Anthropic model id.

    Rule: Claude 3.x (``claude-3-opus-...``, ``claude-3-5-sonnet-...``, ``claude-3-7-...``) and the
    Claude 4 line up to Opus 4.6 / Sonnet 4.x / Haiku 4.x (``claude-opus-4-0``, ``claude-sonnet-4-5``,
    ``claude-opus-4-6``, ``claude-opus-4-20250514``, ...) use ``"claude_v3"``. Opus 4.7 uses
    ``"claude_v4_7"``; 4.8 and later 4.x, and every generation 5 and up (``claude-opus-4-8``,
    ``claude-sonnet-5``, ...) use ``"claude_v4_8"`` (the same vocabulary as 4.7; only the fixed
    frame differs: 4.7's ends in a word boundary that takes in a leading space). Anything
    unrecognised, and ``None``, also gets ``"claude_v4_8"``: that family counts about 1.26x the
    tokens of v3 on the same text, so it is the safe default for budgeting.

    Parsing is lenient: case, ``anthropic.``/``us.`` style prefixes, ``@``/``:``/``-v1`` suffixes
    and dates are ignored; the version is read as the first ``major[-minor]`` number pair in the id,
    in either order relative to the tier name (``claude-3-5-sonnet`` and ``claude-sonnet-4-5``).
    """
    if not model:
        return "claude_v4_8"
    version = _model_version(model)
    if version is None:
        return "claude_v4_8"
    major, minor = version
    if major == 3 or (major == 4 and minor <= 6):
        return "claude_v3"
    if (major, minor) == (4, 7):
        return "claude_v4_7"
    return "claude_v4_8"


def _model_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Claude model id, or None when there is no Claude version in it."""
    text = model.lower()
    at = text.find("claude")
    if at < 0:
        return None
    # Split on every separator; keep short numbers only (a date like 20241022 is not a version).
    parts = text[at:].replace("_", "-").replace(".", "-").replace("@", "-").replace(":", "-")
    numbers: list[int | None] = []
    for part in parts.split("-"):
        if part.isdigit() and len(part) <= 2:
            numbers.append(int(part))
        elif part.isdigit() or (part.startswith("v") and part[1:].isdigit()):
            numbers.append(None)  # a date or an API revision ends the version
        else:
            numbers.append(-1)  # a word (tier name): skipped, but breaks a major/minor pair
    for i, number in enumerate(numbers):
        if number is None:
            return None
        if number >= 0:
            following = numbers[i + 1] if i + 1 < len(numbers) else -1
            minor = following if following is not None and following >= 0 else 0
            return number, minor
    return None


# Texts at least this long have their whole count remembered (shorter ones cost little more
# than the lookup), up to ``_COUNTS`` of them, least recently used dropped first.
_LONG_TEXT: Final = 64
_COUNTS: Final = 8192


class _TextCounts:
    """Counts of whole long texts, keyed by a 128-bit digest of the text, never the text: an
    answer re-packs the same blocks (a thread, its JSON fragment) query after query, and a
    message deleted or edited since leaves no text behind here (its old digest is no key any
    text still shown has, and ages out)."""

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> int | None:
        with self._lock:
            found = self._counts.get(key)
            if found is not None:
                self._counts.move_to_end(key)
            return found

    def put(self, key: bytes, count: int) -> None:
        with self._lock:
            self._counts[key] = count
            if len(self._counts) > _COUNTS:
                self._counts.popitem(last=False)

    def __len__(self) -> int:
        return len(self._counts)


class PieceCounter:
    """Claude's token count for one tokenizer family, reconstructed offline (see the module
    docstring). Thread-safe; its caches are bounded."""

    __slots__ = ("_texts", "_tiler", "family")

    def __init__(self, family: Family) -> None:
        if family not in _VOCABULARIES:
            raise ValueError(f"unknown tokenizer family {family!r}")
        self.family: Family = family
        name, frame_bow = _VOCABULARIES[family]
        self._tiler = Tiler(vocabulary(name, frame_bow))
        self._texts = _TextCounts()

    def count(self, text: str) -> int:
        if len(text) < _LONG_TEXT:
            return self._tiler.count(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        found = self._texts.get(key)
        if found is None:
            found = self._tiler.count(text)
            self._texts.put(key, found)
        return found

    def remembered(self) -> int:
        """How many whole texts' counts are remembered (at most ``_COUNTS``)."""
        return len(self._texts)

    def cache_info(self) -> tuple[int, int]:
        """``(entries, maxsize)`` of the segment-cost cache."""
        return self._tiler.cache_info()

    def __repr__(self) -> str:
        return f"PieceCounter({self.family!r})"


@cache
def _counter(family: Family) -> PieceCounter:
    return PieceCounter(family)


def default_counter(model: str | None = None) -> TokenCounter:
    """The offline counter for ``model``'s tokenizer family (the safe v4_8 one when unknown).

    One counter per family for the process: its caches are shared by every caller."""
    return _counter(family_for_model(model))
