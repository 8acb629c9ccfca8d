from __future__ import annotations

import pytest
from chanctx.context import render_slack_text
from hypothesis import given
from hypothesis import strategies as st

USERS = {"U1": "Sam Lee", "U2": "Ana"}
CHANNELS = {"C9": "incidents"}


@pytest.mark.parametrize(
    ("raw", "rendered"),
    [
        ("<@U1> can you look?", "@Sam Lee can you look?"),
        ("ping <@U404>", "ping @U404"),
        ("<@U404|old name> hi", "@old name hi"),
        ("see <#C7|ops>", "see #ops"),
        ("see <#C9>", "see #incidents"),
        ("<https://ex.com/a?b=1&amp;c=2|the runbook>", "the runbook (https://ex.com/a?b=1&c=2)"),
        ("<https://ex.com>", "https://ex.com"),
        ("<https://ex.com|https://ex.com>", "https://ex.com"),
        ("<mailto:ops@ex.com|ops@ex.com>", "ops@ex.com"),
        ("<!here> and <!channel> and <!everyone>", "@here and @channel and @everyone"),
        ("<!subteam^S1|@sre-oncall> please", "@sre-oncall please"),
        ("<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"),
        ("a &lt; b &amp;&amp; c &gt; d", "a < b && c > d"),
        ("literal &amp;lt; stays", "literal &lt; stays"),
        ("", ""),
    ],
)
def test_renders_slack_markup(raw: str, rendered: str) -> None:
    assert render_slack_text(raw, users=USERS, channels=CHANNELS) == rendered


@given(st.text(alphabet=st.characters(blacklist_characters="<>&")))
def test_text_without_markup_is_unchanged(text: str) -> None:
    assert render_slack_text(text) == text


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@given(st.text())
def test_escaped_text_round_trips(text: str) -> None:
    # Whatever a person typed, Slack delivers it escaped; rendering gives it back exactly.
    assert render_slack_text(slack_escape(text), users=USERS) == text
