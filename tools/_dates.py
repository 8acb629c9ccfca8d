"""Months and years an intent names, and which messages were posted then ("date:" signal).

"The outage in March", "what we decided in 2024": a message posted in a period the intent
names is raised (``Ranking.date_boost``). UTC, vectorised over the candidates' timestamps.
"""

from __future__ import annotations

import calendar
import re

import numpy as np
import numpy.typing as npt

__all__ = ["Period", "in_periods", "label", "periods"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

_MONTHS = {name.casefold(): number for number, name in enumerate(calendar.month_name) if name}
_YEAR = r"(?:19|20)\d\d"
_MONTH_DATE = re.compile(
    rf"\b(?P<month>{'|'.join(_MONTHS)})\b(?P<day>\s+\d{{1,2}}(?:st|nd|rd|th)?\b)?"
    rf"(?:\s*,?\s*(?P<year>{_YEAR})\b)?",
    re.IGNORECASE,
)
_DAY_BEFORE = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?$", re.IGNORECASE)
# A year alone only after a word that makes it one ("in 2024"; not "2000 rps").
_YEAR_ALONE = re.compile(
    rf"\b(?:in|during|of|since|from|until|through|throughout|early|late|mid|year)\s+"
    rf"(?P<year>{_YEAR})\b",
    re.IGNORECASE,
)

Period = tuple[int | None, int | None]  # (year, month); None: any


def periods(intent: str) -> list[Period]:
    """The (year, month) periods an intent names, in order; None means "any".

    "in July" -> (None, 7); "July 8, 2023" and "8 July 2023" -> (2023, 7); "in 2024" ->
    (2024, None). "May" is also a verb: it counts only next to a day or a year ("May 8",
    "8 May", "May 2024"); a year alone only after "in", "during", "since"... ("2000 rps" is no
    date).
    """
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    period: Period
    for match in _MONTH_DATE.finditer(intent):
        month = _MONTHS[match["month"].casefold()]
        day_before = bool(_DAY_BEFORE.search(intent[: match.start()]))
        if month == 5 and not (match["day"] or match["year"] or day_before):
            continue
        taken.append(match.span())
        period = (int(match["year"]) if match["year"] else None, month)
        if period not in found:
            found.append(period)
    for match in _YEAR_ALONE.finditer(intent):
        if any(start <= match.start("year") < end for start, end in taken):
            continue
        period = (int(match["year"]), None)
        if period not in found:
            found.append(period)
    return found


def label(period: Period) -> str:
    year, month = period
    if month is None:
        return str(year)
    name = calendar.month_name[month]
    return name if year is None else f"{name} {year}"


def in_periods(seconds: Floats, wanted: list[Period]) -> Ints:
    """Per message, the index of the first period it was posted in (UTC), or -1."""
    months = seconds.astype("int64").astype("datetime64[s]").astype("datetime64[M]")
    since_1970 = months.astype(np.int64)
    years, month_numbers = since_1970 // 12 + 1970, since_1970 % 12 + 1
    found = np.full(len(seconds), -1, dtype=np.int64)
    for number, (year, month) in reversed(list(enumerate(wanted))):
        match = np.ones(len(seconds), dtype=np.bool_)
        if year is not None:
            match &= years == year
        if month is not None:
            match &= month_numbers == month
        found[match] = number
    return found
