"""Erased Slack text leaves the data dir's files: every spelling JSON gives it, a torn line's
base64 bytes, any file of the tree but the ones skipped; a file without it is left alone."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

from chanctx.manifest_store.redaction import MARKER, Redactor, redact_file, redact_tree
from hypothesis import given
from hypothesis import strategies as st

SECRET = "the launch code is 4417 amber"


def spellings(text: str) -> list[bytes]:
    """Every way the text may sit in a file: raw UTF-8, in a JSON string either way."""
    return [
        text.encode(),
        json.dumps(text, ensure_ascii=True)[1:-1].encode(),
        json.dumps(text, ensure_ascii=False)[1:-1].encode(),
    ]


def test_a_jsonl_file_keeps_its_other_lines_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    untouched = json.dumps({"role": "user", "content": "unrelated"}) + "\n"
    quoting = json.dumps({"content": [{"text": f"[10:02] alice: {SECRET}\nnext"}]}) + "\n"
    path.write_text(untouched + quoting + untouched)
    count = redact_file(path, Redactor([SECRET]))
    assert (count.files, count.lines) == (1, 1)
    lines = path.read_text().splitlines(keepends=True)
    assert lines[0] == lines[2] == untouched
    assert json.loads(lines[1]) == {"content": [{"text": f"[10:02] alice: {MARKER}\nnext"}]}


def test_a_multi_line_message_goes_line_by_line_too(tmp_path: Path) -> None:
    text = "first line of the incident\nsecond line: db password hunter22"
    path = tmp_path / "log.jsonl"
    # Rendered with each line indented, as a context shows a message.
    rendered = "> first line of the incident\n>   second line: db password hunter22"
    path.write_text(json.dumps({"text": rendered}) + "\n")
    redact_file(path, Redactor([text]))
    assert b"hunter22" not in path.read_bytes()
    assert b"first line of the incident" not in path.read_bytes()


def test_non_json_lines_and_escaped_forms_are_redacted(tmp_path: Path) -> None:
    text = 'café "quoted" déjà vu'
    path = tmp_path / "notes.txt"
    path.write_bytes(
        b"plain: " + text.encode() + b"\n"
        + b'{"broken json: ' + json.dumps(text)[1:-1].encode() + b"\n"
        + b"ascii: " + json.dumps(text, ensure_ascii=True)[1:-1].encode() + b"\n"
    )  # fmt: skip
    redact_file(path, Redactor([text]))
    data = path.read_bytes()
    assert all(form not in data for form in spellings(text)), data


def test_a_torn_lines_base64_record_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl.torn"
    raw = ('{"role":"user","content":"' + SECRET).encode()
    path.write_text(json.dumps({"offset": 10, "bytes_b64": base64.b64encode(raw).decode()}) + "\n")
    redact_file(path, Redactor([SECRET]))
    record = json.loads(path.read_text())
    assert SECRET.encode() not in base64.b64decode(record["bytes_b64"])
    assert MARKER.encode() in base64.b64decode(record["bytes_b64"])


def test_a_file_without_the_text_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "feedback.jsonl"
    path.write_text('{"op": "answer"}\n')
    inode = path.stat().st_ino
    assert redact_file(path, Redactor([SECRET])).files == 0
    assert path.stat().st_ino == inode


def test_the_rewrite_keeps_the_files_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    path.write_text(json.dumps({"payload": {"text": SECRET}}) + "\n")
    os.chmod(path, 0o600)
    redact_file(path, Redactor([SECRET]))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["turns.jsonl"]


def test_short_texts_are_not_searched_for() -> None:
    redactor = Redactor(["ok", "+1"])
    assert not redactor
    assert redactor.text("ok, looks good +1") == "ok, looks good +1"


def test_the_tree_walk_skips_what_it_is_told_to(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    inside = tmp_path / "sessions" / "T_C_1.jsonl"
    skipped = tmp_path / "channels.sqlite3"
    for path in (inside, skipped):
        path.write_text(json.dumps({"text": SECRET}) + "\n")
    count = redact_tree(tmp_path, Redactor([SECRET]), skip=lambda p: p.name == skipped.name)
    assert (count.files, count.lines) == (1, 1)
    assert SECRET.encode() not in inside.read_bytes()
    assert SECRET.encode() in skipped.read_bytes()


words = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="[]"),
    min_size=5,
    max_size=40,
).filter(lambda t: t.strip() == t and len(t) >= 5)


@given(text=words, before=st.text(max_size=20), after=st.text(max_size=20))
def test_no_spelling_of_an_erased_text_survives(text: str, before: str, after: str) -> None:
    redactor = Redactor([text])
    line = json.dumps({"k": [before + text + after]}, ensure_ascii=False).encode()
    cleaned = redactor.line(line)
    decoded = json.loads(cleaned)["k"][0]
    assert text not in decoded
    ascii_line = json.dumps({"k": before + text + after}).encode()
    assert text not in json.loads(redactor.line(ascii_line))["k"]
