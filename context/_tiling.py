"""The count: a minimum tiling of the marked stream over one family's measured pieces.

Every piece costs one token; a character no piece covers costs the tiling of its UTF-8 bytes
over the byte-level pieces (each lone byte costs one). The count is the minimum number of tiles.

Speed comes from cutting the stream where no piece can cross, and pricing each cut segment once:

* no piece mixes whitespace with anything else;
* an end-of-word marker is always a piece's last character;
* a begin-of-word or case marker is always at a piece's start (after other case markers only).

So a minimum tiling of the whole stream is the sum of minimum tilings of the segments between
such cuts (a word with its markers, a punctuation run, a whitespace run), and the same segments
recur endlessly in chat and JSON. Their costs are memoised in a bounded LRU cache; segments
longer than ``_CACHED_LEN`` are priced without caching so the cache's memory stays bounded.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from chanctx.context._charclass import ClassTable
from chanctx.context._stream import (
    AFTER_OTHER,
    AFTER_SPACE,
    AT_START,
    BOW,
    CAPS,
    EOW,
    MARKERS,
    SHIFT,
    WHITESPACE,
    chunk_stream,
    message_body,
)
from chanctx.context._vocab import Vocabulary

__all__ = ["Tiler"]

# A whitespace run; or optional case markers, an optional begin marker, non-marker text and an
# optional end marker (never empty); or any single character left over (a lone marker).
_SEGMENT: Final = re.compile(
    rf"\s+|[{SHIFT}{CAPS}]*(?:{BOW}[^\s{BOW}{EOW}{SHIFT}{CAPS}]*|[^\s{BOW}{EOW}{SHIFT}{CAPS}]+){EOW}?|.",
    re.S,
)
_CACHED_LEN: Final = 64
# A chunk's cache key starts with one character for its edges: (left, single space after).
_FLAGS: Final = tuple(
    (chr(0x30 + 2 * left), chr(0x31 + 2 * left)) for left in (AT_START, AFTER_SPACE, AFTER_OTHER)
)
_EDGES: Final = {
    flag: (left, bool(right)) for left, pair in enumerate(_FLAGS) for right, flag in enumerate(pair)
}


_CHUNK: Final = re.compile(f"([{WHITESPACE}]*)([^{WHITESPACE}]+)")
_CASE: Final = SHIFT + CAPS
_ZEROS: Final = str.maketrans("123456789", "000000000")
_DIGITS: Final = re.compile("[0-9]")


_DIGIT_RUNS: Final = re.compile("[0-9]+|[^0-9]+")
_DIGIT_LENGTHS: dict[int, tuple[Vocabulary, int]] = {}  # id(vocab) -> (vocab, its length)


def _digit_pieces(vocab: Vocabulary) -> int:
    """L when every string of 1 to L ASCII digits is a piece, no longer one is, and no piece
    or prefix mixes digits with anything else; 0 when the vocabulary is not like that (then
    digits are tiled like any text). Checked once per vocabulary (both of ctok's: L = 3)."""
    known = _DIGIT_LENGTHS.get(id(vocab))
    if known is not None and known[0] is vocab:
        return known[1]
    longest, mixed = 0, False
    for key in vocab.table:
        if not _DIGITS.search(key):
            continue
        if not key.isascii() or not key.isdigit():
            mixed = True
            break
        longest = max(longest, len(key))
    table = vocab.table
    complete = longest > 0 and all(
        table.get(f"{n:0{length}d}") is True
        for length in range(1, longest + 1)
        for n in range(10**length)
    )
    length = longest if complete and not mixed else 0
    _DIGIT_LENGTHS[id(vocab)] = (vocab, length)
    return length


class Tiler:
    """Counts one family's tokens. Thread-safe: the caches are ``lru_cache`` (locked) and a
    ``ClassTable`` only ever gains entries that any thread would compute identically."""

    def __init__(self, vocab: Vocabulary, cache_size: int = 1 << 15) -> None:
        self.vocab = vocab
        self._rules = vocab.rules
        self._table = vocab.table
        self._classes = ClassTable()
        self._chunk = lru_cache(maxsize=cache_size)(self._price_chunk)
        self._segment = lru_cache(maxsize=cache_size // 2)(self._tile)
        self._char = lru_cache(maxsize=4096)(self._char_cost)
        self._template = lru_cache(maxsize=4096)(self._marked)
        self._digits = _digit_pieces(vocab)

    def count(self, text: str) -> int:
        """Tokens of ``text`` as one user message's content (the message frame not included)."""
        if not text:
            return 0
        rules = self._rules
        body, newlines = message_body(text, rules)
        total = self._trailing_newlines(newlines) if newlines else 0
        if not body:
            return total + rules.frame_bow  # the frame's boundary marker, standing alone
        pairs = _CHUNK.findall(body)
        trailing = body[len(body.rstrip(WHITESPACE)) :]
        lead = pairs[0][0] if pairs else trailing
        if lead and rules.frame_bow and lead[0] != " ":
            total += 1  # leading tab or newline: the frame's boundary marker stands alone
        chunk, price, space = self._chunk, self._price_chunk, self._space
        after = [ws for ws, _ in pairs[1:]]
        if pairs:
            after.append(trailing)
        prev_eow = 0
        for (ws, text_chunk), next_ws in zip(pairs, after, strict=True):
            left = AT_START if not ws else AFTER_SPACE if ws[-1] == " " else AFTER_OTHER
            right = next_ws[:1] == " " and next_ws[:2] != "  "
            key = _FLAGS[left][right] + text_chunk
            value = chunk(key) if len(key) <= _CACHED_LEN else price(key)
            if ws and not (ws == " " and prev_eow and value & 2):  # else: the seam, free
                total += space(ws)
            total += value >> 2
            prev_eow = value & 1
        return total + space(trailing) if trailing else total

    def cache_info(self) -> tuple[int, int]:
        """``(entries, maxsize)`` of the chunk cache (for tests of its bound)."""
        info = self._chunk.cache_info()
        return info.currsize, info.maxsize or 0

    def _price_chunk(self, key: str) -> int:
        """``cost << 2 | starts_with_word_boundary << 1 | ends_with_word_boundary`` of one chunk
        (``key``: its edge flags, then its text)."""
        stream = self._stream(key)
        segment = self._segment
        cost = 0
        for seg in _SEGMENT.findall(stream):
            cost += segment(seg) if len(seg) <= _CACHED_LEN else self._tile(seg)
        starts = stream.lstrip(_CASE)[:1] == BOW
        return cost << 2 | starts << 1 | (stream[-1:] == EOW)

    def _stream(self, key: str) -> str:
        """The marked stream of one chunk (``key``: edge flags, then text). ASCII digits get
        no markers and no case, and all share one class, so a chunk's stream is its digit
        template's (every digit written as 0) with the digits put back in order: ids and
        times, new in every message, reuse one template."""
        if len(key) > _CACHED_LEN:
            return self._marked(key)  # a long chunk's template is not kept: memory stays bounded
        masked = key[0] + key[1:].translate(_ZEROS)  # key[0], the edge flags, is a digit too
        if masked == key:
            return self._marked(key)
        parts = self._template(masked).split("0")
        digits = _DIGITS.findall(key, 1)
        return parts[0] + "".join(d + p for d, p in zip(digits, parts[1:], strict=True))

    def _marked(self, key: str) -> str:
        left, right = _EDGES[key[0]]
        return chunk_stream(key[1:], self._rules, self._classes, left, right)

    def _space(self, run: str) -> int:
        return self._segment(run) if len(run) <= _CACHED_LEN else self._tile(run)

    def _tile(self, seg: str) -> int:
        """Minimum tiles over ``seg``: a forward scan from each position, extended while the text
        read so far is still a prefix of some piece."""
        table = self._table
        if table.get(seg):
            return 1  # the usual case: a whole word with its markers is one piece
        if self._digits and _DIGITS.search(seg):
            return self._split_digits(seg)
        n = len(seg)
        longest = self.vocab.longest
        best = [0] + [4 * n + 4] * n
        for i in range(n):
            here = best[i]
            char = seg[i]
            single = here + (1 if table.get(char) or char in MARKERS else self._char(char))
            if single < best[i + 1]:
                best[i + 1] = single
            here += 1
            for j in range(i + 2, min(n, i + longest) + 1):
                hit = table.get(seg[i:j])
                if hit is None:
                    break
                if hit and here < best[j]:
                    best[j] = here
        return best[n]

    def _split_digits(self, seg: str) -> int:
        """``seg`` tiled run by run: no piece holds a digit beside anything else, and every
        string of up to ``_digits`` digits is a piece, none longer (``_digit_pieces``), so a
        run of n digits costs ceil(n / _digits) and the runs between are tiled alone."""
        total = 0
        for run in _DIGIT_RUNS.findall(seg):
            if "0" <= run[0] <= "9":
                total -= -len(run) // self._digits
            else:
                total += self._segment(run) if len(run) <= _CACHED_LEN else self._tile(run)
        return total

    def _char_cost(self, char: str) -> int:
        """A character no piece covers: a minimum tiling of its UTF-8 bytes over the byte pieces."""
        data = char.encode("utf-8").hex()
        tokens, longest = self.vocab.byte_tokens, self.vocab.byte_longest
        n = len(data) // 2
        best = [0] + [n + 1] * n
        for i in range(n):
            for j in range(i + 1, min(n, i + longest) + 1):
                if (j == i + 1 or data[2 * i : 2 * j] in tokens) and best[i] + 1 < best[j]:
                    best[j] = best[i] + 1
        return best[n]

    @lru_cache(maxsize=256)  # noqa: B019 - one Tiler per family lives for the process
    def _trailing_newlines(self, n: int) -> int:
        """What ``n`` newlines ending the text cost: the frame appends two more and one token may
        span the join, so the tokenizer tiles ``n + 2`` newlines of which the frame already pays
        one token (the cost is not monotone: 28 trailing newlines are free in v3)."""
        if n == 0:
            return 0
        return self._tile("\n" * (n + 2)) - 1
