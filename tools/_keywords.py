"""Keywords for search: the same tokeniser for the intent and for the indexed messages.

What matters in chat search are the rare words: service names, versions (``v2.30.4``), ticket
numbers (``#9931``), status codes (``502``). Those are kept whole *and* split into their parts,
so "checkout" finds "checkout-api" and "9931" finds "#9931". Plain words are stemmed with the
Porter stemmer (:mod:`tools._porter`, no library) so "failed", "failing" and "fails" meet at
"fail"; it is applied to both sides, so only consistency matters, not linguistic correctness.
``stemmer="light"`` selects the earlier suffix strip (-ing, -ed, -s, final -e), kept so the
LoCoMo benchmark can show what Porter gained.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from chanctx.tools._porter import porter_stem

__all__ = ["STOPWORDS", "Keyword", "Stemmer", "keywords", "terms"]

Stemmer = Literal["porter", "light"]

# A token is a run of word characters that may contain . - / : (inside only, so a sentence's
# final period is not part of "v2.30.4."), optionally led by "#" (tickets, channels).
_TOKEN = re.compile(r"#?\w(?:[\w.\-/:]*\w)?")
_PARTS = re.compile(r"[.\-/:_#]+")
_ASCII_WORD = re.compile(r"[a-z]+")
_PLURAL_NUMBER = re.compile(r"\d+s")

# Question and filler words say nothing about *which* messages are wanted.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any anyone anything are around as at
    be because been before being below between both but by can could did do does doing done
    down during each else even ever every few find for from further get gets getting give go
    going got had has have having he her here hers herself him himself his how i if in into is
    it its itself just know let like look looking me more most much must my myself need no nor
    not now of off on once only or other our ours ourselves out over own please re really s
    same say see seem she should show so some someone something still such t tell than thank
    thanks that the their theirs them themselves then there these they thing things this those
    through to too under until up us use used very via want was we were what whats when where
    whether which while who whom whose why will with would yes yet you your yours yourself
    yourselves ok okay hi hey hello anybody happened happen happening new latest recent
    recently lately update updates news today currently current yesterday tomorrow earlier ago
    said says mentioned discussed talked
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_KEEP_S = ("ss", "us", "is")


def _stem(word: str, stemmer: Stemmer) -> str:
    """The stem of a plain ASCII word ("deployed" -> "deploi"); other words unchanged."""
    if not _ASCII_WORD.fullmatch(word):
        return word
    if stemmer == "porter":
        return porter_stem(word)
    return _light_stem(word)


def _light_stem(word: str) -> str:
    """Strip a common English suffix ("deployed" -> "deploy"): the pre-Porter stemmer."""
    if len(word) < 4:
        return word
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    else:
        if word.endswith("s") and not word.endswith(_KEEP_S) and len(word) > 4:
            word = word[:-1]
    # "release", "released", "releases" must meet: drop a final e as well.
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    return word


# Chat reuses a small vocabulary, so caching per token makes indexing several times faster.
@lru_cache(maxsize=16_384)
def _expand(token: str, stemmer: Stemmer = "porter") -> tuple[str, ...]:
    """A token and, for a compound one, its parts (each a term of its own)."""
    if _PLURAL_NUMBER.fullmatch(token):
        return (token[:-1],)  # "502s" are 502s
    out = [token if not token.isalpha() else _stem(token, stemmer)]
    if not token.isalnum():
        for part in _PARTS.split(token):
            # Short numbers ("30" of "v2.30.4") would match half the channel: not a term.
            if not part or part in STOPWORDS or (part.isdigit() and len(part) < 3):
                continue
            out.append(_stem(part, stemmer) if part.isalpha() else part)
    return tuple(out)


def terms(text: str, stemmer: Stemmer = "porter") -> list[str]:
    """Every index term of ``text``, in order, repeats kept (BM25 counts them)."""
    out: list[str] = []
    for token in _TOKEN.findall(text.casefold()):
        if token in STOPWORDS:
            continue
        out.extend(_expand(token, stemmer))
    return out


@dataclass(frozen=True)
class Keyword:
    """A keyword of the intent: as written (for relevance_signal), its term, its word parts.

    A message contains it if it has the term itself, or, for a compound of plain words
    ("checkout-api", "refund_webhook"), every one of its parts. Parts of versions and ids never
    count on their own: "v2.30.4" must not match "v2.30.3", nor "pay-v2" match "v2.30.4".
    """

    word: str
    term: str
    parts: tuple[str, ...] = ()

    def found_in(self, present: set[str] | frozenset[str]) -> bool:
        return self.term in present or (bool(self.parts) and present.issuperset(self.parts))


def keywords(intent: str, stemmer: Stemmer = "porter") -> list[Keyword]:
    """The intent's keywords, in order, each once (by its term), stopwords gone."""
    seen: set[str] = set()
    out: list[Keyword] = []
    for token in _TOKEN.findall(intent.casefold()):
        if token in STOPWORDS or (len(token) < 2 and not token.isdigit()):
            continue
        term, *parts = _expand(token, stemmer)
        if term in seen:
            continue
        seen.add(term)
        # "#9931" may be written "9931"; a compound of plain words may be written apart.
        words_only = all(_ASCII_WORD.fullmatch(p) for p in _PARTS.split(token) if p)
        usable = bool(parts) and (words_only or token.startswith("#"))
        out.append(Keyword(token, term, tuple(parts) if usable else ()))
    return out
