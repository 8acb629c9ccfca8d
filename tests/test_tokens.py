"""The offline token estimator: safety bars on the calibration set, and the algebra budgets need.

The calibration set lives in shared/ beside the repository (CI clones the repo with shared/ next
to it). It is required: a missing file fails the suite rather than skipping the safety bars.
"""

from __future__ import annotations

import json
import statistics
from functools import cache
from pathlib import Path

import pytest
from chanctx.context.tokens import (
    FAMILIES,
    FEATURES,
    EstimatingCounter,
    Family,
    TokenCounter,
    default_counter,
    family_for_model,
)
from hypothesis import given, settings
from hypothesis import strategies as st

CALIBRATION = (
    Path(__file__).resolve().parents[2] / "shared" / "benchdata" / "tokens" / "calibration.jsonl"
)
FAMILY_NAMES: tuple[Family, ...] = ("claude_v3", "claude_v4_8")
CHAT_AND_PROSE = ("slack_chat", "prose_docs", "prose_legal")


@cache
def calibration() -> tuple[dict[str, object], ...]:
    if not CALIBRATION.exists():
        pytest.fail(
            f"token calibration set missing: {CALIBRATION} "
            "(shared/benchdata must sit beside the repository checkout)"
        )
    lines = CALIBRATION.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line)


def ratios(family: Family, category: str | None = None) -> list[float]:
    counter = EstimatingCounter(family)
    return [
        counter.count(str(row["text"])) / int(row[family])  # type: ignore[call-overload]
        for row in calibration()
        if category is None or row["category"] == category
    ]


def test_calibration_set_is_the_expected_one() -> None:
    rows = calibration()
    assert len(rows) == 888
    assert set(CHAT_AND_PROSE) <= {row["category"] for row in rows}


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_never_undercounts_on_99_percent(family: Family) -> None:
    r = ratios(family)
    safe = sum(x >= 1.0 for x in r) / len(r)
    assert safe >= 0.99, f"{family}: only {safe:.1%} of texts have estimate >= reference"


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_never_far_below_on_any_text(family: Family) -> None:
    assert min(ratios(family)) >= 0.95


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("category", CHAT_AND_PROSE)
def test_median_overcount_is_bounded_on_chat_and_prose(family: Family, category: str) -> None:
    assert statistics.median(ratios(family, category)) <= 1.35


def test_v4_8_counts_more_than_v3_on_the_set() -> None:
    """The safe default family must be the one that counts more."""
    v3, v48 = EstimatingCounter("claude_v3"), EstimatingCounter("claude_v4_8")
    texts = [str(row["text"]) for row in calibration()]
    assert sum(map(v48.count, texts)) > sum(map(v3.count, texts))


# --- algebra -------------------------------------------------------------------------------

# Text built from the pieces where the features interact: runs that merge at a join (letters,
# capitals, digits, spaces, non-ASCII), multi-byte classes, and arbitrary Unicode.
_ASCII_PIECES = ["a", "Z", "ab", "ABC", "Word", "camelCase", "7", "42", ".", "!!", "{}"]
_SPACE_PIECES = [" ", "  ", "\n", "\t"]
_WIDE_PIECES = [
    "é",
    "¿",
    "Ω",
    "ж",
    "न",
    "日本",
    "한",
    "—",
    "\u2019",
    "…",
    "✅",
    "☕",
    "❤️",
    "\ufe0f",
]
_ASTRAL_PIECES = ["\u200d", "🔥", "🇺🇸", "👍🏽", "\ufeff", "\U0001f600"]
PIECES = st.sampled_from([*_ASCII_PIECES, *_SPACE_PIECES, *_WIDE_PIECES, *_ASTRAL_PIECES])
TEXTS = st.one_of(st.text(), st.lists(PIECES, max_size=30).map("".join))
COUNTERS = st.sampled_from([EstimatingCounter(f) for f in FAMILY_NAMES])


def test_empty_text_is_zero() -> None:
    for family in FAMILY_NAMES:
        assert EstimatingCounter(family).count("") == 0


@settings(max_examples=300, deadline=None)
@given(counter=COUNTERS, text=TEXTS, data=st.data())
def test_monotone_over_prefixes(counter: EstimatingCounter, text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    assert counter.count(text[:cut]) <= counter.count(text)


@settings(max_examples=300, deadline=None)
@given(counter=COUNTERS, a=TEXTS, b=TEXTS)
def test_subadditive(counter: EstimatingCounter, a: str, b: str) -> None:
    # The design guarantees the strict form; budgets only rely on "+ 1".
    assert counter.count(a + b) <= counter.count(a) + counter.count(b)


@settings(max_examples=200, deadline=None)
@given(counter=COUNTERS, text=TEXTS)
def test_nonempty_text_costs_at_least_one(counter: EstimatingCounter, text: str) -> None:
    assert (counter.count(text) >= 1) == bool(text)


def test_prefixes_of_calibration_texts_are_monotone() -> None:
    counter = EstimatingCounter("claude_v4_8")
    for row in calibration()[::37]:
        text = str(row["text"])
        counts = [counter.count(text[:i]) for i in range(0, len(text) + 1, 7)]
        assert counts == sorted(counts)


def test_shipped_weights_respect_the_subadditivity_bounds() -> None:
    for family in FAMILY_NAMES:
        weights = EstimatingCounter(family)._weights
        assert len(weights) == len(FEATURES) and min(weights) >= 0
        for excess, k, runs in FAMILIES:
            assert k * weights[excess] <= weights[runs], (family, FEATURES[excess])


def test_bad_weights_are_rejected() -> None:
    with pytest.raises(ValueError):
        EstimatingCounter("claude_v3", (1,) * (len(FEATURES) - 1))
    with pytest.raises(ValueError):
        EstimatingCounter("claude_v2")  # type: ignore[arg-type]


# --- model -> family ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-3-opus-20240229", "claude_v3"),
        ("claude-3-haiku-20240307", "claude_v3"),
        ("claude-3-5-sonnet-20241022", "claude_v3"),
        ("claude-3-5-haiku-latest", "claude_v3"),
        ("claude-3-7-sonnet-20250219", "claude_v3"),
        ("claude-sonnet-4-20250514", "claude_v3"),
        ("claude-opus-4-0", "claude_v3"),
        ("claude-opus-4-1-20250805", "claude_v3"),
        ("claude-sonnet-4-5-20250929", "claude_v3"),
        ("claude-haiku-4-5", "claude_v3"),
        ("claude-opus-4-6", "claude_v3"),
        ("Claude-Opus-4.6", "claude_v3"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "claude_v3"),
        ("claude-sonnet-4-5@20250929", "claude_v3"),
        ("claude-opus-4-7", "claude_v4_8"),
        ("claude-opus-4-8", "claude_v4_8"),
        ("claude-opus-4-8-20261101", "claude_v4_8"),
        ("claude-sonnet-5", "claude_v4_8"),
        ("claude-sonnet-5-20270101", "claude_v4_8"),
        ("claude-haiku-5-1", "claude_v4_8"),
        ("claude-opus-6", "claude_v4_8"),
        ("claude-2.1", "claude_v4_8"),
        ("claude-latest", "claude_v4_8"),
        ("gpt-4o", "claude_v4_8"),
        ("", "claude_v4_8"),
        (None, "claude_v4_8"),
    ],
)
def test_family_for_model(model: str | None, family: Family) -> None:
    assert family_for_model(model) == family


def test_default_counter_is_a_cached_estimator_for_the_family() -> None:
    counter = default_counter("claude-3-5-sonnet-20241022")
    assert isinstance(counter, TokenCounter)
    assert isinstance(counter, EstimatingCounter) and counter.family == "claude_v3"
    assert default_counter("claude-opus-4-6") is counter
    unknown = default_counter()
    assert isinstance(unknown, EstimatingCounter) and unknown.family == "claude_v4_8"
    assert default_counter("claude-opus-4-8") is unknown
