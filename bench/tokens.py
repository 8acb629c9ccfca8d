"""Offline token counter: calibration against reference counts, held-out check, throughput.

Data: ``shared/benchdata/tokens/calibration.jsonl`` beside the repository (888 texts with
reference content-token counts for the ``claude_v3`` and ``claude_v4_8`` tokenizer families).
It is read in place, never copied.

For each family this reports, per category and overall, the ratio estimate / reference of
``context.tokens.default_counter`` (median, worst 1% = 1st percentile, minimum, share >= 1.0),
and the same for the naive ``len(text) / 4`` rule of thumb, measured in the same run. A budget is
only safe if the ratio stays >= 1.0, so the worst 1% and the minimum are the numbers that matter.

Fitting (``--fit``): the weights in ``context/tokens.py`` come from a linear program. The
estimate is linear in the features (``context.tokens.features``), so "minimise the mean ratio
over all texts subject to estimate >= MARGIN x reference for every text" is an LP in the
weights, plus the subadditivity bounds of ``context.tokens.FAMILIES`` and the structural floors
below. It is solved here with a small primal-dual interior-point method (numpy only). ``--fit``
prints the constants to paste into ``context/tokens.py``; a normal run refits too and reports
how far the shipped weights are from the refit.

Held-out check: the same procedure fitted on one half of the texts (a fixed random split,
stratified by category) and measured on the other half, plus the worst case over 20 random
splits, to show the bars are not an artefact of fitting the very texts they are measured on.

Run: python -m bench.tokens [--fit] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chanctx.context.tokens import FAMILIES, FEATURES, EstimatingCounter, Family, features

from bench._data import benchdata

if TYPE_CHECKING:
    from numpy.typing import NDArray

# The project's own set (tests/data/tokens); --shared measures the independent 888-text set too.
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "tokens" / "calibration.jsonl"
FAMILY_NAMES: tuple[Family, ...] = ("claude_v3", "claude_v4_8")
# The categories of the calibration set that the median bar (<= 1.35) applies to.
CHAT = ("slack_chat",)
PROSE = ("prose_docs", "prose_legal")
# Fit so every calibration text gets >= 1.05x its reference: the slack that keeps texts the fit
# did not see above 1.0 (see the held-out check).
MARGIN = 1.05
SPLITS = 20

# Structural floors (tokens per unit) for classes the calibration set covers thinly or not at
# all, so the LP cannot price them at ~0 just because no calibration text needs more. Taken
# from the reference reconstruction on material outside the calibration set (translation
# catalogues in ~30 languages, isolated probes), per non-ASCII code point:
#   - Latin-1 accents cost 1.0-1.6 (es, fr, de, pt, cs, hu, is); Greek, Hebrew, Arabic, Armenian
#     0.75-1.3 and Cyrillic ~0.45 (C4-DF: floor 0.9);
#   - Thai, Khmer, Myanmar, Bengali, Tamil, Ethiopic, Vietnamese 0.8-2.0 (E0-E1: floor 1.3);
#   - Chinese, Japanese, Korean 0.9-1.45 (floor 1.45);
#   - BMP symbols like U+2705 or U+2615 fall back to bytes: 3 tokens in v3, 2 in v4_8;
#     astral emoji 3.5-4 in v3, 3 in v4_8;
#   - a non-ASCII run splits the word it sits in ("qué", "falló") or, beside spaces, takes no
#     word marker, so the run itself costs >= 1 token beyond its characters.
# ASCII digits come in groups of 2-3 per token (v3 / v4_8) and take no word markers, so a
# number pays for its neighbouring spaces (digit_runs floor 0.9); in v4_8, with no all-caps
# marker, a capital after a capital costs ~0.75 (upper_excess1 floor 0.3 on top of the others).
_COMMON_FLOORS: dict[str, float] = {
    "digit_runs": 0.9,
    "non_ascii_runs": 1.0,
    "latin1": 1.6,
    "two_byte": 0.9,
    "indic": 1.3,
    "cjk": 1.45,
}
FLOORS: dict[Family, dict[str, float]] = {
    "claude_v3": {**_COMMON_FLOORS, "digits": 0.5, "symbols": 3.0, "astral": 3.5},
    "claude_v4_8": {
        **_COMMON_FLOORS,
        "digits": 0.34,
        "symbols": 2.0,
        "astral": 3.0,
        "upper_excess1": 0.3,
    },
}
# The per-text constant stays <= 1 token: pieces are summed one by one, so a big constant
# would be paid once per JSON fragment.
CEILINGS: dict[str, float] = {"nonempty": 1.0}


@dataclass(frozen=True)
class Text:
    category: str
    text: str
    reference: dict[Family, int]


def load(path: Path = DATA) -> list[Text]:
    if not path.exists():
        sys.exit(
            f"calibration set not found at {path} (for --shared: --data DIR or CHANCTX_BENCHDATA)"
        )
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [Text(r["category"], r["text"], {f: int(r[f]) for f in FAMILY_NAMES}) for r in rows]


# --- the LP ----------------------------------------------------------------------------------


def solve_lp(c: NDArray[Any], a: NDArray[Any], b: NDArray[Any]) -> NDArray[Any]:
    """min c.x subject to a @ x >= b (bounds included as rows): Mehrotra predictor-corrector.

    Small and dense (tens of variables, ~1000 constraints), so each step solves the p x p
    normal equations directly.
    """
    import numpy as np

    m, p = a.shape
    x: NDArray[Any] = np.linalg.lstsq(a, b + 1.0, rcond=None)[0]
    s = np.maximum(a @ x - b, 1.0)
    z = np.ones(m)

    def longest(v: NDArray[Any], dv: NDArray[Any]) -> float:
        """The largest step in [0, 1] keeping ``v + step * dv`` non-negative."""
        neg = dv < 0
        return float(min(1.0, (-v[neg] / dv[neg]).min())) if neg.any() else 1.0

    for _ in range(200):
        r_dual = a.T @ z - c
        r_prim = a @ x - b - s
        mu = float(s @ z) / m
        if mu < 1e-10 and np.abs(r_dual).max() < 1e-9 and np.abs(r_prim).max() < 1e-9:
            break
        # Newton step on the perturbed KKT system, reduced to the p x p normal equations.
        normal = a.T @ (a * (z / s)[:, None]) + 1e-12 * np.eye(p)
        steps: list[tuple[NDArray[Any], NDArray[Any], NDArray[Any]]] = []
        r_comp = -s * z  # predictor (affine scaling) first, then the centring-corrector
        for _corrector in range(2):
            dx = np.linalg.solve(normal, a.T @ ((r_comp - z * r_prim) / s) + r_dual)
            ds = a @ dx + r_prim
            dz = (r_comp - z * ds) / s
            steps.append((dx, ds, dz))
            alpha = min(longest(s, ds), longest(z, dz))
            mu_aff = float((s + alpha * ds) @ (z + alpha * dz)) / m
            r_comp = -s * z - ds * dz + (mu_aff / mu) ** 3 * mu
        dx, ds, dz = steps[-1]
        alpha = 0.99 * min(longest(s, ds), longest(z, dz))
        x, s, z = x + alpha * dx, s + alpha * ds, z + alpha * dz
    return x


def fit(texts: Sequence[Text], family: Family, margin: float = MARGIN) -> tuple[int, ...]:
    """Integer weights (thousandths of a token) for ``family`` fitted on ``texts``."""
    import numpy as np

    p = len(FEATURES)
    feats = np.array([features(t.text) for t in texts], dtype=float)
    ref = np.array([t.reference[family] for t in texts], dtype=float)
    ratio_rows = feats / ref[:, None]
    rows: list[NDArray[Any]] = [ratio_rows]
    rhs: list[NDArray[Any]] = [np.full(len(texts), margin)]
    floors = FLOORS[family]
    eye = np.eye(p)
    for i, name in enumerate(FEATURES):
        rows.append(eye[i : i + 1])  # w_i >= floor (0 by default)
        rhs.append(np.array([floors.get(name, 0.0)]))
        if name in CEILINGS:
            rows.append(-eye[i : i + 1])
            rhs.append(np.array([-CEILINGS[name]]))
    for excess, k, runs in FAMILIES:
        row = np.zeros((1, p))
        row[0, runs], row[0, excess] = 1.0, -float(k)  # w_runs - k * w_excess >= 0
        rows.append(row)
        rhs.append(np.zeros(1))
    # A tiny cost on every weight pins features no text exercises to their floor.
    cost = ratio_rows.mean(axis=0) + 1e-6
    weights = solve_lp(cost, np.vstack(rows), np.concatenate(rhs))
    return _round_up(weights.tolist())


def _round_up(weights: list[float]) -> tuple[int, ...]:
    """Thousandths, rounded up (stays an upper envelope), family bounds re-imposed exactly."""
    milli = [max(0, math.ceil(w * 1000 - 1e-6)) for w in weights]
    for excess, k, runs in FAMILIES:
        milli[runs] = max(milli[runs], k * milli[excess])
    return tuple(milli)


# --- measuring ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    p1: float
    minimum: float
    safe: float  # share of texts with ratio >= 1.0


def summarize(ratios: Sequence[float]) -> Stats:
    ordered = sorted(ratios)
    n = len(ordered)
    # 1st percentile, linear interpolation between closest ranks (numpy's default).
    pos = 0.01 * (n - 1)
    lo = math.floor(pos)
    p1 = ordered[lo] + (ordered[min(lo + 1, n - 1)] - ordered[lo]) * (pos - lo)
    return Stats(n, statistics.median(ordered), p1, ordered[0], sum(r >= 1.0 for r in ordered) / n)


def ratios(
    texts: Sequence[Text], family: Family, estimate: Callable[[str], int]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for t in texts:
        r = estimate(t.text) / t.reference[family]
        out.setdefault(t.category, []).append(r)
        out.setdefault("all", []).append(r)
    return out


def naive(text: str) -> int:
    """The rule of thumb seed docs use: a token is about four characters."""
    return math.ceil(len(text) / 4)


def split_halves(texts: Sequence[Text], seed: int) -> tuple[list[Text], list[Text]]:
    """Half of each category to fit, the other half to test."""
    rng = random.Random(seed)
    fit_half: list[Text] = []
    test_half: list[Text] = []
    for category in sorted({t.category for t in texts}):
        group = [t for t in texts if t.category == category]
        rng.shuffle(group)
        fit_half += group[: len(group) // 2]
        test_half += group[len(group) // 2 :]
    return fit_half, test_half


def throughput(texts: Sequence[str], estimate: Callable[[str], int], seconds: float = 1.0) -> float:
    """MB/s of UTF-8 text over the whole set, best of several timed passes."""
    size = sum(len(t.encode("utf-8")) for t in texts)
    best = math.inf
    deadline = time.perf_counter() + seconds
    while True:
        start = time.perf_counter()
        for t in texts:
            estimate(t)
        best = min(best, time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return size / best / 1e6


# --- report ------------------------------------------------------------------------------------


def _row(name: str, s: Stats) -> str:
    return (
        f"| {name} | {s.n} | {s.median:.3f} | {s.p1:.3f} | {s.minimum:.3f} | {100 * s.safe:.1f}% |"
    )


def table(by_category: dict[str, list[float]]) -> str:
    lines = [
        "| category | texts | median | worst 1% | min | ratio >= 1.0 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for category in sorted(k for k in by_category if k != "all"):
        lines.append(_row(category, summarize(by_category[category])))
    lines.append(_row("**all**", summarize(by_category["all"])))
    return "\n".join(lines)


def bars(by_category: dict[str, list[float]]) -> list[str]:
    """The acceptance bars; returns the failures."""
    overall = summarize(by_category["all"])
    failed = []
    if overall.safe < 0.99:
        failed.append(f"only {100 * overall.safe:.1f}% of texts have ratio >= 1.0")
    if overall.minimum < 0.95:
        failed.append(f"minimum ratio {overall.minimum:.3f} < 0.95")
    for category in CHAT + PROSE:
        if category in by_category and summarize(by_category[category]).median > 1.35:
            failed.append(f"median on {category} > 1.35")
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--fit", action="store_true", help="print refitted weights and exit")
    parser.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    parser.add_argument(
        "--shared", action="store_true", help="the 888-text set in the bench data dir instead"
    )
    parser.add_argument(
        "--data", help="bench data dir (default $CHANCTX_BENCHDATA, ../shared/benchdata)"
    )
    args = parser.parse_args(argv)
    source = benchdata(args.data) / "tokens" / "calibration.jsonl" if args.shared else DATA
    texts = load(source)

    if args.fit:
        print("_WEIGHTS: Final[dict[Family, dict[str, int]]] = {")
        for family in FAMILY_NAMES:
            print(f'    "{family}": {{')
            for name, weight in zip(FEATURES, fit(texts, family), strict=True):
                print(f'        "{name}": {weight},')
            print("    },")
        print("}")
        return 0

    md: list[str] = [
        "`python -m bench.tokens`: the offline estimator `context.tokens.default_counter()` "
        f"against the reference counts of `{'shared/benchdata' if args.shared else 'tests/data'}/tokens/calibration.jsonl` "
        f"({len(texts)} texts), as ratio = estimate / reference. A budget is safe only if the "
        "ratio is >= 1.0, so read the *worst 1%* (1st percentile) and *min* columns first. "
        "Bars: ratio >= 1.0 on >= 99% of texts, >= 0.95 on all, median <= 1.35 on chat "
        f"({', '.join(CHAT)}) and prose ({', '.join(PROSE)}).",
    ]
    failures: list[str] = []
    for family in FAMILY_NAMES:
        counter = EstimatingCounter(family)
        mine = ratios(texts, family, counter.count)
        base = ratios(texts, family, naive)
        failures += [f"{family}: {f}" for f in bars(mine)]
        md += [
            f"\n### {family}\n",
            "Estimator (shipped weights):\n",
            table(mine),
            "\nBaseline `ceil(len(text) / 4)` (the seed docs' rule of thumb), same texts:\n",
            table(base),
        ]
        # Held-out: fit on half of each category, measure the other half.
        fit_half, test_half = split_halves(texts, seed=0)
        held = ratios(test_half, family, EstimatingCounter(family, fit(fit_half, family)).count)
        h = summarize(held["all"])
        worst_safe, worst_min = 1.0, math.inf
        for seed in range(1, SPLITS + 1):
            a, b = split_halves(texts, seed)
            r = ratios(b, family, EstimatingCounter(family, fit(a, family)).count)["all"]
            s = summarize(r)
            worst_safe, worst_min = min(worst_safe, s.safe), min(worst_min, s.minimum)
        chat_prose = ", ".join(
            f"{c} {summarize(held[c]).median:.3f}" for c in CHAT + PROSE if c in held
        )
        md.append(
            f"\nHeld-out (fit on half of each category, seed 0, measured on the other "
            f"{h.n}): ratio >= 1.0 on **{100 * h.safe:.1f}%**, worst 1% {h.p1:.3f}, min "
            f"**{h.minimum:.3f}**, median {h.median:.3f} (medians: {chat_prose}). Over "
            f"{SPLITS} more random splits: worst share >= 1.0 is {100 * worst_safe:.1f}%, "
            f"worst minimum {worst_min:.3f}."
        )
        failures += [f"{family} held-out: {f}" for f in bars(held)]
        refit = fit(texts, family)
        drift = max(abs(x - y) for x, y in zip(refit, counter._weights, strict=True)) / 1000
        md.append(
            f"Refitting on all texts now gives weights within {drift:.3f} tokens of the "
            "shipped ones."
        )

    sample = [t.text for t in texts]
    counter = EstimatingCounter("claude_v4_8")
    mine_mbs = throughput(sample, counter.count)
    naive_mbs = throughput(sample, naive)
    size = sum(len(t.encode("utf-8")) for t in sample)
    md.append(
        f"\n### Throughput\n\nPure Python, one thread, over the {len(sample)} texts "
        f"({size / 1e6:.2f} MB of UTF-8), best pass: estimator **{mine_mbs:.1f} MB/s**, "
        f"baseline `ceil(len / 4)` {naive_mbs:.1f} MB/s in the same run "
        f"(bar: >= 5 MB/s). The estimator pays ~{naive_mbs / mine_mbs:.0f}x the baseline's "
        "time for never undercounting, where the baseline undercounts most texts (tables above)."
    )
    if failures:
        md.append("\n**Bars missed:** " + "; ".join(failures))
    else:
        md.append(
            "\nAll bars met on the calibration set and on the seed-0 held-out half. Some other "
            "random splits miss them (worst split above), so the margin comes from fitting on "
            "all 888 texts, not from the features generalising perfectly."
        )
    md.append(
        "\n**Known limit.** The weights were fitted on the independent 888-text set (`--shared`), "
        "where every text is at or above 1.0. On the project's own set (texts written for "
        "chanctx, counts from ctok) chat, code, logs, prose, emoji and ids stay at or above 1.0 "
        "(v4_8: 4 chat lines with long numbers at 0.94-0.99), but invented words and jargon "
        "undercount (v3 median 0.59) and so do some German and Turkish sentences (min 0.76): a "
        "character-class estimator cannot be tight on English and safe on every rare word "
        "without a refit on this set. The session layer keeps headroom (compaction before the "
        "window is full) and uses `count_tokens` when an API key is set."
    )
    report = "\n".join(md)
    print(report)
    if not args.no_write:
        from bench._results import write_section

        write_section("Token counting", report)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
