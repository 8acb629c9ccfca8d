"""What one PostgreSQL search reads (``_pg_search``): the frequency sample and the plan made
from it, shared by the statement that scores in the database and by the answer computed from
kept reads (``_pg_search_cache``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PHRASE", "Plan", "Sample"]

# A term's tsquery is sent as a constant: a function call in a statement would be evaluated
# again for every row it is tested on (phraseto_tsquery is not folded into a constant there).
PHRASE = "%s::tsquery"


@dataclass(frozen=True, slots=True)
class Sample:
    """The newest messages each term is tested on (``_pg_search``, step 1)."""

    rows: int  # messages in the sample (fewer than SAMPLE: the whole channel)
    mean_length: float  # lexemes a message
    keys: list[frozenset[int]]  # per term: the sample's messages holding it

    @property
    def hits(self) -> list[int]:
        return [len(k) for k in self.keys]

    def pair(self, i: int, j: int) -> int:
        """Sample messages holding both terms (``doc @@ (a && b)``: both phrases match)."""
        return len(self.keys[i] & self.keys[j])


@dataclass(slots=True)
class Plan:
    """Which rows one search reads, and the weights it scores them with."""

    phrases: list[str]
    rare: list[int]  # terms counted exactly on the rows read
    weights: list[float]  # the estimated IDF of each term (used for the common ones)
    size: int  # live messages in the channel
    limit: int
    cap: int  # DRIVE: the rows read whole, at most
    pairs: list[tuple[int, int]] = field(default_factory=list)  # common pairs read whole
    common: list[int] = field(default_factory=list)  # terms whose newest rows fill in
    fill_scan: int = 0  # the newest messages the fill looks at, at most
    before: int | None = None  # only rows older than this key are offered

    @property
    def drive(self) -> list[str]:
        """The tsquery parts OR-ed to find every row read whole."""
        return [PHRASE for _ in self.rare] + [f"({PHRASE} && {PHRASE})" for _ in self.pairs]

    @property
    def drive_args(self) -> list[str]:
        return [self.phrases[n] for n in self.rare] + [
            self.phrases[k] for pair in self.pairs for k in pair
        ]

    @property
    def fill(self) -> list[str]:
        return [self.phrases[n] for n in self.common]
