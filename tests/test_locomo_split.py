"""bench/locomo.py: evidence ids normalised as the data README says, conversations as channels."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.locomo import DATA, HALVES, load, messages_of, names_of, normalise_evidence

VALID = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D30:5", "D1:3"}


@pytest.mark.parametrize(
    ("raw", "resolved", "dropped"),
    [
        ("D1:3", ["D1:3"], []),
        ("D8:6; D9:17", ["D8:6", "D9:17"], []),
        ("D9:1 D4:4 D4:6", ["D9:1", "D4:4", "D4:6"], []),
        ("D:11:26", ["D11:26"], []),
        ("D30:05", ["D30:5"], []),
        ("D", [], ["D"]),
        ("D10:19", [], ["D10:19"]),  # well formed, but the conversation has no such turn
    ],
)
def test_evidence_ids_are_normalised_or_dropped(
    raw: str, resolved: list[str], dropped: list[str]
) -> None:
    assert normalise_evidence(raw, VALID) == (resolved, dropped)


@pytest.mark.skipif(not DATA.exists(), reason="LoCoMo data not present")
def test_the_data_loads_with_the_known_defects_reported() -> None:
    conversations, defects = load()
    assert len(conversations) == 10 and sorted(len(h) for h in HALVES.values()) == [5, 5]
    assert sum(len(c.turns) for c in conversations) == 5_882
    assert sum(len(c.questions) for c in conversations) == 1_986 - 4
    assert len(defects.no_evidence) == 4 and {c for _, c, _ in defects.no_evidence} == {3}
    assert sorted(raw for _, raw, _ in defects.dropped) == ["D", "D10:19", "D4:36"]
    assert len(defects.resolved) == 6  # 9 malformed entries in all, as the README counts

    first = conversations[0]
    messages = messages_of(first)
    assert [m.ts for m in messages] == sorted((m.ts for m in messages), key=float)
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()  # "1:56 pm on 8 May, 2023"
    assert float(messages[0].ts) == start and float(messages[1].ts) == start + 60
    names = names_of(first)
    assert set(names.users.values()) == set(first.speakers)
    assert {names.users[m.user_id] for m in messages} == set(first.speakers)
    captioned = [
        (turn, message) for turn, message in zip(first.turns, messages, strict=True) if turn.caption
    ]
    assert captioned and all(m.files[0].title == t.caption for t, m in captioned)
