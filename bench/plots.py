"""``python -m bench plots``: draw the key results of bench/RESULTS.md as PNG pictures.

Reads the tables the other benches wrote (so run it after them; ``python -m bench all`` runs it
last) and writes ``bench/plots/*.png`` plus a "Plots" section that shows them. A section that
is missing is named in the output and its picture is left out; the others are still drawn.

- recall by LoCoMo question category, chanctx's real path against BM25 and DRAGON;
- search latency against channel size, the tool call against the full-scan baseline;
- memory against answered mentions and against stored messages;
- mentions a second with one process, one and two Redis replicas;
- a real ``chanctx run --http`` on the channel store: RssAnon against the messages it has
  stored, and search latency against channel size (served, in-memory index, FTS5 bm25());
- the same latencies for today's code restarted on the 10,000,000-message store ("Channel
  store restart"), with ``channel_context`` itself timed in process beside them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on a server or in CI
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from bench._results import sections, write_section
from bench._tables import Table, number, tables

__all__ = ["draw_all", "main"]

PLOTS = Path(__file__).with_name("plots")
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial", "overall")


def _recall(found: dict[str, str]) -> Figure:
    table = tables(found["Search quality (LoCoMo)"])[0]
    series = {
        "DRAGON (paper)": "DRAGON",
        "BM25 baseline": "BM25 baseline",
        "chanctx real path": "real path, all",
    }
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, k in zip(axes, ("@10", "@25"), strict=True):
        width = 0.27
        for offset, (label, row_label) in enumerate(series.items()):
            row = next(r for r in table.rows if r[0].startswith(k) and row_label in r[0])
            values = [number(row[table.column(c)]) for c in CATEGORIES]
            xs = [i + (offset - 1) * width for i in range(len(CATEGORIES))]
            ax.bar(xs, values, width, label=label)
        ax.set_xticks(range(len(CATEGORIES)), CATEGORIES, rotation=20)
        ax.set_title(f"LoCoMo evidence recall{k}")
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("recall (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper center", ncol=3, fontsize=8)
    figure.subplots_adjust(top=0.82)
    return figure


def _latency_tables(found: dict[str, str]) -> list[tuple[int, Table]]:
    sized = []
    for table in tables(found["Search speed"]):
        match = re.match(r"search at ([\d,]+) messages", table.header[0])
        if match:
            sized.append((int(match.group(1).replace(",", "")), table))
    return sorted(sized, key=lambda pair: pair[0])


def _search_latency(found: dict[str, str]) -> Figure:
    series = {
        "channel_context tool call": "channel_context",
        "ranking alone": "ranking alone",
        "rank-bm25 full scan (baseline)": "baseline",
    }
    figure, ax = plt.subplots(figsize=(6.5, 4))
    sized = _latency_tables(found)
    for label, row_label in series.items():
        points = [(size, number(t.row(row_label)[t.column("p50")])) for size, t in sized]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages in the channel")
    ax.set_ylabel("p50 latency (ms)")
    ax.set_title("Search latency against channel size")
    ax.legend(fontsize=8)
    return figure


def _memory(found: dict[str, str]) -> Figure:
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    durable = tables(found["Memory under load (durable answering)"])[0]
    answered = [number(r[0]) for r in durable.rows]
    rss = [number(r[1]) for r in durable.rows]
    left.plot(answered, rss, marker="o")
    left.set_xlabel("mentions answered")
    left.set_ylabel("RSS (MB)")
    left.set_title("chanctx run --http: RSS while answering")
    left.set_ylim(0, max(rss) * 1.2)
    stored = tables(found["Memory per message and intake"])[0]
    for row in stored.rows:
        count = number(row[stored.column("messages stored")])
        before = number(row[stored.column("RSS before")])
        after = number(row[stored.column("RSS after")])
        right.plot(
            [0, count],
            [before, after],
            marker="o",
            label=row[0].split(",")[0].split("(")[0].strip(),
        )
    right.set_xlabel("messages stored")
    right.set_ylabel("RSS (MiB)")
    right.set_title("RSS against stored messages")
    right.legend(fontsize=7)
    return figure


def _throughput(found: dict[str, str]) -> Figure:
    table = tables(found["Scale-out on Redis"])[0]
    figure, ax = plt.subplots(figsize=(6.5, 4))
    setups = ["one process", "one replica", "two replicas"]
    latencies = sorted({row[0] for row in table.rows}, key=number, reverse=True)
    width = 0.38
    for offset, latency in enumerate(latencies):
        rows = [r for r in table.rows if r[0] == latency]
        values = [
            number(next(r for r in rows if s in r[1])[table.column("mentions/s")]) for s in setups
        ]
        xs = [i + (offset - 0.5) * width for i in range(len(setups))]
        ax.bar(xs, values, width, label=f"Claude takes {latency}")
    ax.set_xticks(range(len(setups)), setups)
    ax.set_ylabel("mentions answered a second")
    ax.set_title("Throughput with one and two replicas")
    ax.legend(fontsize=8)
    return figure


STORE_SERVED = "Channel store served"
STORE_RESTART = "Channel store restart"


def _table_with(section: str, column: str) -> Table:
    """The first table of ``section`` with a header cell ``column``."""
    for table in tables(section):
        if column in table.header:
            return table
    raise ValueError(f"no table with a {column!r} column in the section")


def store_memory_points(section: str) -> dict[str, list[tuple[float, float]]]:
    """From "Channel store served": messages stored -> RssAnon (MiB), once ready and after the
    first searches, one point per restart."""
    table = _table_with(section, "RssAnon ready")
    stored = table.column("messages stored")
    series = {"once ready": "RssAnon ready", "after the first searches": "after first searches"}
    return {
        label: [(number(r[stored]), number(r[table.column(column)])) for r in table.rows]
        for label, column in series.items()
    }


def store_latency_points(section: str) -> dict[str, list[tuple[float, float]]]:
    """From "Channel store served": channel size -> p50 (ms) of each way of searching it (a cell
    reads "p50 / p95")."""
    table = _table_with(section, "served / FTS5")
    size = table.column("channel size")
    series = {
        "served by chanctx run --http": "served",
        "in-memory index, whole channel": "in-memory",
        "SQLite FTS5 bm25()": "FTS5 bm25()",
    }
    return {
        label: [(number(r[size]), number(r[table.column(column)])) for r in table.rows]
        for label, column in series.items()
    }


def restart_latency_points(section: str) -> dict[str, list[tuple[float, float]]]:
    """From "Channel store restart": the served, in-memory and FTS5 p50s by channel size, and
    ``channel_context`` itself timed in process (its own table)."""
    points = store_latency_points(section)
    table = _table_with(section, "channel_context in process")
    size, tool = table.column("channel size"), table.column("channel_context in process")
    points["channel_context in process (no HTTP)"] = [
        (number(r[size]), number(r[tool])) for r in table.rows
    ]
    return points


def _store_memory(found: dict[str, str]) -> Figure:
    figure, ax = plt.subplots(figsize=(6.5, 4))
    for label, points in store_memory_points(found[STORE_SERVED]).items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.axhline(400 * 10**6 / 2**20, color="grey", linestyle="--", label="target (400 MB)")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("messages stored")
    ax.set_ylabel("RssAnon (MiB)")
    ax.set_title("chanctx run --http: memory against stored messages")
    ax.legend(fontsize=8)
    return figure


def _store_latency(found: dict[str, str]) -> Figure:
    return _latency_figure(
        store_latency_points(found[STORE_SERVED]),
        "Search through the channel store against channel size",
    )


def _restart_latency(found: dict[str, str]) -> Figure:
    return _latency_figure(
        restart_latency_points(found[STORE_RESTART]),
        "Search on the 10,000,000-message store after a restart",
    )


def _latency_figure(series: dict[str, list[tuple[float, float]]], title: str) -> Figure:
    figure, ax = plt.subplots(figsize=(6.5, 4))
    for label, points in series.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.axhline(10, color="grey", linestyle="--", label="target at 1M (10 ms)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages in the channel")
    ax.set_ylabel("p50 latency (ms)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return figure


DRAWINGS: dict[str, tuple[str, tuple[str, ...], Callable[[dict[str, str]], Figure]]] = {
    "recall.png": (
        "Recall by LoCoMo question category",
        ("Search quality (LoCoMo)",),
        _recall,
    ),
    "search_latency.png": (
        "Search latency against channel size",
        ("Search speed",),
        _search_latency,
    ),
    "memory.png": (
        "Memory against answers and stored messages",
        ("Memory under load (durable answering)", "Memory per message and intake"),
        _memory,
    ),
    "throughput.png": (
        "Throughput with one and two replicas",
        ("Scale-out on Redis",),
        _throughput,
    ),
    "store_memory.png": (
        "Memory against stored messages (channel store, real process)",
        (STORE_SERVED,),
        _store_memory,
    ),
    "store_search_latency.png": (
        "Search latency against channel size (channel store, real process)",
        (STORE_SERVED,),
        _store_latency,
    ),
    "store_restart_latency.png": (
        "Search latency on the 10,000,000-message store after a restart (real process)",
        (STORE_RESTART,),
        _restart_latency,
    ),
}


def draw_all(found: dict[str, str], out: Path) -> tuple[list[str], list[str]]:
    """Draw every picture whose sections exist; (files written, why each other one was not)."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    missing: list[str] = []
    for name, (_title, needs, draw) in DRAWINGS.items():
        absent = [s for s in needs if s not in found]
        if absent:
            missing.append(f"{name}: no section {', '.join(absent)}")
            continue
        figure = draw(found)
        figure.tight_layout(rect=(0, 0, 1, 0.92))
        # No timestamp in the PNG, so an unchanged table draws a byte-identical file.
        figure.savefig(out / name, dpi=100, metadata={"Software": None})
        plt.close(figure)
        written.append(name)
    return written, missing


def main() -> int:
    written, missing = draw_all(sections(), PLOTS)
    for line in missing:
        print(f"not drawn: {line}", file=sys.stderr)
    lines = [
        "`python -m bench plots` draws these from the tables above (run it after the benches it "
        "reads; `python -m bench all` runs it last).",
        "",
    ]
    for name in written:
        lines += [f"### {DRAWINGS[name][0]}", "", f"![{DRAWINGS[name][0]}](plots/{name})", ""]
    write_section("Plots", "\n".join(lines))
    print(f"drew {len(written)} plots in {PLOTS}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
