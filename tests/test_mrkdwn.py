from __future__ import annotations

import re

from chanctx.bot.slack.mrkdwn import split_for_slack, to_mrkdwn
from hypothesis import given
from hypothesis import strategies as st


def test_markdown_becomes_mrkdwn() -> None:
    source = "## Summary\n**Root cause:** the pool size. See [PR 9931](https://git.example.com/pr/9931) ~~maybe~~."
    assert to_mrkdwn(source) == (
        "*Summary*\n*Root cause:* the pool size. See <https://git.example.com/pr/9931|PR 9931> ~maybe~."
    )


def test_control_characters_are_escaped_but_code_is_not_reformatted() -> None:
    assert to_mrkdwn("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"
    assert (
        to_mrkdwn("`**not bold**` and ```\nx = a<b\n```")
        == "`**not bold**` and ```\nx = a&lt;b\n```"
    )


def test_short_text_is_one_message() -> None:
    assert split_for_slack("hello") == ["hello"]


def test_split_prefers_paragraphs_and_closes_code_blocks() -> None:
    text = (
        "First paragraph.\n\n"
        + "```\n"
        + "\n".join(f"line {i}" for i in range(400))
        + "\n```\n\nAfter."
    )
    chunks = split_for_slack(text, limit=500)
    assert chunks[0].startswith("First paragraph.\n\n```")
    assert all(len(chunk) <= 500 for chunk in chunks)
    assert all(chunk.count("```") % 2 == 0 for chunk in chunks)
    assert chunks[-1].endswith("After.")


words = st.lists(
    st.sampled_from(["word", "```", "\n", "\n\n", "a" * 30, "line.", "x"]), max_size=400
)


@given(words.map(" ".join), st.integers(40, 600))
def test_chunks_fit_and_keep_every_word(text: str, limit: int) -> None:
    chunks = split_for_slack(text, limit)
    assert all(0 < len(chunk) <= limit for chunk in chunks)
    # Nothing is lost or reordered; only whitespace at cuts and the fences we add to close and
    # reopen a code block differ.
    assert re.sub(r"\s|```", "", "".join(chunks)) == re.sub(r"\s|```", "", text)
