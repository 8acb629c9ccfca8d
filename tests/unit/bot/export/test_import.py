"""``chanctx import``'s core: a Slack export into the channel store, idempotent, and never
bringing back what was deleted or undoing an edit seen live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chanctx.bot.export.importer import ImportRefused, import_export
from chanctx.cache.channel_store import MessageDeleted, MessageEdited, SqliteChannelStore

from tests.support.paths import DATA
from tests.support.slack_exports import (
    ANA,
    DM,
    GENERAL,
    GROUP,
    SECRET,
    TEAM,
    workspace_export,
    write_zip,
)

REAL = DATA / "slack_export" / "hfaran-slack-export-viewer-testarchive.zip"


@pytest.fixture
def store(tmp_path: Path) -> SqliteChannelStore:
    opened = SqliteChannelStore(tmp_path / "data")
    yield opened  # type: ignore[misc]
    opened.close()


def texts(store: SqliteChannelStore, channel: str) -> list[str]:
    return [m.text for m in store.messages(TEAM, channel)]


def test_a_real_export_is_imported_as_live_intake_would_keep_it(store: SqliteChannelStore) -> None:
    problems: list[str] = []
    summary = import_export(REAL, store, on_problem=problems.append)
    assert problems == [] and summary.exit_status == 0
    assert (summary.read, summary.channels, summary.users) == (158, 2, 4)
    # Joins, bot additions and file comments carry no conversation, live or imported.
    assert summary.ignored == 12 and summary.imported == 146
    team = "T0BMHLSRH"  # from its users.json
    assert store.channel_names(team) == {"C0JGLMMNX": "enrique", "C0JL6CGQ2": "traveling-sailor"}
    assert store.user_names(team)["U0BMQB6JE"] == "hamza"
    assert len(store.messages(team, "C0JGLMMNX")) + len(store.messages(team, "C0JL6CGQ2")) == 146
    assert summary.line().startswith("imported 146 of 158 messages from 2 conversations")


def test_importing_twice_adds_nothing_and_a_later_export_only_what_is_new(
    store: SqliteChannelStore, tmp_path: Path
) -> None:
    files = workspace_export()
    first = import_export(write_zip(files, tmp_path / "a.zip"), store)
    assert first.imported == 9 and first.ignored == 1  # the join
    again = import_export(write_zip(files, tmp_path / "a.zip"), store)
    assert (again.imported, again.known) == (0, 9)
    files["general/2024-05-03.json"] = json.dumps(
        [{"type": "message", "user": ANA, "ts": "1714723200.000100", "text": "new day"}]
    ).encode()
    later = import_export(write_zip(files, tmp_path / "b.zip"), store)
    assert (later.imported, later.known) == (1, 9)
    assert texts(store, GENERAL).count("new day") == 1
    assert {c: len(store.messages(TEAM, c)) for c in (SECRET, DM, GROUP)} == {
        SECRET: 1, DM: 1, GROUP: 1
    }  # fmt: skip


def test_threads_files_pins_and_reactions_arrive(store: SqliteChannelStore, tmp_path: Path) -> None:
    import_export(write_zip(workspace_export(), tmp_path / "a.zip"), store)
    replies = store.replies(TEAM, GENERAL, "1714550460.000200")
    assert [r.text for r in replies][-2:] == [
        "Rolled back v41 — ça marche 🎉",
        "Confirmed, 502s gone",
    ]
    root = store.get(TEAM, GENERAL, "1714550460.000200")
    assert root is not None and root.reactions[0].name == "eyes"
    assert store.pins(TEAM, GENERAL) == ["1714550460.000200"]
    file = store.file(TEAM, "F0POSTMORT")
    assert file is not None and file.download_url.endswith("pm.pdf")  # kept for a later download


def test_a_message_deleted_live_is_not_brought_back_and_an_edit_not_undone(
    store: SqliteChannelStore, tmp_path: Path
) -> None:
    export = write_zip(workspace_export(), tmp_path / "a.zip")
    import_export(export, store)
    store.write([
        MessageDeleted(TEAM, GENERAL, "1714636800.000100"),
        MessageEdited(TEAM, GENERAL, "1714550460.000200", "Checkout 502s: fixed", "1714600000.000000"),
    ])  # fmt: skip
    again = import_export(export, store)
    assert again.deleted == 1 and again.imported == 0
    assert "Postmortem draft attached" not in texts(store, GENERAL)
    root = store.get(TEAM, GENERAL, "1714550460.000200")
    assert root is not None and root.text == "Checkout 502s: fixed"


def test_bad_messages_are_named_and_the_rest_imported(
    store: SqliteChannelStore, tmp_path: Path
) -> None:
    files = workspace_export()
    files["general/2024-05-04.json"] = json.dumps(
        [{"type": "message", "text": "no ts"},
         {"type": "message", "ts": "1714809600.000100", "user": ANA, "reply_count": -3},
         {"type": "message", "ts": "1714809601.000100", "user": ANA, "text": "kept"}]
    ).encode()  # fmt: skip
    files["secret-ops/2024-05-02.json"] = b"[{"
    problems: list[str] = []
    summary = import_export(write_zip(files, tmp_path / "a.zip"), store, on_problem=problems.append)
    assert summary.exit_status == 1 and summary.refused == 3
    assert problems == [
        "general/2024-05-04.json #0: no ts",
        "general/2024-05-04.json #1: reply_count -3 is negative",
        "secret-ops/2024-05-02.json: not JSON (line 1, column 3: Expecting property name "
        "enclosed in double quotes)",
    ]
    assert "kept" in texts(store, GENERAL) and summary.imported == 10


def test_what_is_not_an_export_imports_nothing(store: SqliteChannelStore, tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ImportRefused, match="not a readable ZIP"):
        import_export(junk, store)
    empty = write_zip({"readme.txt": b"hi"}, tmp_path / "empty.zip")
    with pytest.raises(ImportRefused, match="no conversation found"):
        import_export(empty, store, team=TEAM)
    files = workspace_export()
    files["users.json"] = b"[]"
    with pytest.raises(ImportRefused, match="--team"):
        import_export(write_zip(files, tmp_path / "noteam.zip"), store)
    assert import_export(write_zip(files, tmp_path / "noteam.zip"), store, team=TEAM).imported == 9
