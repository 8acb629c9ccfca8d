"""Offline token counter: fitted on independent texts, checked on the project's calibration set.

Three sets of texts with reference content-token counts for the ``claude_v3`` and
``claude_v4_8`` families (``{"category", "text", "claude_v3", "claude_v4_8"}`` per line):

- *check*: ``tests/data/tokens/calibration.jsonl``, the project's own 444 texts (what the tests
  read). Never used for fitting.
- *fit*: the independent 888 texts in the bench data dir (``tokens/calibration.jsonl``, counts
  from the Messages API) plus ``bench/data/tokens_fit/fit.jsonl`` (2,300 generated texts:
  invented words, ids, numbers, capitalisation, symbols, ~45 languages; see its regenerate.py).

Fitting (``--fit``): the estimate is linear in ``context.tokens.features``, so "minimise the
mean ratio estimate / reference over the fit texts subject to estimate >= reference on each"
is a linear program in the weights. Texts of random code points from one script
(``script_*``, worst cases no language looks like) only need estimate >= 0.8 x reference: they
keep rare scripts from being priced at nothing without pricing every real word as a random one.
Solved with a small primal-dual interior-point method (numpy only); ``--fit`` writes
``context/_token_weights.py``.

A normal run measures the shipped weights on the check set (per category: mean, min, max,
share >= 1.0) against two baselines in the same run: the previous estimator (character classes
only, the weights it shipped with) and ``ceil(len / 4)``; then the speed of all three as MB/s
and as a ratio. Run: python -m bench.tokens [--fit] [--no-write] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chanctx.context.tokens import (
    EstimatingCounter,
    Family,
    _char_features,
    feature_names,
    features,
)

from bench._data import benchdata

if TYPE_CHECKING:
    from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "tests" / "data" / "tokens" / "calibration.jsonl"
FIT = ROOT / "bench" / "data" / "tokens_fit" / "fit.jsonl"
WEIGHTS_FILE = ROOT / "context" / "_token_weights.py"
FAMILY_NAMES: tuple[Family, ...] = ("claude_v3", "claude_v4_8")
STRESS_PREFIX, STRESS_MARGIN = "script_", 0.8
# The bars issue 12 sets on the check set.
MAX_MEAN = 1.15

# The previous estimator (before the piece classes): the first 25 character features, the
# weights it shipped with (thousandths). Kept here as the same-run baseline.
PREVIOUS: dict[Family, tuple[int, ...]] = {
    "claude_v3": (1000, 119, 130, 0, 266, 1, 1, 0, 500, 900, 183, 1083, 205, 385, 1, 957, 1001,
                  1, 2836, 900, 1300, 3020, 1450, 2440, 3501),
    "claude_v4_8": (1000, 110, 849, 283, 143, 301, 301, 1, 340, 900, 436, 1185, 55, 1, 1, 238,
                    1001, 1, 1601, 900, 1301, 2729, 1450, 4043, 3370),
}  # fmt: skip


@dataclass(frozen=True)
class Text:
    category: str
    text: str
    reference: dict[Family, int]


def load(path: Path) -> list[Text]:
    if not path.exists():
        sys.exit(f"token texts not found at {path} (bench data: --data DIR or CHANCTX_BENCHDATA)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
    return [Text(r["category"], r["text"], {f: int(r[f]) for f in FAMILY_NAMES}) for r in rows]


def previous(family: Family) -> Callable[[str], int]:
    weights = PREVIOUS[family]

    def count(text: str) -> int:
        if not text:
            return 0
        total = sum(w * f for w, f in zip(weights, _char_features(text), strict=False))
        return -(-total // 1000)

    return count


def naive(text: str) -> int:
    """The rule of thumb seed docs use: a token is about four characters."""
    return math.ceil(len(text) / 4)


# --- the LP ----------------------------------------------------------------------------------


def solve_lp(c: NDArray[Any], a: NDArray[Any], b: NDArray[Any]) -> NDArray[Any]:
    """min c.x subject to a @ x >= b (bounds included as rows): Mehrotra predictor-corrector.

    Dense and small (hundreds of variables, a few thousand rows): each step solves the p x p
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

    for _ in range(300):
        r_dual = a.T @ z - c
        r_prim = a @ x - b - s
        mu = float(s @ z) / m
        if mu < 1e-10 and np.abs(r_dual).max() < 1e-9 and np.abs(r_prim).max() < 1e-9:
            break
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


def fit(texts: Sequence[Text], family: Family) -> dict[str, int]:
    """Integer weights (thousandths of a token, by feature name) fitted on ``texts``."""
    import numpy as np

    rows = [t for t in texts if t.reference[family] > 0]
    names = feature_names()
    feats = np.array([features(t.text) for t in rows], dtype=float)
    used = feats.any(axis=0)  # a class no text has stays at 0
    feats = feats[:, used]
    ref = np.array([t.reference[family] for t in rows], dtype=float)
    margin = np.array(
        [STRESS_MARGIN if t.category.startswith(STRESS_PREFIX) else 1.0 for t in rows]
    )
    ratio_rows = feats / ref[:, None]
    p = ratio_rows.shape[1]
    a = np.vstack([ratio_rows, np.eye(p)])
    b = np.concatenate([margin, np.zeros(p)])
    # Minimise the mean ratio over the real texts; a tiny cost pins unneeded weights to 0.
    real = ~np.array([t.category.startswith(STRESS_PREFIX) for t in rows])
    weights = solve_lp(ratio_rows[real].mean(axis=0) + 1e-6, a, b)
    milli = [max(0, math.ceil(w * 1000 - 1e-6)) for w in weights]
    chosen = [n for n, u in zip(names, used, strict=True) if u]
    return {n: w for n, w in zip(chosen, milli, strict=True) if w > 0}


def write_weights(weights: dict[Family, dict[str, int]]) -> None:
    lines = [
        '"""Fitted weights of the offline token estimate: written by ``python -m bench.tokens '
        "--fit``.",
        "",
        "Thousandths of a token per feature (``context.tokens.feature_names()``); a missing name "
        "weighs 0.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        "WEIGHTS: Final[dict[str, dict[str, int]]] = {",
    ]
    for family, table in weights.items():
        lines.append(f'    "{family}": {{')
        lines += [f'        "{name}": {w},' for name, w in table.items()]
        lines.append("    },")
    lines.append("}")
    WEIGHTS_FILE.write_text("\n".join(lines) + "\n")


# --- measuring ---------------------------------------------------------------------------------


def ratios(
    texts: Sequence[Text], family: Family, estimate: Callable[[str], int]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for t in texts:
        if t.reference[family] <= 0:
            continue
        r = estimate(t.text) / t.reference[family]
        out.setdefault(t.category, []).append(r)
        out.setdefault("all", []).append(r)
    return out


def _row(name: str, r: Sequence[float]) -> str:
    safe = sum(x >= 1.0 for x in r) / len(r)
    return (
        f"| {name} | {len(r)} | {sum(r) / len(r):.3f} | {min(r):.3f} | {max(r):.3f} "
        f"| {100 * safe:.1f}% |"
    )


def table(by_category: dict[str, list[float]]) -> str:
    lines = [
        "| category | texts | mean | min | max | ratio >= 1.0 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for category in sorted(k for k in by_category if k != "all"):
        lines.append(_row(category, by_category[category]))
    lines.append(_row("**all**", by_category["all"]))
    return "\n".join(lines)


def summary(r: Sequence[float]) -> str:
    under = sum(x < 1.0 for x in r)
    return (
        f"mean {sum(r) / len(r):.3f}, min {min(r):.3f}, max {max(r):.3f}, {under} of {len(r)} under"
    )


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--fit", action="store_true", help="refit, write context/_token_weights.py")
    parser.add_argument("--no-write", action="store_true", help="do not update bench/RESULTS.md")
    parser.add_argument(
        "--data", help="bench data dir (default $CHANCTX_BENCHDATA, ../shared/benchdata)"
    )
    args = parser.parse_args(argv)
    shared = load(benchdata(args.data) / "tokens" / "calibration.jsonl")
    fit_texts = shared + load(FIT)

    if args.fit:
        write_weights({family: fit(fit_texts, family) for family in FAMILY_NAMES})
        print(f"wrote {WEIGHTS_FILE.relative_to(ROOT)}")
        return 0

    check = load(CHECK)
    md: list[str] = [
        "`python -m bench.tokens`: the offline estimator `context.tokens.default_counter()` "
        "(pieces of Anthropic's earlier public tokenizer by class, plus character classes; "
        f"weights fitted on {len(fit_texts)} independent texts) measured on the project's check "
        f"set `tests/data/tokens/calibration.jsonl` ({len(check)} texts, never used for "
        "fitting), as ratio = estimate / reference. Bars (issue 12): ratio >= 1.0 on every "
        f"text, mean <= {MAX_MEAN}.",
    ]
    failures: list[str] = []
    for family in FAMILY_NAMES:
        mine = ratios(check, family, EstimatingCounter(family).count)
        before = ratios(check, family, previous(family))
        base = ratios(check, family, naive)
        real = [t for t in fit_texts if not t.category.startswith(STRESS_PREFIX)]
        stress = [t for t in fit_texts if t.category.startswith(STRESS_PREFIX)]
        on_fit = ratios(real, family, EstimatingCounter(family).count)
        on_stress = ratios(stress, family, EstimatingCounter(family).count)
        mine_all = mine["all"]
        if min(mine_all) < 1.0:
            failures.append(f"{family}: {sum(x < 1.0 for x in mine_all)} texts under")
        if sum(mine_all) / len(mine_all) > MAX_MEAN:
            failures.append(f"{family}: mean {sum(mine_all) / len(mine_all):.3f} > {MAX_MEAN}")
        md += [
            f"\n### {family}\n",
            f"- estimator: {summary(mine_all)}",
            f"- previous estimator (character classes only): {summary(before['all'])}",
            f"- `ceil(len / 4)`: {summary(base['all'])}",
            f"- on its own fitting texts: {summary(on_fit['all'])}; random code points of one "
            f"script (fitted to >= {STRESS_MARGIN}): {summary(on_stress['all'])}",
            "\nEstimator by category (check set):\n",
            table(mine),
        ]

    md.append(
        "\n**Why not never-under yet** (measured on a prototype with the same kinds of features "
        "while building this, 2026-11-25): fitted on the check set itself, the features reach "
        "never-under at mean 1.07, so they can express it; what is missing is generalisation. "
        "Fitted on half of the fit texts and measured on the other half (4 stratified splits), "
        "the lowest ratio is 0.79-0.82 (v3) and 0.71-0.89 (v4_8), the 1st percentile "
        "0.93-0.95; a uniform margin that keeps unseen texts above 1.0 (1.27 / 1.41) would put "
        "the mean at 1.41 / 1.59, and more features (per-word piece counts) lower the mean but "
        "put more texts under. Most texts under are under by 1-3% (prose, logs, hex ids, "
        "tracebacks); the rest is vocabulary the earlier tokenizer cannot see (a Russian "
        "sentence in Claude 3, German words Claude 4.8 splits). Fitting on the check set would "
        "meet the bar and prove nothing."
    )
    sample = [t.text for t in check]
    size = sum(len(t.encode("utf-8")) for t in sample)
    counter = EstimatingCounter("claude_v4_8")
    counter.count("warm up")
    mine_mbs = throughput(sample, counter.count)
    before_mbs = throughput(sample, previous("claude_v4_8"))
    naive_mbs = throughput(sample, naive)
    md.append(
        f"\n### Throughput\n\nOne thread, the {len(sample)} check texts ({size / 1e6:.2f} MB of "
        f"UTF-8), best pass: estimator **{mine_mbs:.1f} MB/s**, previous estimator "
        f"{before_mbs:.1f} MB/s, `ceil(len / 4)` {naive_mbs:.1f} MB/s, same run. The estimator "
        f"takes **{before_mbs / mine_mbs:.1f}x** the previous one's time per text. A 1,500-token "
        f"snapshot (~6 KB of JSON) costs ~{6000 / (mine_mbs * 1e6) * 1e6:.0f} us to count."
    )
    md.append(
        "\n**Bars missed:** " + "; ".join(failures)
        if failures
        else "\nBars met: no check text under its reference, mean within the bar."
    )
    report = "\n".join(md)
    print(report)
    if not args.no_write:
        from bench._results import write_section

        write_section("Token counting", report)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
