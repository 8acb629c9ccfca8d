"""The offline curator: deterministic rules that turn what people said in a channel into
playbook deltas (ADD only), for replays, tests and a bot run without a curator model.

It reads people's messages one sentence at a time and keeps the sentences that state something
a team relearns: who owns what (``owners``), how things are done (``conventions``), commands
and steps (``runbooks``), traps (``pitfalls``) and what a name means (``glossary``). Questions,
chatter and the bot's own words are left alone. Each proposal names its subject when the rules
can tell it ("owner:payments-api", "staging"), so a later statement on the same subject
supersedes an earlier one and statements on different subjects never merge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from chanctx.context._message import Message
from chanctx.context.playbook import MAX_CONTENT, BulletSource, Delta, Section
from chanctx.context.render import Names, text_of

__all__ = ["offline_deltas", "statements"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n+")
_THING = r"`?(?P<thing>[A-Za-z][\w./-]*[\w])`?"
_OWNER_PATTERNS: Final = (
    re.compile(rf"\b(?:owns|maintains|is responsible for|is the owner of|looks after) (?:the )?{_THING}", re.I),
    re.compile(rf"^(?:the )?{_THING} (?:service |api |team )?is owned by\b", re.I),
    re.compile(rf"\bask \w+(?: \w+)? (?:about|for) (?:the )?{_THING}", re.I),
)  # fmt: skip
_DEFINITION = re.compile(r"^(?P<term>\"[^\"]{2,60}\"|'[^']{2,60}'|(?:the )?[\w -]{2,40}?) (?:means|refers to|is short for|stands for)\b", re.I)  # fmt: skip
_RUNBOOK = re.compile(r"`[^`]{3,}`|\b(?:runbook|step \d|first,? run|then run|to recover|to roll ?back)\b", re.I)  # fmt: skip
_CONVENTION = re.compile(r"\b(?:always|never|must|only on|is read-only|read only|is frozen|freeze|policy|we use|do not|don't|no deploys?)\b", re.I)  # fmt: skip
_PITFALL = re.compile(r"\b(?:flaky|careful|beware|gotcha|watch out|known issue|breaks?|trap|silently)\b", re.I)  # fmt: skip
_SUBJECT_VERB = re.compile(r"^(?P<subject>.{2,60}?)\s+(?:is|are|was|were|must|should|needs?|has|have|will|can(?:not|'t)?|does(?:n't)?|stays?|runs?|breaks?|fails?)\b", re.I)  # fmt: skip
_LEADING = re.compile(r"^(?:reminder|note|fyi|psa|heads up|update|ok|so)\s*[:,-]\s*", re.I)
_NEGATION_WORDS = re.compile(r"\b(?:no longer|not|isn't|aren't|anymore)\b", re.I)
_ARTICLES = re.compile(r"^(?:the|our|a|an)\s+", re.I)
_MIN_WORDS: Final = 4


def offline_deltas(messages: Iterable[Message], names: Names, turn: str) -> list[Delta]:
    """ADD deltas for what ``messages`` (people's, oldest first) state, one per sentence."""
    deltas: list[Delta] = []
    for message in messages:
        if message.is_bot or message.is_self or message.deleted:
            continue
        for section, subject, sentence in statements(text_of(message, names)):
            deltas.append(
                Delta(
                    op="ADD",
                    section=section,
                    content=sentence,
                    subject=subject,
                    sources=(BulletSource(turn=turn, messages=(message.ts,)),),
                )
            )
    return deltas


def statements(text: str) -> list[tuple[Section, str | None, str]]:
    """``(section, subject, sentence)`` for each sentence of ``text`` worth keeping."""
    found: list[tuple[Section, str | None, str]] = []
    for sentence in _sentences(text):
        kind = _classify(sentence)
        if kind is not None:
            found.append((kind[0], kind[1], sentence))
    return found


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for part in _SENTENCE.split(text):
        sentence = _LEADING.sub("", " ".join(part.split())).strip()
        if not sentence or sentence.endswith("?") or len(sentence) > MAX_CONTENT:
            continue
        if len(sentence.split()) < _MIN_WORDS or "@" in sentence.split()[0]:
            continue
        out.append(sentence)
    return out


def _classify(sentence: str) -> tuple[Section, str | None] | None:
    """The section and subject of a sentence worth keeping, or None."""
    for pattern in _OWNER_PATTERNS:
        owned = pattern.search(sentence)
        if owned:
            return "owners", f"owner:{owned['thing'].casefold()}"
    definition = _DEFINITION.search(sentence)
    if definition:
        term = _ARTICLES.sub("", definition["term"].strip("\"' ")).casefold()
        return "glossary", f"term:{term}"
    if _RUNBOOK.search(sentence):
        return "runbooks", None
    if _CONVENTION.search(sentence):
        return "conventions", _subject(sentence)
    if _PITFALL.search(sentence):
        return "pitfalls", _subject(sentence)
    return None


def _subject(sentence: str) -> str | None:
    """What the sentence is about: the words before its first verb ("staging" in "Staging is
    read-only on Fridays"), without articles or negations; None when unclear."""
    found = _SUBJECT_VERB.search(sentence)
    if not found:
        return None
    subject = _NEGATION_WORDS.sub("", _ARTICLES.sub("", found["subject"])).strip(" ,").casefold()
    if not subject or len(subject.split()) > 4:
        return None
    return subject
