"""bench/plots.py reads the "Channel store served" and "Channel store restart" tables into the
points it draws: RssAnon against messages stored, and search p50 against channel size for each
way of searching."""

from __future__ import annotations

import pytest

from bench.plots import restart_latency_points, store_latency_points, store_memory_points

SECTION = """
Intro words with a number 1,500,000 that is not a table.

| data dir | events/s | stored afterwards |
|---|---:|---:|
| on disk | 1,900 | 20,000 |

| messages stored | bytes on disk per message | spawn to /readyz 200 | port open to /readyz 200 | spawn to first answer | oldest message found | RssAnon ready | RssAnon after first searches | Slack reads |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| 10,000 | 310 B | 4.10 s | 0.20 s | 4.90 s | no | 120 MiB | 131 MiB | 0 |
| 110,000 | 250 B | 4.30 s | 0.21 s | 5.20 s | no | 121 MiB | 140 MiB | 0 |
| 1,110,000 | 240 B | 5.00 s | 0.30 s | 7.00 s | yes | 125 MiB | 1,210 MiB | 0 |

| channel size | served | in-memory, whole channel | FTS5 bm25() | served / in-memory | served / FTS5 |
|---:|---:|---:|---:|---:|---:|
| 10,000 | 21.0 / 40.5 | 8.0 / 15.0 | 9.1 / 16.0 | 2.63x | 2.31x |
| 1,000,000 | 30.2 / 60.0 | 536.8 / 1,587.5 | 1,203.5 / 2,054.8 | 0.06x | 0.03x |
"""


def test_memory_points_are_stored_count_against_rss_anon() -> None:
    points = store_memory_points(SECTION)
    assert points == {
        "once ready": [(10_000, 120), (110_000, 121), (1_110_000, 125)],
        "after the first searches": [(10_000, 131), (110_000, 140), (1_110_000, 1_210)],
    }


def test_latency_points_take_the_p50_of_each_way_of_searching() -> None:
    points = store_latency_points(SECTION)
    assert points["served by chanctx run --http"] == [(10_000, 21.0), (1_000_000, 30.2)]
    assert points["in-memory index, whole channel"] == [(10_000, 8.0), (1_000_000, 536.8)]
    assert points["SQLite FTS5 bm25()"] == [(10_000, 9.1), (1_000_000, 1_203.5)]


def test_a_section_without_the_tables_is_refused_not_drawn_empty() -> None:
    with pytest.raises(ValueError, match="'RssAnon ready'"):
        store_memory_points("| a | b |\n|---|---|\n| 1 | 2 |\n")
    with pytest.raises(ValueError, match="'served / FTS5'"):
        store_latency_points("no tables at all")


RESTART = (
    SECTION
    + """
| channel size | served (query API, HTTP) | channel_context in process | channel_context / in-memory | channel_context / FTS5 |
|---:|---:|---:|---:|---:|
| 10,000 | 21.0 / 40.5 | 1.0 / 1.1 | 0.13x | 0.11x |
| 1,000,000 | 30.2 / 60.0 | 27.1 / 81.1 | 0.05x | 0.02x |
"""
)


def test_restart_points_add_the_tool_timed_in_process() -> None:
    points = restart_latency_points(RESTART)
    assert points["channel_context in process (no HTTP)"] == [(10_000, 1.0), (1_000_000, 27.1)]
    assert points["served by chanctx run --http"] == [(10_000, 21.0), (1_000_000, 30.2)]
    with pytest.raises(ValueError, match="'channel_context in process'"):
        restart_latency_points(SECTION)
