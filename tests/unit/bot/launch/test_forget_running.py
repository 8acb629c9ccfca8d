"""`chanctx forget` while a bot holds the data dir: the command asks the bot's admin route
(real loopback HTTP), which writes through the bot's committer, drops the messages from the
engine's caches and has each writer redact its own file. The route refuses a request without
the token (401), with a wrong one (403), a bad body (400); an unreachable bot is one line. A
live deletion's old text leaves the session logs and the turn journal too."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from chanctx.bot.cli import main
from chanctx.bot.core.channel_record import ChannelRecord
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.forget_request import ForgetAnswer, ForgetRequest
from chanctx.bot.core.forgetting import Erasure, Forgetting, RedactingStore
from chanctx.bot.launch.admin import ADMIN_FILE, read_admin_file, write_admin_file
from chanctx.bot.server import BackgroundServer
from chanctx.bot.server.admin_api import ADMIN_FORGET, admin_routes
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache.channel_store import SqliteChannelStore
from chanctx.manifest_store import SessionStore, TurnJournal
from starlette.applications import Starlette

from tests.support.slack_events import CHANNEL, TEAM, message, ts

SECRET = "the vpn shared secret is opal-thunder-58"
OTHER = "the release train leaves on thursday"
LOG = f"{TEAM}_{CHANNEL}_{ts(50)}.jsonl"


@dataclass
class RunningBot:
    data: Path
    engine: ContextEngine
    journal: TurnJournal
    forgetting: Forgetting
    server: BackgroundServer
    opened: RedactingStore


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[RunningBot]:
    data = tmp_path / "data"
    opened = RedactingStore(SqliteChannelStore(data))
    engine = ContextEngine(
        me=SelfIdentity(user_id="UBOT", bot_id="BBOT"), record=ChannelRecord(opened, TEAM)
    )
    engine.handle(message(ts(1), OTHER, user="U1"))
    engine.handle(message(ts(2), SECRET, user="U9"))
    sessions = SessionStore(data)
    sessions.directory.mkdir(parents=True)
    quoted = {"type": "message", "message": {"role": "user", "content": f"U9: {SECRET}"}}
    (sessions.directory / LOG).write_text(json.dumps(quoted) + "\n")
    journal = TurnJournal(data)
    journal.enqueue("turn-1", {"text": f"why {SECRET}?", "channel": CHANNEL}, "Ev1")

    def drop(team: str, channel: str, stamps: Sequence[str]) -> None:
        assert team == TEAM
        engine.drop_cached(channel, stamps)

    forgetting = Forgetting(
        opened,
        data,
        drop_cached=drop,
        owners=[journal, sessions],
        held=lambda p: p.name in ("turns.jsonl", ADMIN_FILE) or p.parent.name == "sessions",
    )
    opened.on_erased = forgetting.redact_later
    port = free_port()
    admin = write_admin_file(data, "127.0.0.1", port)  # as the bot does, before it listens
    server = BackgroundServer(
        Starlette(routes=admin_routes(admin.token, plan=forgetting.plan, run=forgetting.run)),
        port=port,
    )
    yield RunningBot(data, engine, journal, forgetting, server, opened)
    server.close()
    forgetting.close()
    journal.close()
    opened.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def every_byte(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file())


def close(bot: RunningBot) -> None:
    bot.forgetting.close()  # the background redactor has drained its queue
    bot.journal.close()
    bot.opened.close()  # the store's last erase pass and checkpoint


def test_forget_asks_the_running_bot(bot: RunningBot, capsys: pytest.CaptureFixture[str]) -> None:
    assert (bot.data / ADMIN_FILE).stat().st_mode & 0o777 == 0o600
    assert main(["forget", "--message", f"{CHANNEL}:{ts(2)}", "--data-dir", str(bot.data)]) == 0
    out = capsys.readouterr().out
    assert f"message {CHANNEL}:{ts(2)}: 1 message erased (team {TEAM})" in out, out
    assert bot.engine.message(CHANNEL, ts(2)) is None
    assert [m.text for m in bot.engine.channel_messages(CHANNEL)] == [OTHER]
    # The journal still takes turns after its file was swapped under it.
    assert bot.journal.enqueue("turn-2", {"text": "later"}, "Ev2")
    close(bot)
    raw = every_byte(bot.data)
    assert b"opal-thunder-58" not in raw
    assert OTHER.encode() in raw and b'"later"' in raw
    assert json.loads((bot.data / "sessions" / LOG).read_text())["message"]["content"] == (
        "U9: [deleted]"
    )


def test_a_live_deletion_redacts_the_old_text(bot: RunningBot) -> None:
    bot.engine.handle(
        {"type": "message", "subtype": "message_deleted", "channel": CHANNEL,
         "deleted_ts": ts(2), "hidden": True, "event_ts": ts(3), "ts": ts(3)}
    )  # fmt: skip
    close(bot)
    assert b"opal-thunder-58" not in every_byte(bot.data)


def post(url: str, body: bytes, token: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_the_route_wants_the_token_and_a_good_body(bot: RunningBot) -> None:
    url = bot.server.origin + ADMIN_FORGET
    token = read_admin_file(bot.data).token
    good = json.dumps({"channel": CHANNEL, "ts": ts(2)}).encode()
    assert post(url, good, None) == 401
    assert post(url, good, "wrong") == 403
    assert post(url, b"{not json", token) == 400
    assert post(url, json.dumps({"user": "U9", "channel": CHANNEL}).encode(), token) == 400
    assert post(url, json.dumps({"channel": "x" * 5000}).encode(), token) == 413
    assert bot.engine.message(CHANNEL, ts(2)) is not None  # nothing was erased


def test_an_unreachable_bot_is_one_line(
    bot: RunningBot, capsys: pytest.CaptureFixture[str]
) -> None:
    bot.server.close()
    assert main(["forget", "--user", "U9", "--data-dir", str(bot.data), "--timeout", "5"]) == 2
    # (uvicorn's own shutdown lines may precede it: main() pointed logging at this capture)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("chanctx forget: the running bot (pid ") and "does not answer" in last
    (bot.data / ADMIN_FILE).unlink()
    assert main(["forget", "--user", "U9", "--data-dir", str(bot.data)]) == 2
    assert "left no admin.json" in capsys.readouterr().err


@pytest.mark.slow
def test_a_slow_erasure_answers_202_and_finishes_after(bot: RunningBot) -> None:
    """The erase pass of a big channel outlasts the request: 202 with the planned counts."""
    gate = threading.Event()

    def slow_run(plan: Erasure) -> ForgetAnswer:
        gate.wait(timeout=60)  # the erase pass, still running when the route answers
        return bot.forgetting.run(plan)

    # The route waits 5 s: long enough for the plan of this tiny store (so the counts are in
    # the answer), while the gated erase pass is still running when it answers.
    app = Starlette(routes=admin_routes("k" * 20, plan=bot.forgetting.plan, run=slow_run, wait=5))
    with BackgroundServer(app) as server:
        request = urllib.request.Request(
            server.origin + ADMIN_FORGET,
            data=json.dumps({"user": "U9"}).encode(),
            headers={"Authorization": "Bearer " + "k" * 20},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 202
            body = ForgetAnswer.model_validate_json(answer.read())
        assert (body.messages, body.pending, body.teams) == (1, True, [TEAM])
        gate.set()
        deadline = time.monotonic() + 60
        while bot.engine.message(CHANNEL, ts(2)) is not None:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_a_slow_plan_is_accepted_and_the_command_says_so(
    bot: RunningBot, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading what a person wrote across a big store outlasts the request: 202, no counts."""
    gate = threading.Event()

    def slow_plan(request: ForgetRequest) -> Erasure:
        gate.wait(timeout=60)
        return bot.forgetting.plan(request)

    port = free_port()
    admin = write_admin_file(bot.data, "127.0.0.1", port)
    routes = admin_routes(admin.token, plan=slow_plan, run=bot.forgetting.run, wait=0)
    with BackgroundServer(Starlette(routes=routes), port=port):
        assert main(["forget", "--user", "U9", "--data-dir", str(bot.data)]) == 0
        gate.set()
        out = capsys.readouterr().out
        assert out.startswith("user U9: accepted; the bot is still reading"), out
        deadline = time.monotonic() + 60
        while bot.engine.message(CHANNEL, ts(2)) is not None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
