"""Read the Markdown tables of bench/RESULTS.md back into numbers.

The plots are drawn from what the benches wrote, not from a second record kept beside it, so a
picture can never disagree with the table it illustrates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Table", "number", "tables"]

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Table:
    """One Markdown table: its header cells and its rows, each cell stripped of emphasis."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def column(self, name: str) -> int:
        """The index of the first header cell containing ``name``."""
        for index, cell in enumerate(self.header):
            if name in cell:
                return index
        raise KeyError(f"no column {name!r} in {self.header}")

    def row(self, label: str) -> tuple[str, ...]:
        """The first row whose first cell contains ``label``."""
        for row in self.rows:
            if label in row[0]:
                return row
        raise KeyError(f"no row {label!r} in table {self.header}")


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip().strip("|")
    return tuple(cell.strip().replace("**", "").replace("`", "") for cell in inner.split("|"))


def tables(markdown: str) -> list[Table]:
    """Every table in ``markdown``, in order."""
    found: list[Table] = []
    lines = markdown.splitlines()
    at = 0
    while at < len(lines) - 1:
        if lines[at].startswith("|") and re.match(r"^\|[\s:|-]+\|$", lines[at + 1].strip()):
            header = _cells(lines[at])
            rows = []
            at += 2
            while at < len(lines) and lines[at].startswith("|"):
                rows.append(_cells(lines[at]))
                at += 1
            found.append(Table(header, tuple(rows)))
        else:
            at += 1
    return found


def number(cell: str) -> float:
    """The first number in a cell: ``"1,021 MiB"`` -> 1021.0, ``"2.00x"`` -> 2.0."""
    match = _NUMBER.search(cell)
    if match is None:
        raise ValueError(f"no number in cell {cell!r}")
    return float(match.group().replace(",", ""))
