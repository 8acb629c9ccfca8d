"""What the tokenizer reconstruction needs to know about single characters.

Every character of normalised text falls into one stream class, written as one letter so a whole
text can be classified with ``str.translate`` and split into runs with one regular expression:

    W  a letter that takes the word model (boundary and case markers)
    M  a combining mark that can open a word of its own when nothing before it is its base
    S  whitespace        D  a decimal digit (ASCII, Arabic-Indic)        P  punctuation, ASCII symbols
    p  n  l  v   "hard" characters, each priced on its own, by the pre-token kind they belong to:
       punctuation-like (takes border markers), number (takes border markers), letter (none),
       and variation selectors, which ride on the character before them

The rules (which characters, which exceptions) are the measured ones of ctok 1.3.0 (MIT, Sander
Land), whose counts agree with Anthropic's ``count_tokens``; each is a fact about the tokenizer,
so the enumerated tables below are data, not design. Unicode's ``Alphabetic`` property is not in
``unicodedata``; the ``regex`` package supplies it.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Final

import regex

__all__ = [
    "NEW_CASED",
    "ClassTable",
    "case_lower",
    "classify",
    "digit_border",
    "digit_run",
    "is_lower",
    "is_upper",
    "marks_like_punct",
]

# Non-ASCII symbols that tile over the punctuation vocabulary (measured one by one: no Unicode
# category separates them from their neighbours, ``（`` is one and ``）`` is not).
_PUNCT_SYMBOLS: Final = frozenset("—»«•°„–−£§€…√→（№†└│།·─═█")
# Symbols inside CJK Symbols and Punctuation that read like its punctuation: no border markers.
_IDEOGRAPHIC_SYMBOLS: Final = frozenset("〄〒〓〠〶〷〾〿")
# Symbol-letters that take the full word model like Latin letters (by block, not by category).
_SYMBOL_LETTERS: Final = ((0x16EE, 0x16F0), (0x2160, 0x2188), (0x24B6, 0x24E9), (0xA6E6, 0xA6EF))
_SELECTORS: Final = (0xFE00, 0xFE0F)
# Unicode 16 case pairs the tokenizer knows and Python 3.11's Unicode 14 data does not.
_NEW_CASE_PAIRS: Final = {"\u1c89": "\u1c8a", "\ua7cb": "\u0264"}
NEW_CASED: Final = frozenset(_NEW_CASE_PAIRS) | frozenset(_NEW_CASE_PAIRS.values())
# ``ϴ`` is a capital to Unicode but measures as caseless.
_UNCASED: Final = frozenset("\u03f4")
# Han iteration and closing marks: letters by category, but they continue the Han run.
_HAN_MARKS: Final = frozenset("\u3005\u3006\u3031\u3032\u3033\u3034\u3035\u303b\u303c")
_ALPHABETIC: Final = regex.compile(r"\p{Alphabetic}")
_MARK: Final = regex.compile(r"\p{M}")


def _is_selector(c: str) -> bool:
    return _SELECTORS[0] <= ord(c) <= _SELECTORS[1]


def _is_hard_letter(o: int) -> bool:
    """Letters priced one character at a time: astral, CJK ideographs, Hangul syllables."""
    return (
        o >= 0x10000
        or 0x4E00 <= o <= 0x9FFF
        or 0x3400 <= o <= 0x4DBF
        or 0xF900 <= o <= 0xFAFF
        or 0xAC00 <= o <= 0xD7A3
        or chr(o) in _HAN_MARKS
    )


def is_separator(c: str) -> bool:
    """A BMP combining mark outside ``Alphabetic``: it closes the word it follows."""
    return (
        ord(c) < 0x10000
        and _MARK.fullmatch(c) is not None
        and not _is_selector(c)
        and _ALPHABETIC.fullmatch(c) is None
    )


def _opens_stray_word(c: str) -> bool:
    """A word-class mark that, with no base before it, opens a word of its own. Syriac vowels are
    the exception: baseless, they are letters."""
    o = ord(c)
    if o == 0x0711 or 0x0730 <= o <= 0x073F:
        return False
    return unicodedata.combining(c) != 0 and not is_separator(c)


def marks_like_punct(c: str) -> bool:
    """Punctuation, symbols, format and unassigned characters, and separator marks: the pre-token
    kind that takes border markers. Not astral (emoji take none) and not ideographic punctuation
    (it stays in the run of ideographs it sits in)."""
    if ord(c) >= 0x10000:
        return False
    if is_separator(c):
        return True
    cat = unicodedata.category(c)
    ideographic = 0x3001 <= ord(c) <= 0x303F and (cat[0] == "P" or c in _IDEOGRAPHIC_SYMBOLS)
    return (cat[0] in "PS" or cat in ("Cf", "Cn")) and not ideographic


def digit_border(c: str) -> bool:
    """Whether a digit takes a border marker: BMP non-ASCII decimal digits and other numbers."""
    cat = unicodedata.category(c)
    return (cat == "No" or (cat == "Nd" and not c.isascii())) and ord(c) < 0x10000


def classify(c: str) -> str:
    """The one-letter stream class of a character (see the module docstring)."""
    if c in NEW_CASED:
        return "W"
    o = ord(c)
    cat = unicodedata.category(c)
    if cat[0] == "Z" or c in "\t\n\r\f\v":
        return "S"
    if any(lo <= o <= hi for lo, hi in _SYMBOL_LETTERS):
        return "W"
    if cat == "Nd" and (o < 0x80 or 0x0660 <= o <= 0x0669 or 0x06F0 <= o <= 0x06F9):
        return "D"
    if (o < 0x80 and cat[0] in "PS") or c in _PUNCT_SYMBOLS:
        return "P"
    if _is_selector(c):
        return "v"
    word = False
    if _MARK.fullmatch(c):
        word = o < 0x10000 and _ALPHABETIC.fullmatch(c) is not None
    elif cat[0] == "L" and not _is_hard_letter(o):
        word = True
    if word:
        return "M" if _opens_stray_word(c) else "W"
    if marks_like_punct(c):
        return "p"
    return "n" if digit_border(c) else "l"


class ClassTable(dict[int, str]):
    """A ``str.translate`` table from code point to stream class, filled on first sight.

    ASCII is filled up front; other characters are classified when first met and kept while the
    table is below ``limit`` entries, so hostile text of many distinct characters cannot grow it
    without bound (past the limit a character is just classified again next time).
    """

    def __init__(self, limit: int = 20_000) -> None:
        super().__init__((o, classify(chr(o))) for o in range(128))
        self._limit = limit

    def __missing__(self, key: int) -> str:
        value = classify(chr(key))
        if len(self) < self._limit:
            self[key] = value
        return value


# --- case ------------------------------------------------------------------------------------


def case_lower(text: str) -> str:
    """Lowercase as the tokenizer's case markers do (``ϴ`` stays, Unicode 16 pairs fold)."""
    return "".join(c if c in _UNCASED else _NEW_CASE_PAIRS.get(c, c.lower()) for c in text)


def is_upper(c: str) -> bool:
    """A capital is a character that lowers to something else (``ℂ`` is Lu but caseless)."""
    if c in _UNCASED:
        return False
    return c in _NEW_CASE_PAIRS or (c.isupper() and case_lower(c) != c)


def is_lower(c: str) -> bool:
    return c in _NEW_CASE_PAIRS.values() or c.islower()


@lru_cache(maxsize=1024)
def digit_run(body: str) -> bool:
    """A uniform run of decimal digits (Nd) or of other numbers (No)."""
    category = unicodedata.category(body[0])
    return category in ("Nd", "No") and all(unicodedata.category(c) == category for c in body[1:])
