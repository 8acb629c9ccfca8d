"""Reading a Slack export: every kind of conversation, quirks of a real export, hostile files.

The real export is Slack's own (2016, vendored in tests/data/slack_export with its license);
the others are written by tests/slack_exports.py.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from chanctx.bot.export import (
    ExportChannel,
    ExportMessage,
    ExportUser,
    MemberRefused,
    NotAnExport,
    Problem,
    open_source,
    read_export,
)
from chanctx.bot.export.source import FolderSource, ZipSource

from tests.support.paths import DATA
from tests.support.slack_exports import (
    DM,
    GENERAL,
    GROUP,
    SECRET,
    workspace_export,
    write_folder,
    write_zip,
)

REAL = DATA / "slack_export" / "hfaran-slack-export-viewer-testarchive.zip"


def records(path: Path, **kwargs: object) -> list[object]:
    source = open_source(path)
    try:
        return list(read_export(source, **kwargs))  # type: ignore[arg-type]
    finally:
        source.close()


def test_a_real_slack_export_is_read_whole() -> None:
    found = records(REAL)
    kinds = Counter(type(r).__name__ for r in found)
    assert kinds == {"ExportMessage": 158, "ExportUser": 4, "ExportChannel": 2}
    channels = {r.name: r for r in found if isinstance(r, ExportChannel)}
    assert channels["enrique"].id == "C0JGLMMNX" and channels["enrique"].kind == "public"
    subtypes = Counter(r.message.get("subtype") for r in found if isinstance(r, ExportMessage))
    assert subtypes["bot_message"] > 0 and subtypes["channel_join"] > 0
    # Its quirks come through as Slack wrote them: an integration's empty text, a singular file.
    assert any("file" in r.message for r in found if isinstance(r, ExportMessage))
    assert {r.real_name for r in found if isinstance(r, ExportUser)} >= {"Harry Potter"}


@pytest.mark.parametrize("layout", ["zip", "folder"])
def test_every_kind_of_conversation_is_read_from_a_zip_or_its_folder(
    tmp_path: Path, layout: str
) -> None:
    files = workspace_export()
    path = (
        write_zip(files, tmp_path / "export.zip")
        if layout == "zip"
        else write_folder(files, tmp_path / "export")
    )
    found = records(path)
    assert not [r for r in found if isinstance(r, Problem)]
    channels = {r.id: r for r in found if isinstance(r, ExportChannel)}
    assert {c: channels[c].kind for c in channels} == {
        GENERAL: "public", SECRET: "private", DM: "dm", GROUP: "mpim"
    }  # fmt: skip
    assert channels[GENERAL].pins == ("1714550460.000200",)
    assert channels[GENERAL].topic == "incidents only"
    messages = [r for r in found if isinstance(r, ExportMessage)]
    per_channel = Counter(m.channel.id for m in messages)
    assert per_channel == {GENERAL: 7, SECRET: 1, DM: 1, GROUP: 1}
    texts = {m.message["text"] for m in messages}
    assert "Rolled back v41 — ça marche 🎉" in texts and "日本語のテキスト" in texts
    # Users come before conversations, conversations before their messages.
    order = [type(r).__name__ for r in found]
    assert order.index("ExportChannel") > max(i for i, k in enumerate(order) if k == "ExportUser")


def test_only_the_named_conversations_are_read(tmp_path: Path) -> None:
    path = write_zip(workspace_export(), tmp_path / "export.zip")
    found = records(path, only={"secret-ops", DM})
    assert {m.channel.id for m in found if isinstance(m, ExportMessage)} == {SECRET, DM}


def test_bad_files_are_named_one_line_each_and_the_rest_is_read(tmp_path: Path) -> None:
    files = workspace_export()
    files["general/2024-05-03.json"] = b'[{"type": "message", "ts": "1714723200.000100",'
    files["general/2024-05-04.json"] = json.dumps(
        [{"type": "message", "text": "no ts"}, {"type": "message", "ts": "yesterday"},
         "a string", {"type": "message", "ts": "1714809600.000100", "text": "kept"}]
    ).encode()  # fmt: skip
    files["general/notes.txt"] = b"not a day"
    files["orphan/2024-05-01.json"] = b"[]"
    files["secret-ops/2024-05-02.json"] = b"\xff\xfe not utf-8"
    found = records(write_zip(files, tmp_path / "export.zip"))
    problems = [str(r) for r in found if isinstance(r, Problem)]
    assert problems == [
        "orphan/: a folder no conversation list names; skipped",
        "general/2024-05-03.json: not JSON (line 1, column 48: Expecting property name enclosed"
        " in double quotes)",
        "general/2024-05-04.json #0: no ts",
        "general/2024-05-04.json #1: ts 'yesterday' is not a Slack ts",
        "general/2024-05-04.json #2: not a message object",
        "general/notes.txt: not a day file (YYYY-MM-DD.json); skipped",
        "secret-ops/2024-05-02.json: not UTF-8 (byte 0)",
    ]
    texts = [r.message.get("text") for r in found if isinstance(r, ExportMessage)]
    assert "kept" in texts and len(texts) == 11


def test_member_names_that_leave_the_export_are_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in workspace_export().items():
            archive.writestr(name, data)
        archive.writestr("../escape.json", b"[]")
        archive.writestr("/etc/passwd.json", b"[]")
        archive.writestr("general/..\\..\\x.json", b"[]")
    problems = [str(r) for r in records(path) if isinstance(r, Problem)]
    assert "../escape.json: refused, a '..' in the path; not read" in problems
    assert "/etc/passwd.json: refused, an absolute path; not read" in problems
    assert any(p.startswith("general/..\\..\\x.json") for p in problems)
    source = ZipSource(path)
    with pytest.raises(MemberRefused, match=re.escape("refused, a '..' in the path")):
        source.read("../escape.json")


def test_a_symbolic_link_in_a_folder_is_not_followed(tmp_path: Path) -> None:
    root = write_folder(workspace_export(), tmp_path / "export")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps([{"type": "message", "ts": "1.000001", "text": "SECRET"}]))
    os.symlink(outside, root / "general" / "2024-05-09.json")
    found = records(root)
    assert "SECRET" not in {r.message.get("text") for r in found if isinstance(r, ExportMessage)}
    assert "general/2024-05-09.json: refused, a symbolic link" in [
        str(r) for r in found if isinstance(r, Problem)
    ]


def test_a_member_that_expands_past_the_limit_is_refused(tmp_path: Path) -> None:
    files = workspace_export()
    files["general/2024-05-05.json"] = b"[" + b" " * 5_000_000 + b"]"  # compresses to kilobytes
    path = write_zip(files, tmp_path / "bomb.zip")
    assert path.stat().st_size < 100_000
    source = ZipSource(path, limit=1_000_000)
    found = list(read_export(source))
    assert "general/2024-05-05.json: 5,000,002 bytes, over the 1,000,000 limit" in [
        str(r) for r in found if isinstance(r, Problem)
    ]
    assert sum(isinstance(r, ExportMessage) for r in found) == 10
    folder = FolderSource(write_folder(files, tmp_path / "unpacked"), limit=1_000_000)
    assert any("over the 1,000,000-byte limit" in str(r) for r in read_export(folder))


@pytest.mark.parametrize("make", ["truncated", "not_a_zip", "missing"])
def test_what_is_not_an_export_at_all_is_named(tmp_path: Path, make: str) -> None:
    path = tmp_path / "export.zip"
    if make == "truncated":
        whole = write_zip(workspace_export(), tmp_path / "whole.zip").read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    elif make == "not_a_zip":
        path.write_text("hello")
    with pytest.raises(NotAnExport, match=str(path)):
        open_source(path)
