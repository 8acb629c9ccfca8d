"""Answers are posted as Markdown (``markdown_text``) and split only where a reader would."""

from __future__ import annotations

import re

import pytest
from chanctx.bot.slack.markdown import MARKDOWN_LIMIT, split_markdown
from hypothesis import given
from hypothesis import strategies as st

words = st.text(alphabet="abcdefghij&<>*_`é中", min_size=1, max_size=12)
sentences = st.lists(words, min_size=1, max_size=12).map(lambda ws: " ".join(ws) + ".")
paragraphs = st.lists(sentences, min_size=1, max_size=8).map(" ".join)
code_blocks = st.tuples(
    st.sampled_from(["", "python", "sql"]),
    st.lists(st.text(alphabet="abc xyz=()&<>", max_size=40), min_size=1, max_size=30),
).map(lambda parts: "```" + parts[0] + "\n" + "\n".join(parts[1]) + "\n```")
documents = st.lists(st.one_of(paragraphs, code_blocks), min_size=1, max_size=12).map("\n\n".join)


def fence_count(text: str) -> int:
    return len(re.findall(r"^```", text, re.M))


def squeeze(text: str) -> str:
    return "".join(text.split())


@given(documents, st.integers(60, 600))
def test_every_message_fits_and_nothing_is_lost(document: str, limit: int) -> None:
    messages = split_markdown(document, limit)
    assert all(0 < len(m) <= limit for m in messages)
    assert all(fence_count(m) % 2 == 0 for m in messages)  # each message renders on its own
    joined = squeeze("".join(messages))
    # Fences may be added where a long code block is cut; everything else is there, in order.
    assert joined.replace("```python", "").replace("```sql", "").replace("```", "") == squeeze(
        document
    ).replace("```python", "").replace("```sql", "").replace("```", "")


@given(st.lists(st.one_of(paragraphs, code_blocks), min_size=1, max_size=10), st.integers(300, 900))
def test_a_code_block_that_fits_is_never_split(parts: list[str], limit: int) -> None:
    messages = split_markdown("\n\n".join(parts), limit)
    for block in (p for p in parts if p.startswith("```") and len(p) <= limit):
        assert any(block in message for message in messages)


def test_paragraphs_then_sentences_are_the_break_points() -> None:
    first, second = "First paragraph. " * 10, "Second one ends here. " * 10
    messages = split_markdown(first.strip() + "\n\n" + second.strip(), 200)
    assert messages[0] == first.strip()
    assert all(m.endswith(".") for m in messages)  # cut after a sentence, never mid-word


def test_a_long_code_block_is_cut_between_lines_and_refenced() -> None:
    code = "```python\n" + "\n".join(f"print({i})" for i in range(100)) + "\n```"
    messages = split_markdown(code, 200)
    assert len(messages) > 1
    for message in messages:
        assert message.startswith("```python\n") and message.endswith("\n```")
    body = [line for m in messages for line in m.split("\n") if not line.startswith("```")]
    assert body == [f"print({i})" for i in range(100)]


def test_short_answers_are_one_message_untouched() -> None:
    answer = "**Root cause:** the pool *shrank* to 10 & requests <queued>.\n\n- a\n- b"
    assert split_markdown(answer) == [answer]  # no escaping: Slack renders the Markdown
    assert len(split_markdown("word " * 5_000)) == 3 and MARKDOWN_LIMIT == 12_000


def test_a_tiny_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 40"):
        split_markdown("hi", 10)
