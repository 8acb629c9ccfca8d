"""The measured piece vocabularies (``data/pieces_*.json.gz``), loaded once per family.

Each file lists every string that costs one token in a family's tokenizer, written in a public
notation: ``⟨bow⟩``/``⟨eow⟩`` word boundaries, ``⟨shift⟩``/``⟨caps⟩`` case rewrites and
``⟨0xNN⟩`` raw bytes (see ``data/README.md`` for where the files come from). Here the notation
becomes the one-character markers of ``_stream`` so the tiler compares plain strings.

The tiler needs two things from a vocabulary: which strings are pieces, and which strings can
still grow into one (so a scan from a position stops as soon as no piece can match). Both go into
one dict, piece -> True, proper prefix -> False: about 100,000 keys for v3, one hash look-up per
extension step, and far less memory than a trie of nested dicts.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Final, Literal

from chanctx.context._stream import BOW, CAPS, EOW, SHIFT, StreamRules

__all__ = ["VocabName", "Vocabulary", "vocabulary"]

VocabName = Literal["v3", "v4_7"]

_ATOMS: Final = {"⟨bow⟩": BOW, "⟨eow⟩": EOW, "⟨shift⟩": SHIFT, "⟨caps⟩": CAPS}
# One atom, a run of byte atoms (decoded together: a character may span several), or one char.
_NOTATION: Final = re.compile(r"⟨(?:bow|eow|shift|caps)⟩|(?:⟨0x[0-9A-Fa-f]{2}⟩)+|.", re.S)
_BYTE: Final = re.compile(r"⟨0x([0-9A-Fa-f]{2})⟩")


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """One family's pieces in marker form, and the byte-level fallback for uncovered characters."""

    name: VocabName
    rules: StreamRules
    # piece -> True, proper prefix of a piece (and not itself one) -> False.
    table: dict[str, bool]
    longest: int
    # Hex strings of the byte sequences that cost one token (partial UTF-8 prefixes and whole
    # one-token characters): what a character no piece covers is tiled over.
    byte_tokens: frozenset[str]
    byte_longest: int


def parse_piece(public: str) -> str:
    """A piece in the file's notation -> the marker form ``_stream`` writes."""
    out: list[str] = []
    for atom in _NOTATION.findall(public):
        if atom in _ATOMS:
            out.append(_ATOMS[atom])
        elif atom.startswith("⟨0x"):
            out.append(bytes(int(h, 16) for h in _BYTE.findall(atom)).decode("utf-8"))
        else:
            out.append(atom)
    return "".join(out)


# The family rules each file was measured with, plus v4.8's: it reuses v4.7's pieces, but its
# message frame ends without a word boundary, so a leading space is a character of its own.
_FILES: Final[dict[VocabName, str]] = {"v3": "pieces_v3.json.gz", "v4_7": "pieces_v4_7.json.gz"}


@cache
def vocabulary(name: VocabName, frame_bow: bool) -> Vocabulary:
    """The vocabulary ``name`` under the frame rule ``frame_bow`` (parsed once per pair)."""
    raw = files("chanctx.context").joinpath("data", _FILES[name]).read_bytes()
    doc = json.loads(gzip.decompress(raw))
    meta = doc["meta"]
    groups: dict[str, dict[str, object]] = doc["tokens"]
    pieces = {
        parse_piece(p) for group, ps in groups.items() if group != "bytes_fallback" for p in ps
    }
    # The files list a contraction as ``'s``; the stream writes the suffix closed, ``'s⟨eow⟩``
    # (the apostrophe opened the word), and a contraction piece covers that whole spelling.
    pieces |= {parse_piece(p) + EOW for p in groups["contractions"]}
    table: dict[str, bool] = {}
    for piece in pieces:
        for end in range(1, len(piece)):
            table.setdefault(piece[:end], False)
    for piece in pieces:
        table[piece] = True
    units = {p for p in pieces if len(p) == 1 and p not in _ATOMS.values()}
    byte_tokens = frozenset(groups["bytes_fallback"]) | {u.encode("utf-8").hex() for u in units}
    rules = StreamRules(
        fold_quotes=bool(meta["fold_quotes"]),
        allcaps_min=meta["allcaps_min"],
        frame_bow=frame_bow,
    )
    return Vocabulary(
        name=name,
        rules=rules,
        table=table,
        longest=max(map(len, pieces)),
        byte_tokens=byte_tokens,
        byte_longest=max(len(t) // 2 for t in byte_tokens),
    )
