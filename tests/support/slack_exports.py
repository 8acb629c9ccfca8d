"""Slack exports made by the tests: a small workspace written the way Slack writes its export.

``workspace_export()`` returns the files (relative name -> bytes); ``write_zip`` and
``write_folder`` lay them out as the ZIP an admin downloads or the folder it unpacks to.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

TEAM = "T0EXPORT1"
GENERAL, SECRET, DM, GROUP = "C0GENERAL1", "G0SECRET01", "D0DIRECT01", "G0MPIM0001"
ANA, BEN, BOT = "U0ANA00001", "U0BEN00001", "U0BOT00001"


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=1).encode()


def workspace_export() -> dict[str, bytes]:
    """Public, private, DM and group-DM conversations; threads, edits, files, bots, joins,
    reactions, pins and non-ASCII text."""
    users = [
        {"id": ANA, "team_id": TEAM, "name": "ana", "real_name": "Ana Lima",
         "profile": {"real_name": "Ana Lima", "display_name": "ana"}},
        {"id": BEN, "team_id": TEAM, "name": "ben", "real_name": "Benoît Ørsted",
         "profile": {"real_name": "Benoît Ørsted", "display_name": "benoît"}},
        {"id": BOT, "team_id": TEAM, "name": "deploybot", "is_bot": True, "profile": {"real_name": "Deploy Bot"}},
    ]  # fmt: skip
    general_day1 = [
        {"type": "message", "subtype": "channel_join", "user": ANA, "ts": "1714550400.000100",
         "text": "<@U0ANA00001> has joined the channel"},
        {"type": "message", "user": ANA, "ts": "1714550460.000200",
         "text": "Checkout 502s after the deploy, looking", "thread_ts": "1714550460.000200",
         "reply_count": 2, "replies": [{"user": BEN, "ts": "1714550520.000300"},
                                       {"user": ANA, "ts": "1714550580.000400"}],
         "reactions": [{"name": "eyes", "users": [BEN], "count": 1}]},
        {"type": "message", "user": BEN, "ts": "1714550520.000300",
         "thread_ts": "1714550460.000200", "parent_user_id": ANA,
         "text": "Rolled back v41 — ça marche 🎉"},
        {"type": "message", "user": ANA, "ts": "1714550580.000400",
         "thread_ts": "1714550460.000200", "parent_user_id": ANA,
         "text": "Confirmed, 502s gone", "edited": {"user": ANA, "ts": "1714550600.000000"}},
        {"type": "message", "subtype": "bot_message", "bot_id": "B0DEPLOY01", "username": "deploybot",
         "ts": "1714550700.000500", "text": "",
         "attachments": [{"fallback": "deploy v42 started", "text": "deploy v42 started"}]},
    ]  # fmt: skip
    general_day2 = [
        {"type": "message", "user": BEN, "ts": "1714636800.000100",
         "text": "Postmortem draft attached",
         "files": [{"id": "F0POSTMORT", "name": "postmortem.pdf", "mimetype": "application/pdf",
                    "url_private": "https://files.slack.com/files-pri/T0EXPORT1-F0POSTMORT/pm.pdf"}]},
        {"type": "message", "subtype": "channel_topic", "user": ANA, "ts": "1714636860.000200",
         "text": "set the channel topic: incidents only", "topic": "incidents only"},
    ]  # fmt: skip
    return {
        "users.json": _json(users),
        "channels.json": _json([
            {"id": GENERAL, "name": "general", "created": "1714550000", "members": [ANA, BEN],
             "topic": {"value": "incidents only"}, "purpose": {"value": "all hands"},
             "pins": [{"id": "1714550460.000200", "type": "C", "user": ANA}]},
        ]),
        "groups.json": _json([{"id": SECRET, "name": "secret-ops", "members": [ANA]}]),
        "dms.json": _json([{"id": DM, "members": [ANA, BEN]}]),
        "mpims.json": _json([{"id": GROUP, "name": "mpdm-ana--ben--bot-1", "members": [ANA, BEN, BOT]}]),
        "general/2024-05-01.json": _json(general_day1),
        "general/2024-05-02.json": _json(general_day2),
        "secret-ops/2024-05-01.json": _json(
            [{"type": "message", "user": ANA, "ts": "1714550800.000100", "text": "Rotate the key"}]
        ),
        f"{DM}/2024-05-01.json": _json(
            [{"type": "message", "user": BEN, "ts": "1714550900.000100", "text": "ping"}]
        ),
        "mpdm-ana--ben--bot-1/2024-05-01.json": _json(
            [{"type": "message", "user": ANA, "ts": "1714551000.000100", "text": "日本語のテキスト"}]
        ),
    }  # fmt: skip


def write_zip(files: dict[str, bytes], path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def write_folder(files: dict[str, bytes], root: Path) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root
