"""Keyword extraction: stopwords out, identifiers whole, word forms meet."""

from __future__ import annotations

from chanctx.tools._keywords import STOPWORDS, keywords, terms
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import chat_text


def words(intent: str) -> list[str]:
    return [k.word for k in keywords(intent)]


def test_questions_lose_their_filler_and_keep_their_subject() -> None:
    assert words("Why did checkout fail yesterday?") == ["checkout", "fail"]
    assert words("What's going on?") == []
    assert words("Can you tell me what Dev said about the rollout plan") == [
        "dev",
        "rollout",
        "plan",
    ]


def test_identifiers_are_kept_whole() -> None:
    assert words("502s after v2.30.4, see #9931 and checkout-api (p99)") == [
        "502s",
        "v2.30.4",
        "#9931",
        "checkout-api",
        "p99",
    ]
    assert [k.term for k in keywords("502s v2.30.4.")] == ["502", "v2.30.4"]


def test_word_forms_meet_on_both_sides() -> None:
    for intent, text in [
        ("failed", "checkout is failing"),
        ("deploys", "the deploy finished"),
        ("released", "release notes"),
        ("pools", "pool size"),
    ]:
        (keyword,) = keywords(intent)
        assert keyword.found_in(set(terms(text))), (intent, text)


def test_compounds_match_by_words_but_versions_only_whole() -> None:
    (api,) = keywords("checkout-api")
    assert api.found_in(set(terms("the checkout api is down")))
    assert not api.found_in(set(terms("checkout is down")))
    (version,) = keywords("v2.30.4")
    assert not version.found_in(set(terms("rolled back to v2.30.3")))
    assert version.found_in(set(terms("deployed v2.30.4 today")))
    (ticket,) = keywords("#9931")
    assert ticket.found_in(set(terms("fixed in 9931")))
    (bare,) = keywords("9931")
    assert bare.found_in(set(terms("see #9931.")))


@given(chat_text)
def test_keywords_are_unique_lowercase_and_never_stopwords(text: str) -> None:
    found = keywords(text)
    assert len({k.term for k in found}) == len(found)
    for keyword in found:
        assert keyword.word == keyword.word.casefold()
        assert keyword.word not in STOPWORDS
        # A keyword always matches the text it came from.
        assert keyword.found_in(set(terms(text)))


@given(st.text(max_size=200))
def test_any_text_tokenises(text: str) -> None:
    assert all(isinstance(term, str) and term for term in terms(text))
    keywords(text)
