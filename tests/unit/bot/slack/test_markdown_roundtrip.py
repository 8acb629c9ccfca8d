"""Every Markdown construct Slack documents for its markdown rendering survives the way out:
split into messages, streamed in pieces (or posted in a markdown block), stored by the fake
Slack, read back with conversations.replies, and parsed again, over the demo answers, the
streamed checklist and a document of every construct.

"Survives" is measured by a CommonMark parser (markdown-it-py, with GFM strikethrough): the
read-back text parses to the same constructs, in the same order, as what the model wrote.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import Answer, Turn
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.replay.runner import replay
from markdown_it import MarkdownIt
from slack_sdk import WebClient

from tests.support.paths import ROOT
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, mention_pair, ts

FIXTURES = ROOT / "fixtures"
START = float(ts(0).split(".")[0])

# The constructs of Slack's markdown block reference, each as its documentation writes it.
SLACK_DOCUMENTED = {
    "bold": "**this is bold** or __this is bold__",
    "italic": "*this text is italicized* or _this text is italicized_",
    "bold and nested italic": "**this text is _extremely_ important**",
    "all bold and italic": "***all of this is important***",
    "links": "[my text](https://www.google.com)",
    "lists (unordered)": "- first item in list\n- second item in a list\n- third item in a list",
    "lists (ordered)": "1. first item in a list\n2. second item in a list\n3. third item in a list",
    "strikethrough": "~~this is strikethrough text~~",
    "headers (level 1)": "# Header 1",
    "headers (level 2+)": "## Header 2\n\n### Header 3",
    "in-line code": "`this is my code`",
    "code block": "```python\nprint('this is my code')\n```",
    "block quote": "> this is a quote",
}
EVERY_CONSTRUCT = "\n\n".join(f"{name}:\n\n{text}" for name, text in SLACK_DOCUMENTED.items())
PARSER = MarkdownIt("commonmark").enable("strikethrough")


def constructs(text: str) -> list[tuple[str, str]]:
    """The constructs a Markdown text parses to, in order: (token type, markup)."""
    found: list[tuple[str, str]] = []
    for token in PARSER.parse(text):
        if token.type == "inline":
            found += [(child.type, child.markup) for child in token.children or []]
        elif token.type not in ("paragraph_open", "paragraph_close"):
            found.append((token.type, token.markup))
    return found


@functools.cache
def demo_answers() -> tuple[str, ...]:
    replies = []
    for name in ("demo", "streamed_answer"):
        replies += [t["reply"] for t in replay(load_fixture(FIXTURES / name))["turns"]]
    return tuple(reply for reply in replies if reply)


class Says:
    def __init__(self, text: str) -> None:
        self.text = text

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        return Answer(text=self.text)


def round_trip(tmp_path: Path, text: str, *, stream: bool) -> list[str]:
    """The answer's messages as Slack gives them back: their Markdown, oldest first."""
    with OfflineBot(
        copy.deepcopy(STATE), responder=Says(text), start_time=START, data_dir=tmp_path,
        stream=stream,
    ) as bot:  # fmt: skip
        for item in mention_pair(ts(10), "tell me everything"):
            bot.dispatch(item)
        client = WebClient(token="xoxb-read-back", base_url=bot.slack.url)
        thread = client.conversations_replies(channel=CHANNEL, ts=ts(10))["messages"]
    answers = [m for m in thread if m.get("user") == BOT_USER]
    assert answers, "nothing was posted"
    out = []
    for message in answers:
        blocks: list[dict[str, Any]] = message.get("blocks") or []
        markdown = [b["text"] for b in blocks if b.get("type") == "markdown"]
        out.append(markdown[0] if markdown else message["text"])  # a markdown block, or the text
    return out


def test_the_construct_document_has_every_construct_slack_documents() -> None:
    kinds = {kind for kind, _ in constructs(EVERY_CONSTRUCT)}
    assert {"strong_open", "em_open", "s_open", "link_open", "code_inline", "fence"} <= kinds
    assert {"bullet_list_open", "ordered_list_open", "heading_open", "blockquote_open"} <= kinds


@pytest.mark.slow
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "posted"])
def test_every_documented_construct_survives_the_round_trip_through_the_fake(
    tmp_path: Path, stream: bool
) -> None:
    documents = [EVERY_CONSTRUCT, *demo_answers()]
    assert len(documents) >= 5
    for number, document in enumerate(documents):
        messages = round_trip(tmp_path / str(number), document, stream=stream)
        assert "\n\n".join(messages) == document.strip()
        assert constructs("\n\n".join(messages)) == constructs(document)


@pytest.mark.slow
def test_a_long_answer_split_over_messages_keeps_each_construct_whole(tmp_path: Path) -> None:
    # About 37,000 characters: three messages, each a whole set of constructs that renders alone.
    document = "\n\n".join([EVERY_CONSTRUCT] * 50)
    messages = round_trip(tmp_path, document, stream=True)
    assert len(messages) >= 3
    assert [c for m in messages for c in constructs(m)] == constructs(document)
