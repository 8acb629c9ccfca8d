"""``--database-url`` / ``CHANCTX_DATABASE_URL``: a bad value or a database that does not answer
stops the start with one line naming the setting, and the URL's password is never shown."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from chanctx.bot.cli import main
from chanctx.bot.launch.option_values import redacted_url
from hypothesis import given
from hypothesis import strategies as st

SECRET = "hunter2-Sq9"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, *flags: str
) -> tuple[int, str]:
    env = {
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_SIGNING_SECRET": "secret",
        "ANTHROPIC_API_KEY": "key",
        "SLACK_API_URL": f"http://127.0.0.1:{free_port()}/api/",
        "CHANCTX_DATA_DIR": str(tmp_path / "data"),
        "CHANCTX_DATABASE_URL": url,
    }
    args = ["run", "--http", "--host", "127.0.0.1", "--port", str(free_port()), *flags]
    status = main(args, env=env)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.err.strip()


def test_a_url_that_is_not_postgresql_is_one_line_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = start(tmp_path, capsys, f"mysql://bot:{SECRET}@db.internal/chanctx")
    assert status == 2
    assert len(err.splitlines()) == 1
    assert "CHANCTX_DATABASE_URL" in err and "postgresql://" in err
    assert SECRET not in err and "bot:***@db.internal" in err


@pytest.mark.slow
def test_a_database_that_does_not_answer_stops_the_start_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://bot:{SECRET}@127.0.0.1:{free_port()}/chanctx"
    status, err = start(tmp_path, capsys, url, "--max-wait", "1")
    assert status == 2
    assert len(err.splitlines()) == 1, err
    assert "--database-url" in err and "unavailable" in err
    assert SECRET not in err


@given(
    user=st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
    password=st.text(
        st.characters(blacklist_characters="@/", blacklist_categories=("Cs",)), min_size=1
    ),
)
def test_redaction_hides_any_password(user: str, password: str) -> None:
    for url in (
        f"postgresql://{user}:{password}@db:5432/chanctx",
        f"redis://{user}:{password}@cache:6379/0",
    ):
        shown = redacted_url(url)
        assert f":{password}@" not in shown and shown.endswith(url.split("@", 1)[1])
    assert redacted_url(f"postgresql://db/chanctx?password={password}&x=1").count("***") == 1
