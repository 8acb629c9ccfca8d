"""The full-text index: a few shared FTS5 tables (shards), channel-scoped terms in them.

A message's row id picks its shard (``id >> SHARD_BITS``: row ids grow as messages arrive, so
a shard holds at most ``2**SHARD_BITS`` messages, and the count of shards follows the count of
messages, never the count of channels). Every channel shares the shards; what keeps a search
in a small channel from reading a big channel's postings is the term itself: each word of a
document is written with the channel's code in front (``channel_code``, 2 to 7 characters), so
"deploy" in channel 7 and "deploy" in channel 8 are two terms of the index, with two
postings lists. Queries are scoped the same way.

Words are split here, in Python (letters and digits, as FTS5's ``unicode61`` tokenizer splits
them), and handed to FTS5 joined by spaces: FTS5 then lower-cases, folds diacritics and stems
each one (Porter stems the end of a word; the code in front is made of digits and consonants
only, so it changes no stem). Should FTS5 split a word further than Python did (a letter newer
than its Unicode tables), the tail would be unscoped: the reads join every hit to its message
and keep the channel's own, so that costs a candidate, never a wrong one.

An erased word stays in a shard's segments until the shard is merged (``optimize``); the
erase pass merges only the shards marked ``pending`` in ``shards``, so one deletion costs one
shard (at most ``2**SHARD_BITS`` messages), not the store nor the channel.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence

from chanctx.cache.channel_store._rows import document

__all__ = [
    "SHARD_BITS",
    "TOKENIZE",
    "channel_code",
    "create_shard",
    "ensure_shard",
    "index_rows",
    "index_words",
    "known_shards",
    "reindex_all",
    "scoped_document",
    "scoped_phrases",
    "scoped_query",
    "scoped_text",
    "scoped_texts",
    "scoped_words_sql",
    "shard_of",
    "shard_table",
]

SHARD_BITS = 17  # 131,072 messages a shard: an erase merge of one shard takes about a second
# FTS5's own tokenizer: Unicode word boundaries, diacritics folded, Porter stems (the same
# algorithm as the in-memory index's stemmer, so "failing" finds "failed" in both).
TOKENIZE = "porter unicode61 remove_diacritics 2"
# Digits and consonants: Porter's measure of a word counts vowel-consonant runs, so a prefix
# of consonants leaves every stem as it was. A code's first symbol says how long it is (so no
# code is the start of another, and "code + word" reads one way only); the first channels get
# the shortest codes, since every word of the index carries one.
_ALPHABET = "0123456789bcdfghjklmnpqrstvwxz"
# (first symbols, total length): 17 x 30 = 510 channels in 2 characters, 10 x 30**2 = 9,000 in
# 3, 2 x 30**4 = 1,620,000 in 5, then 30**6 in 7.
_WIDTHS = ((_ALPHABET[:17], 2), (_ALPHABET[17:27], 3), (_ALPHABET[27:29], 5), (_ALPHABET[29:], 7))
_WORD = re.compile(r"[^\W_]+")
# The same split for ASCII text, as a byte table: letters and digits kept, the rest spaces.
_ASCII_WORDS = bytes(c if chr(c).isalnum() and c < 128 else 32 for c in range(256))


def shard_of(row_id: int) -> int:
    return row_id >> SHARD_BITS


def shard_table(shard: int) -> str:
    return f"ix_{int(shard)}"


def channel_code(chan: int) -> str:
    """The code written in front of each of the channel's words (prefix-free, see _WIDTHS)."""
    if chan < 0:
        raise ValueError(f"channel id {chan} is negative")
    left = chan
    for firsts, width in _WIDTHS:
        rest = len(_ALPHABET) ** (width - 1)
        if left < len(firsts) * rest:
            head, tail = divmod(left, rest)
            digits = []
            for _ in range(width - 1):
                tail, place = divmod(tail, len(_ALPHABET))
                digits.append(_ALPHABET[place])
            return firsts[head] + "".join(reversed(digits))
        left -= len(firsts) * rest
    raise ValueError(f"channel id {chan} is beyond what a term code can hold")


def scoped_text(code: str, text: str) -> str:
    """``text``'s words, each with ``code`` in front, joined by spaces."""
    if text.isascii():  # most chat: one C pass turns every non-word byte into a space
        words = text.encode().translate(_ASCII_WORDS).decode().split()
    else:
        words = _WORD.findall(text)
    return code + (" " + code).join(words) if words else ""


def index_words(text: str) -> str:
    """``text``'s words joined by single spaces: ``scoped_text`` before each word gets its
    channel's code. ``scoped_words_sql`` adds the codes inside SQLite, so an import can split
    the words where the channel's code is not known yet (its parsing process)."""
    if text.isascii():
        return " ".join(text.encode().translate(_ASCII_WORDS).decode().split())
    return " ".join(_WORD.findall(text))


def scoped_words_sql(code: str) -> str:
    """An SQL expression of the parameter ``?2`` (``index_words`` of a document) that is its
    ``scoped_text`` in the channel of ``code``: the code in front of every word."""
    if not code.isalnum() or not code.isascii():
        raise ValueError(f"channel code {code!r} is not alphanumeric")
    return f"iif(?2 = '', '', '{code}' || replace(?2, ' ', ' {code}'))"


def scoped_texts(code: str, texts: Sequence[str]) -> list[str]:
    """``scoped_text`` of each (measured: faster than any split of the joined batch)."""
    return [scoped_text(code, text) for text in texts]


def scoped_document(code: str, text: str, more: str | None) -> str:
    """What the index holds for a row (its document, see ``_rows.document``), scoped."""
    return scoped_text(code, text if more is None else document(text, more))


def scoped_phrases(chan: int, terms: Sequence[str]) -> list[str]:
    """One FTS5 phrase query a term of channel ``chan`` (terms without a word character
    give none). Each is a quoted phrase of the term's scoped words, so "checkout-api" finds
    the two words side by side and no term can inject FTS5 syntax."""
    code = channel_code(chan)
    phrases: list[str] = []
    for term in terms:
        words = scoped_text(code, term)
        if words:
            phrase = f'"{words}"'
            if phrase not in phrases:
                phrases.append(phrase)
    return phrases


def scoped_query(chan: int, terms: Sequence[str]) -> str | None:
    """An FTS5 query matching any of ``terms`` in channel ``chan``; None when no term has a
    word character (:func:`scoped_phrases` OR-ed)."""
    phrases = scoped_phrases(chan, terms)
    return " OR ".join(phrases) if phrases else None


def create_shard(db: sqlite3.Connection, shard: int) -> None:
    # Contentless: the text lives once, in messages; the index keeps terms and positions only.
    db.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {shard_table(shard)} "
        f"USING fts5(doc, content='', tokenize='{TOKENIZE}')"
    )
    db.execute("INSERT OR IGNORE INTO shards (id, pending) VALUES (?, 0)", (shard,))


def ensure_shard(db: sqlite3.Connection, known: set[int], shard: int) -> None:
    """Create ``shard`` unless ``known`` (the shards that exist) holds it."""
    if shard not in known:
        create_shard(db, shard)
        known.add(shard)


def known_shards(db: sqlite3.Connection) -> set[int]:
    return {int(s) for (s,) in db.execute("SELECT id FROM shards")}


def index_rows(
    db: sqlite3.Connection, rows: Iterable[tuple[int, int, str, str | None]], known: set[int]
) -> None:
    """Index ``(row id, channel id, text, more)`` rows (grouped by shard, one executemany a
    shard) and note which shards each channel now has words in."""
    by_shard: dict[int, list[tuple[int, str]]] = {}
    seen: set[tuple[int, int]] = set()
    codes: dict[int, str] = {}
    for row_id, chan, text, more in rows:
        code = codes.get(chan)
        if code is None:
            code = codes[chan] = channel_code(chan)
        shard = row_id >> SHARD_BITS
        by_shard.setdefault(shard, []).append((row_id, scoped_document(code, text, more)))
        seen.add((chan, shard))
    for shard, docs in by_shard.items():
        ensure_shard(db, known, shard)
        db.executemany(f"INSERT INTO {shard_table(shard)} (rowid, doc) VALUES (?, ?)", docs)
    db.executemany("INSERT OR IGNORE INTO chan_shards (chan, shard) VALUES (?, ?)", sorted(seen))


def reindex_all(db: sqlite3.Connection) -> set[int]:
    """Index every live message (into shards made as needed); the shards there are after."""
    known = known_shards(db)
    after = -1
    while True:
        rows = db.execute(
            "SELECT id, chan, text, more FROM messages WHERE deleted = 0 AND id > ? "
            "ORDER BY id LIMIT 50000",
            (after,),
        ).fetchall()
        if not rows:
            return known
        index_rows(db, rows, known)
        after = rows[-1][0]
