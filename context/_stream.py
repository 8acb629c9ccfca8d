"""Text -> the marked stream that ``_tiling`` prices.

Claude's tokenizers do not see raw characters: the text is normalised (NFC, control and
private-use characters dropped, odd spaces folded, v3 also folds curly quotes), then rewritten
into a stream where a word carries a begin and an end marker, a capitalised or all-caps word is
lowercased behind a case marker, and a single space between two marked words disappears into the
markers (the "seam"). The count is then a minimum tiling of that stream over measured pieces.

This module writes the stream; the rules are ctok 1.3.0's measured ones (MIT, Sander Land; see
``data/README.md``), re-expressed for speed: characters are classified with ``str.translate``
and split into runs by one regular expression, so Python code runs once per run, not per
character. Markers are private-use characters, which normalisation removes from the text, so a
marker can never be confused with text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from chanctx.context._charclass import (
    NEW_CASED,
    ClassTable,
    case_lower,
    digit_border,
    digit_run,
    is_lower,
    is_upper,
    marks_like_punct,
)

__all__ = [
    "AFTER_OTHER",
    "AFTER_SPACE",
    "AT_START",
    "BOW",
    "CAPS",
    "EOW",
    "MARKERS",
    "SHIFT",
    "WHITESPACE",
    "StreamRules",
    "chunk_stream",
    "message_body",
    "normalise",
]

BOW: Final = "\ue000"  # begin of word
EOW: Final = "\ue001"  # end of word
SHIFT: Final = "\ue002"  # the word is capitalised: lowercase it behind this marker
CAPS: Final = "\ue003"  # the word is all capitals (v3 only)
MARKERS: Final = frozenset((BOW, EOW, SHIFT, CAPS))


@dataclass(frozen=True, slots=True)
class StreamRules:
    """What differs between families before the tiling."""

    fold_quotes: bool  # v3 folds the four curly quotes to ASCII
    allcaps_min: int | None  # shortest all-caps word written as CAPS + lowercase (None: never)
    frame_bow: bool  # the message frame ends in a word boundary that absorbs one leading space


# --- normalisation -----------------------------------------------------------------------------

# Controls the API drops (every C0/C1 control but TAB, LF and NUL), and BMP private use.
_DROP_ASCII: Final = re.compile("[\x01-\x08\x0b-\x1f\x7f]")
_DROP: Final = re.compile("[\x01-\x08\x0b-\x1f\x7f-\x9f]")
_PRIVATE: Final = re.compile("[\ue000-\uf8ff]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# Spaces the tokenizer reads as U+0020 (not U+3000, which is its own token).
_ODD_SPACE: Final = re.compile("[\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f]")
_QUOTES: Final = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def normalise(text: str, fold_quotes: bool) -> str:
    """The text the tokenizer reads. Total on any ``str``: a lone surrogate (legal in a Python
    string, impossible in UTF-8) becomes U+FFFD."""
    if text.isascii():
        return _DROP_ASCII.sub("", text).replace("\x00", " ")
    text = _SURROGATE.sub("\ufffd", text)
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    text = _DROP.sub("", text).replace("\x00", " ")
    # Decomposed Thai SARA AM is composed (NFC leaves this compatibility pair alone).
    text = _PRIVATE.sub("", text.replace("\u0e4d\u0e32", "\u0e33"))
    if fold_quotes:
        text = text.translate(_QUOTES)
    return _ODD_SPACE.sub(" ", text)


# --- case markers ------------------------------------------------------------------------------

_CONTRACTIONS: Final = frozenset({"s", "t", "d", "m", "ll", "re", "ve"})


@lru_cache(maxsize=8192)
def mark_case(span: str, allcaps_min: int | None) -> str:
    """A word -> its case-marked form: CAPS + lowercase for an all-caps word of at least
    ``allcaps_min`` letters, SHIFT + lowercase for a capitalised one, else unchanged (``GaN``,
    ``WiFi`` and short acronyms keep their bytes)."""
    if span.isascii():  # letters only: the common case needs none of the exceptions below
        if allcaps_min is not None and len(span) >= allcaps_min and span.isupper():
            return CAPS + span.lower()
        if span[0].isupper() and (len(span) == 1 or span[1:].islower()):
            return SHIFT + span.lower()
        return span
    if "ẞ" in span:  # blocks either marker anywhere
        return span
    if "İ" in span:  # transparent to title case, literal in the body, blocking only at the head
        head, tail = span[0], span[1:]
        if is_upper(head) and head != "İ" and not any(is_upper(c) for c in tail if c != "İ"):
            return (
                SHIFT + case_lower(head) + "".join(c if c == "İ" else case_lower(c) for c in tail)
            )
        return span
    # A letter or mark that is neither lowercase nor a lowerable capital (a caseless letter, ``ℳ``)
    # blocks CAPS: the oracle spells such words literally.
    blocked = any(
        (c in NEW_CASED or unicodedata.category(c)[0] in "LM")
        and not is_lower(c)
        and (not is_upper(c) or case_lower(c) == c)
        for c in span
    )
    cased = [c for c in span if is_upper(c) or is_lower(c)]
    if (
        allcaps_min is not None
        and len(span) >= allcaps_min
        and cased
        and all(is_upper(c) for c in cased)
        and not blocked
    ):
        # The CAPS body lowers sigma to σ everywhere (no final-sigma rule).
        return CAPS + case_lower(span).replace("ς", "σ")
    if case_lower(span[0]) == span[0]:
        return span
    if is_upper(span[0]) and not any(is_upper(c) for c in span[1:]):
        return SHIFT + case_lower(span)
    return span


# --- runs and markers --------------------------------------------------------------------------

# After ``normalise``, exactly these characters are whitespace to the tokenizer (class ``S``).
WHITESPACE: Final = " \t\n\u3000"

# Runs over the class string (see ``_charclass``): a word takes the marks after it, baseless marks
# group, a hard run splits by pre-token kind with variation selectors riding their base.
_RUN: Final = re.compile(r"W[WM]*|M+|S+|D+|P+|p[pv]*|n[nv]*|[lv]+")
_HARD: Final = frozenset("pnlv")

# What is left of a chunk (a run of non-whitespace): the start of the message, a run of whitespace
# ending in a space, or whitespace ending otherwise (tab, newline, U+3000).
AT_START, AFTER_SPACE, AFTER_OTHER = 0, 1, 2


def message_body(text: str, rules: StreamRules) -> tuple[str, int]:
    """``(body, trailing_newlines)``: the normalised text without its final newlines (priced
    separately: they merge with the message frame's own) and without the one leading space the
    frame's boundary marker stands for (raw text only; two spaces are a whitespace token)."""
    norm = normalise(text, rules.fold_quotes)
    body = norm.rstrip("\n")
    newlines = len(norm) - len(body)
    if rules.frame_bow and text[:1] == " " and body[:1] == " " and body[1:2] != " ":
        body = body[1:]
    return body, newlines


def chunk_stream(
    chunk: str, rules: StreamRules, classes: ClassTable, left: int, space_after: bool
) -> str:
    """The marked stream of one chunk: non-whitespace text between whitespace runs.

    A chunk's markers depend only on its own runs and on its two edges: what is to its ``left``
    (``AT_START``, ``AFTER_SPACE``, ``AFTER_OTHER``) and whether a single space follows it
    (``space_after``). That is what makes chunks cacheable. The single space between two chunks
    that join as marked words (the seam) is the caller's business.
    """
    spans = [m.span() for m in _RUN.finditer(chunk.translate(classes))]
    kinds = [classes[ord(chunk[start])] for start, _ in spans]
    bodies = [chunk[start:end] for start, end in spans]
    last = len(spans) - 1

    def space_left(i: int) -> bool:
        return i == 0 and (left == AFTER_SPACE or (left == AT_START and rules.frame_bow))

    def space_right(i: int) -> bool:
        return i == last and space_after

    def opens_word(i: int) -> bool:
        """A lone apostrophe before a word (``'First``) takes no boundary marker of its own."""
        return bodies[i] == "'" and i < last and kinds[i + 1] in "WM"

    def right_border(i: int) -> bool:
        """Run ``i`` writes a marker on its right edge (punctuation-like or a bordered digit)."""
        kind, run = kinds[i], bodies[i]
        # Any run ending in a punctuation-like character: symbol-letters such as ``ⓐ`` are words
        # that still close with one.
        if kind == "P" or classes[ord(run[-1])] in "pv" or marks_like_punct(run[-1]):
            return True
        return kind in "Dpnlv" and digit_run(run) and digit_border(run[-1])

    def contraction(i: int) -> bool:
        """``it's``: the apostrophe is the word's opening boundary, so the suffix has none."""
        return (
            bodies[i] in _CONTRACTIONS
            and i > 0
            and bodies[i - 1] == "'"
            and (i < 2 or not right_border(i - 2))
        )

    out: list[str] = []
    if left == AT_START and rules.frame_bow:
        # The frame ends in a boundary marker; a first run that writes none of its own leaves it
        # standing as a token (an opening apostrophe gets the space it stands for instead).
        first_kind, first = kinds[0], bodies[0]
        if opens_word(0):
            out.append(" ")
        elif not (
            first_kind in "WMPpv"
            or (first_kind in "Dn" and digit_run(first) and digit_border(first[0]))
        ):
            out.append(BOW)
    for i, (kind, run) in enumerate(zip(kinds, bodies, strict=True)):
        if kind == "W":
            fused = i > 0 and kinds[i - 1] == "M"
            word = run if fused else mark_case(run, rules.allcaps_min)
            case = ""
            while word[:1] in (SHIFT, CAPS):  # case markers come before the boundary marker
                case, word = case + word[0], word[1:]
            opening = "" if fused or contraction(i) else BOW
            out.append(case + opening + word + EOW)
        elif kind == "M":
            # Baseless marks are a word; a letter right after them continues it.
            out.append(BOW + run + ("" if i < last and kinds[i + 1] == "W" else EOW))
        elif kind == "P" or (kind in _HARD and (kind in "pv" or classes[ord(run[-1])] == "v")):
            # Punctuation-like runs (and hard runs edged by a variation selector) are marked
            # only on a side that touches a space.
            marked_left = kind in "Ppv" and space_left(i) and not opens_word(i)
            marked_right = (kind in "Pp" or classes[ord(run[-1])] == "v") and space_right(i)
            out.append((BOW if marked_left else "") + run + (EOW if marked_right else ""))
        elif kind in "Dn" and digit_run(run):
            # The edge test first: digit_border looks the category up, and most runs are inside.
            marked_left = space_left(i) and digit_border(run[0])
            marked_right = space_right(i) and digit_border(run[-1])
            out.append((BOW if marked_left else "") + run + (EOW if marked_right else ""))
        else:
            out.append(run)  # hard letters (CJK, emoji): no markers
    return "".join(out)
