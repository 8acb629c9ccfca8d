"""bench/plots.py: the pictures are drawn from RESULTS.md's own tables.

Draws into a temporary folder from the committed RESULTS.md (no benchmark runs here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench._results import sections
from bench._tables import number, tables
from bench.plots import DRAWINGS, draw_all
from tests.support.paths import ROOT

PNG = b"\x89PNG\r\n\x1a\n"


def test_tables_are_read_back_with_their_numbers() -> None:
    text = "intro\n\n| setup | mentions/s |\n|---|---:|\n| **one** | 6.4 |\n| `two` | 1,270.5 |\n\nend\n"
    (table,) = tables(text)
    assert table.header == ("setup", "mentions/s")
    assert table.row("two") == ("two", "1,270.5")
    assert number(table.row("two")[table.column("mentions/s")]) == 1270.5
    assert number("2.00x") == 2.0


def test_a_cell_without_a_number_is_named() -> None:
    with pytest.raises(ValueError, match="'n/a'"):
        number("n/a")


@pytest.mark.slow
def test_every_key_picture_is_drawn_from_the_committed_results(tmp_path: Path) -> None:
    written, missing = draw_all(sections(), tmp_path)
    assert missing == []
    assert sorted(written) == sorted(DRAWINGS)
    for name in written:
        assert (tmp_path / name).read_bytes().startswith(PNG)


@pytest.mark.slow
def test_a_missing_section_is_named_and_the_others_still_drawn(tmp_path: Path) -> None:
    found = sections()
    del found["Scale-out on Redis"]
    written, missing = draw_all(found, tmp_path)
    assert "throughput.png" not in written and "recall.png" in written
    assert missing == ["throughput.png: no section Scale-out on Redis"]


def test_results_show_every_picture() -> None:
    plots = sections()["Plots"]
    for name in DRAWINGS:
        assert f"(plots/{name})" in plots
        assert (ROOT / "bench" / "plots" / name).exists()
