"""Offline token counting: a fitted estimate of Claude's tokenizers from an earlier public one.

Claude 3's and Claude 4.8's tokenizers are not public, so budgets are planned with an estimate.
An estimate that undercounts can overflow the context window, one that overcounts leaves room
unused. The estimate here is linear in two kinds of counts:

* the pieces Anthropic's earlier *public* tokenizer (``data/claude_tokenizer.json``, run by
  ``tiktoken``) cuts the text into, by class (``_pieces``): a frequent lowercase word, a rare
  one, a capitalised word, a digit group, a Cyrillic fragment ...;
* cheap character-class counts (capitals, digit runs, spaces beside numbers, scripts by UTF-8
  lead byte), counted on the UTF-8 bytes with C-speed ``translate``/``bit_count`` operations.

The weights (``_token_weights.py``, thousandths of a token, non-negative integers) come from a
linear program in ``bench/tokens.py``: minimise the mean estimate / reference ratio subject to
``estimate >= reference`` on every fitting text. The fitting texts are independent of the
project's check set (``tests/data/tokens``), so ``python -m bench.tokens`` and the tests
measure the estimate on texts it was not fitted on (numbers in ``bench/RESULTS.md``).

Concatenation: a piece-based count is *not* exactly subadditive or monotone over prefixes (two
texts joined can merge or re-split pieces at the join). Budgets never rely on it: every packer
re-counts the whole rendered JSON and drops items until it fits. ``tests/test_tokens.py``
bounds the drift at a join.
"""

from __future__ import annotations

from functools import cache
from typing import Final, Literal, Protocol, runtime_checkable

from chanctx.context import _pieces
from chanctx.context._token_weights import WEIGHTS

__all__ = [
    "CHAR_FEATURES",
    "EstimatingCounter",
    "Family",
    "TokenCounter",
    "default_counter",
    "family_for_model",
    "feature_names",
    "features",
]

Family = Literal["claude_v3", "claude_v4_8"]


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


# --- the model id -> tokenizer family rule -------------------------------------------------------


def family_for_model(model: str | None) -> Family:
    """The tokenizer family of an Anthropic model id.

    Rule: Claude 3.x (``claude-3-opus-...``, ``claude-3-5-sonnet-...``, ``claude-3-7-...``) and the
    Claude 4 line up to Opus 4.6 / Sonnet 4.x / Haiku 4.x (``claude-opus-4-0``, ``claude-sonnet-4-5``,
    ``claude-opus-4-6``, ``claude-opus-4-20250514``, ...) use ``"claude_v3"``. Opus 4.7 and later
    4.x, and every generation 5 and up (``claude-opus-4-8``, ``claude-sonnet-5``, ...) use
    ``"claude_v4_8"`` (Opus 4.7 shares that vocabulary; only its fixed frame differs). Anything
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


# --- features ---------------------------------------------------------------------------------


def _table(member: bytes) -> bytes:
    """A ``bytes.translate`` table mapping the bytes in ``member`` to 1 and all others to 0."""
    return bytes(1 if b in member else 0 for b in range(256))


_LETTERS: Final = bytes(range(65, 91)) + bytes(range(97, 123))
_UPPER: Final = bytes(range(65, 91))
_DIGITS: Final = bytes(range(48, 58))
_PUNCT: Final = bytes([*range(33, 48), *range(58, 65), *range(91, 97), *range(123, 127)])
_SPACE: Final = b" \t\n\r\x0b\x0c"
_NON_ASCII: Final = bytes(range(128, 256))

_T_LETTER: Final = _table(_LETTERS)
_T_UPPER: Final = _table(_UPPER)
_T_DIGIT: Final = _table(_DIGITS)
_T_PUNCT: Final = _table(_PUNCT)
_T_SPACE: Final = _table(_SPACE)
_T_NON_ASCII: Final = _table(_NON_ASCII)

# Non-ASCII code points are classed by their UTF-8 lead byte (continuation bytes map to "."), which
# separates scripts with very different costs without decoding: Latin-1 accents (C2-C3), other
# two-byte scripts such as Greek, Cyrillic, Hebrew, Arabic (C4-DF), Indic and South-East Asian
# scripts (E0-E1), symbols and dingbats such as the BMP emoji (E2, less the general punctuation
# block below), CJK, kana and Hangul (E3-ED), private use, variation selectors and full-width forms
# (EE-EF), and astral code points such as most emoji (F0-F4).
_CLASS_OF_LEAD: Final = (
    (b"a", bytes([0xC2, 0xC3])),
    (b"b", bytes(range(0xC4, 0xE0))),
    (b"c", bytes([0xE0, 0xE1])),
    (b"d", bytes([0xE2])),
    (b"e", bytes(range(0xE3, 0xEE))),
    (b"f", bytes([0xEE, 0xEF])),
    (b"g", bytes(range(0xF0, 0x100))),
)


def _class_table() -> bytes:
    table = bytearray(b"." * 256)
    table[10] = ord("n")
    for code, leads in _CLASS_OF_LEAD:
        for lead in leads:
            table[lead] = code[0]
    return bytes(table)


_T_CLASS: Final = _class_table()

# U+2000-U+207F (general punctuation: dashes, curly quotes, ellipsis, ZWJ) starts E2 80 or E2 81;
# it tokenizes like ASCII punctuation, far cheaper than the rest of the E2 block.
_GENERAL_PUNCT: Final = (b"\xe2\x80", b"\xe2\x81")

CHAR_FEATURES: Final = (
    "nonempty",  # 1 for any non-empty text (the per-text constant)
    "letters",  # ASCII letters
    "letter_runs",  # maximal runs of ASCII letters (words, roughly)
    "letter_excess3",  # letters beyond the 3rd of their run: long words split
    "upper",  # ASCII capitals
    "upper_runs",  # runs of capitals
    "upper_excess1",  # capitals beyond the 1st of their run: ALLCAPS, acronyms
    "title_starts",  # capitals not preceded by a letter (a case marker in the tokenizer)
    "digits",
    "digit_runs",  # numbers take no word markers: spaces beside them cost a token
    "punct",  # ASCII punctuation and symbols
    "punct_runs",
    "space",  # ASCII whitespace
    "space_runs",
    "space_excess1",  # whitespace beyond the 1st of its run: indentation, blank lines
    "newlines",
    "non_ascii_runs",
    "general_punct",  # U+2000-U+207F
    "latin1",  # lead C2-C3
    "two_byte",  # lead C4-DF
    "indic",  # lead E0-E1
    "symbols",  # lead E2 except general punctuation
    "cjk",  # lead E3-ED
    "private_fullwidth",  # lead EE-EF
    "astral",  # lead F0-F4
    "space_beside_digit",  # numbers take no word marker: the spaces around them are tokens
    "letter_beside_non_ascii",  # accented words split where the accent is
    "space_before_punct",
    "punct_after_letter",
)


def _runs(mask: int) -> int:
    """Maximal runs of 1-bytes in a big-endian 0/1 byte mask: bytes set whose predecessor is not."""
    return (mask & ~(mask >> 8)).bit_count()


def _char_features(text: str) -> tuple[int, ...]:
    """Character-class counts of ``text``, in the order of ``CHAR_FEATURES``."""
    if not text:
        return (0,) * len(CHAR_FEATURES)
    # Lone surrogates are legal in a str; encode them rather than fail (they cost like CJK).
    data = text.encode("utf-8", "surrogatepass")
    big = int.from_bytes
    letter = big(data.translate(_T_LETTER), "big")
    upper = big(data.translate(_T_UPPER), "big")
    digit = big(data.translate(_T_DIGIT), "big")
    punct = big(data.translate(_T_PUNCT), "big")
    space = big(data.translate(_T_SPACE), "big")
    classes = data.translate(_T_CLASS)
    general_punct = data.count(_GENERAL_PUNCT[0]) + data.count(_GENERAL_PUNCT[1])
    # Pure-ASCII text (most of it) skips the non-ASCII mask.
    non_ascii = 0 if data.isascii() else big(data.translate(_T_NON_ASCII), "big")
    long_letters = letter & (letter >> 8) & (letter >> 16) & (letter >> 24)
    space_beside_digit = (space & (digit >> 8)) | (space & (digit << 8))
    letter_beside_non_ascii = (letter & (non_ascii >> 8)) | (letter & (non_ascii << 8))
    return (
        1,
        letter.bit_count(),
        _runs(letter),
        long_letters.bit_count(),
        upper.bit_count(),
        _runs(upper),
        (upper & (upper >> 8)).bit_count(),
        (upper & ~(letter >> 8)).bit_count(),
        digit.bit_count(),
        _runs(digit),
        punct.bit_count(),
        _runs(punct),
        space.bit_count(),
        _runs(space),
        (space & (space >> 8)).bit_count(),
        classes.count(b"n"),
        _runs(non_ascii),
        general_punct,
        classes.count(b"a"),
        classes.count(b"b"),
        classes.count(b"c"),
        classes.count(b"d") - general_punct,
        classes.count(b"e"),
        classes.count(b"f"),
        classes.count(b"g"),
        space_beside_digit.bit_count(),
        letter_beside_non_ascii.bit_count(),
        (space & (punct >> 8)).bit_count(),
        (punct & (letter >> 8)).bit_count(),
    )


def feature_names() -> tuple[str, ...]:
    """Names of ``features(text)``'s entries: the piece classes (``piece:<class>``), then
    ``CHAR_FEATURES``."""
    return (*(f"piece:{name}" for name in _pieces.classes()), *CHAR_FEATURES)


def features(text: str) -> tuple[int, ...]:
    """The feature vector of ``text`` (``feature_names()`` order); the estimate is linear in it.

    Public for the benchmark, which fits the weights on exactly what the counter computes.
    """
    of_piece = _pieces.piece_classes()
    counts = [0] * len(_pieces.classes())
    for token in _pieces.encoding().encode_ordinary(text):
        counts[of_piece[token]] += 1
    return (*counts, *_char_features(text))


class EstimatingCounter:
    """Offline token estimate for one tokenizer family. Stateless and thread-safe (tiktoken's
    encoder is)."""

    __slots__ = ("_char_weights", "_piece_weights", "family")

    def __init__(self, family: Family, weights: dict[str, int] | None = None) -> None:
        if family not in WEIGHTS:
            raise ValueError(f"unknown tokenizer family {family!r}")
        self.family: Family = family
        chosen = WEIGHTS[family] if weights is None else weights
        unknown = set(chosen) - set(feature_names())
        if unknown or any(not isinstance(w, int) or w < 0 for w in chosen.values()):
            raise ValueError(
                f"weights: non-negative integers by feature name (unknown: {sorted(unknown)})"
            )
        # A weight per token id, so counting the pieces is a sum of look-ups.
        by_class = [chosen.get(f"piece:{n}", 0) for n in _pieces.classes()]
        self._piece_weights = [by_class[c] for c in _pieces.piece_classes()]
        self._char_weights = tuple(chosen.get(n, 0) for n in CHAR_FEATURES)

    def count(self, text: str) -> int:
        if not text:
            return 0
        pieces = _pieces.encoding().encode_ordinary(text)
        total = sum(map(self._piece_weights.__getitem__, pieces))
        total += sum(w * f for w, f in zip(self._char_weights, _char_features(text), strict=True))
        return max(1, -(-total // 1000))  # ceiling division, exact on integers

    def __repr__(self) -> str:
        return f"EstimatingCounter({self.family!r})"


@cache
def _counter(family: Family) -> EstimatingCounter:
    return EstimatingCounter(family)


def default_counter(model: str | None = None) -> TokenCounter:
    """The offline estimator for ``model``'s tokenizer family (the safe v4_8 one when unknown)."""
    return _counter(family_for_model(model))
