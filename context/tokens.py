"""Offline token counting: a calibrated, never-undercounting estimate of Claude's tokenizer.

Claude's tokenizer is not public, so budgets are planned with an estimate. An estimate that
undercounts can overflow the context window, one that overcounts only leaves room unused, so the
estimator here is an *upper envelope*: a weighted sum of cheap character-class features, with
weights fitted so that ``estimate / reference >= 1`` on the calibration set
(``shared/benchdata/tokens/calibration.jsonl``) with a margin. ``python -m bench.tokens`` measures
it (per category: median, worst 1%, minimum) and refits the weights (``--fit``).

The features are counted on the UTF-8 bytes with a handful of C-speed operations (``translate``,
``count``, big-integer shifts and ``bit_count``), no per-character Python loop, so throughput is
tens of MB/s in pure Python.

Two properties hold *by construction* (and are property-tested), because budgets in this project
are summed piece by piece over JSON fragments:

* monotone over prefixes: ``count(t[:i]) <= count(t)``;
* subadditive: ``count(a + b) <= count(a) + count(b)``.

Every feature is a count of characters of a class, of maximal runs of a class, or of "excess"
characters beyond the first ``k`` of a run. Character counts are additive and run counts can only
drop when two texts are joined. An excess count can grow at the join, so its weight is bounded by
the weight of its run count (``k * w_excess <= w_runs``): per run the cost ``f(l)`` then satisfies
``f(l) / l`` non-increasing, which makes ``f`` subadditive. All weights are non-negative integers
(thousandths of a token) and the sum is rounded up once, so the arithmetic is exact.
"""

from __future__ import annotations

from functools import cache
from typing import Final, Literal, Protocol, runtime_checkable

__all__ = [
    "FAMILIES",
    "FEATURES",
    "EstimatingCounter",
    "Family",
    "TokenCounter",
    "default_counter",
    "family_for_model",
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


# --- features ------------------------------------------------------------------------------------


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

FEATURES: Final = (
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
)

# Excess features and the run feature whose weight bounds theirs: (excess index, k, runs index).
FAMILIES: Final = (
    (FEATURES.index("letter_excess3"), 3, FEATURES.index("letter_runs")),
    (FEATURES.index("upper_excess1"), 1, FEATURES.index("upper_runs")),
    (FEATURES.index("space_excess1"), 1, FEATURES.index("space_runs")),
)


def _runs(mask: int) -> int:
    """Maximal runs of 1-bytes in a big-endian 0/1 byte mask: bytes set whose predecessor is not."""
    return (mask & ~(mask >> 8)).bit_count()


def features(text: str) -> tuple[int, ...]:
    """The feature vector of ``text``, in the order of ``FEATURES``.

    Public for the benchmark, which fits the weights on exactly what the counter computes.
    """
    if not text:
        return (0,) * len(FEATURES)
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
    )


# --- weights -------------------------------------------------------------------------------------

# Thousandths of a token per feature, in the order of FEATURES. Obtained with
# `python -m bench.tokens --fit`: a linear program over the 888 calibration texts minimising the
# mean estimate/reference ratio subject to estimate >= 1.05 x reference for every text, the family
# bounds above, and structural floors for classes the calibration set barely covers (see
# bench/tokens.py). Rounded up to the thousandth.
_WEIGHTS: Final[dict[Family, dict[str, int]]] = {
    "claude_v3": {
        "nonempty": 1000,
        "letters": 119,
        "letter_runs": 130,
        "letter_excess3": 0,
        "upper": 266,
        "upper_runs": 1,
        "upper_excess1": 1,
        "title_starts": 0,
        "digits": 500,
        "digit_runs": 900,
        "punct": 183,
        "punct_runs": 1083,
        "space": 205,
        "space_runs": 385,
        "space_excess1": 1,
        "newlines": 957,
        "non_ascii_runs": 1001,
        "general_punct": 1,
        "latin1": 2836,
        "two_byte": 900,
        "indic": 1300,
        "symbols": 3020,
        "cjk": 1450,
        "private_fullwidth": 2440,
        "astral": 3501,
    },
    "claude_v4_8": {
        "nonempty": 1000,
        "letters": 110,
        "letter_runs": 849,
        "letter_excess3": 283,
        "upper": 143,
        "upper_runs": 301,
        "upper_excess1": 301,
        "title_starts": 1,
        "digits": 340,
        "digit_runs": 900,
        "punct": 436,
        "punct_runs": 1185,
        "space": 55,
        "space_runs": 1,
        "space_excess1": 1,
        "newlines": 238,
        "non_ascii_runs": 1001,
        "general_punct": 1,
        "latin1": 1601,
        "two_byte": 900,
        "indic": 1301,
        "symbols": 2729,
        "cjk": 1450,
        "private_fullwidth": 4043,
        "astral": 3370,
    },
}


class EstimatingCounter:
    """Offline upper-envelope token estimate for one tokenizer family. Stateless, thread-safe."""

    __slots__ = ("_weights", "family")

    def __init__(self, family: Family, weights: tuple[int, ...] | None = None) -> None:
        if family not in _WEIGHTS:
            raise ValueError(f"unknown tokenizer family {family!r}")
        self.family: Family = family
        chosen = tuple(_WEIGHTS[family][name] for name in FEATURES) if weights is None else weights
        if len(chosen) != len(FEATURES) or min(chosen) < 0:
            raise ValueError("weights: one non-negative integer per feature")
        self._weights = chosen

    def count(self, text: str) -> int:
        if not text:
            return 0
        total = sum(w * f for w, f in zip(self._weights, features(text), strict=True))
        return -(-total // 1000)  # ceiling division, exact on integers

    def __repr__(self) -> str:
        return f"EstimatingCounter({self.family!r})"


@cache
def _counter(family: Family) -> EstimatingCounter:
    return EstimatingCounter(family)


def default_counter(model: str | None = None) -> TokenCounter:
    """The offline estimator for ``model``'s tokenizer family (the safe v4_8 one when unknown)."""
    return _counter(family_for_model(model))
