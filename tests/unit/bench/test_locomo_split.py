"""bench/locomo.py: evidence ids normalised as the data README says, conversations as channels."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.locomo import HALVES, load, messages_of, names_of, normalise_evidence

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


def small_locomo(path: Path) -> Path:
    """Two conversations in LoCoMo's file format (written here: the real set is CC BY-NC and
    stays outside the project), with the kinds of evidence defects the real file has."""

    def conversation(sample_id: str, a: str, b: str) -> dict[str, Any]:
        talk: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        for session, when in ((1, "1:56 pm on 8 May, 2023"), (2, "10:05 am on 9 May, 2023")):
            talk[f"session_{session}_date_time"] = when
            talk[f"session_{session}"] = [
                {"speaker": a, "dia_id": f"D{session}:1", "text": f"{a} says hi in {session}"},
                {"speaker": b, "dia_id": f"D{session}:2", "text": "A photo of my dog",
                 "blip_caption": "a photo of a dog on a beach"},
                {"speaker": a, "dia_id": f"D{session}:3", "text": "Lovely dog!"},
            ]  # fmt: skip
        qa = [
            {"question": "Who has a dog?", "evidence": ["D1:2"], "category": 1},
            {"question": "When?", "evidence": ["D:2:01; D1:3"], "category": 2},
            {"question": "Lost", "evidence": ["D", "D9:9"], "category": 3},
        ]
        return {"sample_id": sample_id, "conversation": talk, "qa": qa}

    path.write_text(
        json.dumps([conversation("conv-1", "Ana", "Ben"), conversation("conv-2", "Cy", "Di")])
    )
    return path


def test_the_file_format_loads_with_its_defects_reported(tmp_path: Path) -> None:
    conversations, defects = load(small_locomo(tmp_path / "locomo.json"))
    assert [len(c.turns) for c in conversations] == [6, 6]
    assert [len(c.questions) for c in conversations] == [2, 2]  # "Lost" has no evidence left
    assert [c for _, c, _ in defects.no_evidence] == [3, 3]
    assert sorted(raw for _, raw, _ in defects.dropped) == ["D", "D", "D9:9", "D9:9"]
    assert {resolved for _, _, resolved in defects.resolved} == {"D2:1, D1:3"}

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
    assert len(HALVES) == 2
