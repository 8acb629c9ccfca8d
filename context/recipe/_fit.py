"""Fitting the loaded text sources into the recipe's budgets.

Each text source is held to its own ``max_tokens``; with ``total_max_tokens`` the sources are
served in recipe order from what the earlier ones left, and once one was cut or reduced every
later one is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from chanctx.context.budget import Chunk, pack
from chanctx.context.recipe._models import (
    ChannelSnapshotSource,
    ComputedFileSource,
    FileSource,
    JournalSource,
    PlaybookSource,
    Recipe,
    Source,
    TextSource,
    ThreadContextSource,
    _BudgetSource,
    source_label,
    source_name,
)
from chanctx.context.tokens import TokenCounter, default_counter

__all__ = ["Fitted", "SourceContent", "TextBlock", "fit_sources"]


@dataclass(frozen=True)
class SourceContent:
    """What the runner loaded for one text source: its text, or None when it was skipped.

    ``note`` says why it was skipped (it is passed on to ``Fitted.notes``).
    """

    text: str | None
    note: str | None = None


@dataclass(frozen=True)
class TextBlock:
    """One system text block, in recipe order."""

    name: str  # the source's id, else its file name
    text: str
    tokens: int
    source_index: int
    truncated: bool  # cut at a sentence boundary (the text then ends with "...")


@dataclass(frozen=True)
class Fitted:
    """The recipe applied: what to send, and what was left out.

    * ``snapshot_budget`` / ``thread_budget``: None when the recipe has no such source, or it was
      dropped to honour ``total_max_tokens``: attach no ChannelSnapshot / ThreadContext then.
    * ``journal_max_iterations``: None keeps the whole conversation; N keeps the last N turns;
      0 (the recipe has no journal source) keeps none: each turn is answered from the recipe's
      context and the new message only.
    """

    blocks: tuple[TextBlock, ...]
    snapshot_budget: int | None
    snapshot_window: int | None
    thread_budget: int | None
    journal_max_iterations: int | None
    notes: tuple[str, ...] = ()
    total_max_tokens: int | None = None
    # The playbook's budget; None when the recipe has no playbook source (or it was dropped).
    playbook_budget: int | None = None

    @property
    def used_tokens(self) -> int:
        """Tokens of the blocks plus the snapshot, thread and playbook budgets: <=
        total_max_tokens."""
        return (
            sum(block.tokens for block in self.blocks)
            + (self.snapshot_budget or 0)
            + (self.thread_budget or 0)
            + (self.playbook_budget or 0)
        )


@dataclass
class _Candidate:
    index: int
    source: TextSource
    text: str
    tokens: int
    truncated: bool


@dataclass
class _Plan:
    """The state of the walk over the sources under ``total_max_tokens``."""

    room: int | None  # None: no total budget
    total: int | None
    blocks: list[TextBlock] = field(default_factory=list)
    budgets: dict[int, int] = field(default_factory=dict)  # source index -> granted budget
    notes: list[str] = field(default_factory=list)
    # Set once a source was cut or reduced for the total: every later source is then left out,
    # so a later source is never kept while an earlier one lost something (context.budget rule 4).
    exhausted: bool = False


def fit_sources(
    recipe: Recipe,
    contents: Sequence[SourceContent],
    counter: TokenCounter | None = None,
) -> Fitted:
    """Apply ``max_tokens`` and ``total_max_tokens`` to the loaded text sources.

    ``contents`` has one entry per text source (``recipe.text_sources()``), in order.

    1. Each text source over its ``max_tokens`` is cut at a sentence boundary (dropped when not
       even its first sentence fits). Empty texts are dropped: the API rejects empty blocks.
    2. With ``total_max_tokens``, sources are served in order from what the earlier ones left.
       A text source that does not fit is cut at a sentence boundary or dropped; a
       channel_snapshot and thread_context that are adjacent in the recipe (journal sources
       between them do not count) share what is left in proportion to their budgets. Once a source
       was cut or reduced, every later one is left out. Journal sources take no room here: the
       conversation is the session's to compact.
    """
    counter = counter or default_counter()
    text_sources = recipe.text_sources()
    if len(contents) != len(text_sources):
        raise ValueError(
            f"fit_sources: {len(contents)} contents for {len(text_sources)} text sources"
        )

    def cost(_chunk: Chunk[None], text: str) -> int:
        return counter.count(text)

    plan = _Plan(room=recipe.total_max_tokens, total=recipe.total_max_tokens)
    candidates: dict[int, _Candidate] = {}
    for (index, source), content in zip(text_sources, contents, strict=True):
        if content.note:
            plan.notes.append(content.note)
        candidate = _own_limit(index, source, content.text, cost, plan.notes)
        if candidate is not None:
            candidates[index] = candidate

    for group in _groups(recipe.sources):
        first = recipe.sources[group[0]]
        if isinstance(first, FileSource | ComputedFileSource):
            if group[0] in candidates:
                _serve_text(candidates[group[0]], cost, plan)
        else:
            _serve_budgets(recipe, group, plan)

    snapshot = next((s for s in recipe.sources if isinstance(s, ChannelSnapshotSource)), None)
    thread = next((s for s in recipe.sources if isinstance(s, ThreadContextSource)), None)
    journal = next((s for s in recipe.sources if isinstance(s, JournalSource)), None)
    playbook = next((s for s in recipe.sources if isinstance(s, PlaybookSource)), None)
    snapshot_budget = _granted(recipe, snapshot, plan)
    return Fitted(
        blocks=tuple(plan.blocks),
        snapshot_budget=snapshot_budget,
        snapshot_window=snapshot.window if snapshot and snapshot_budget is not None else None,
        thread_budget=_granted(recipe, thread, plan),
        playbook_budget=_granted(recipe, playbook, plan),
        journal_max_iterations=0 if journal is None else journal.max_iterations,
        notes=tuple(plan.notes),
        total_max_tokens=recipe.total_max_tokens,
    )


def _own_limit(
    index: int,
    source: TextSource,
    text: str | None,
    cost: Callable[[Chunk[None], str], int],
    notes: list[str],
) -> _Candidate | None:
    """The source's text within its own ``max_tokens``, or None when nothing is left to send."""
    if text is None:
        return None
    label = source_label(index, source)
    if not text.strip():
        notes.append(f"{label}: empty, nothing sent")
        return None
    chunk = Chunk(key=str(index), text=text, item=None)
    tokens = cost(chunk, text)
    limit = source.max_tokens
    if limit is None or tokens <= limit:
        return _Candidate(index, source, text, tokens, truncated=False)
    packing = pack([chunk], budget=limit, cost=cost)
    if not packing.included:
        notes.append(
            f"{label}: dropped: not even its first sentence fits max_tokens {limit} "
            f"({tokens} tokens)"
        )
        return None
    kept = packing.included[0]
    notes.append(
        f"{label}: cut at a sentence boundary to {kept.tokens} of {tokens} tokens "
        f"(max_tokens {limit})"
    )
    return _Candidate(index, source, kept.text, kept.tokens, truncated=True)


def _groups(sources: Sequence[Source]) -> list[list[int]]:
    """Source indexes in serving order: each text source alone; adjacent budget sources together."""
    groups: list[list[int]] = []
    previous_was_budget = False
    for index, source in enumerate(sources):
        if isinstance(source, JournalSource):
            continue
        is_budget = isinstance(source, ChannelSnapshotSource | ThreadContextSource | PlaybookSource)
        if is_budget and previous_was_budget:
            groups[-1].append(index)
        else:
            groups.append([index])
        previous_was_budget = is_budget
    return groups


def _serve_text(
    candidate: _Candidate, cost: Callable[[Chunk[None], str], int], plan: _Plan
) -> None:
    label = source_label(candidate.index, candidate.source)
    name = source_name(candidate.source)
    if plan.room is None or (candidate.tokens <= plan.room and not plan.exhausted):
        plan.blocks.append(
            TextBlock(name, candidate.text, candidate.tokens, candidate.index, candidate.truncated)
        )
        if plan.room is not None:
            plan.room -= candidate.tokens
        return
    if plan.exhausted:
        plan.notes.append(
            f"{label}: dropped: an earlier source used up total_max_tokens {plan.total}"
        )
        return
    plan.exhausted = True
    chunk = Chunk(key=str(candidate.index), text=candidate.text, item=None)
    packing = pack([chunk], budget=plan.room, cost=cost)
    if not packing.included:
        plan.notes.append(
            f"{label}: dropped: {candidate.tokens} tokens, {plan.room} left of "
            f"total_max_tokens {plan.total}, and not even its first sentence fits"
        )
        return
    kept = packing.included[0]
    plan.blocks.append(TextBlock(name, kept.text, kept.tokens, candidate.index, truncated=True))
    plan.notes.append(
        f"{label}: cut at a sentence boundary to {kept.tokens} of {candidate.tokens} tokens "
        f"to fit total_max_tokens {plan.total}"
    )
    plan.room -= kept.tokens


def _serve_budgets(recipe: Recipe, group: list[int], plan: _Plan) -> None:
    sources = [_budget_source(recipe, index) for index in group]
    wanted = [source.budget_tokens for source in sources]
    if plan.room is None or (sum(wanted) <= plan.room and not plan.exhausted):
        plan.budgets.update(zip(group, wanted, strict=True))
        if plan.room is not None:
            plan.room -= sum(wanted)
        return
    if plan.exhausted:
        for index, source in zip(group, sources, strict=True):
            plan.notes.append(
                f"{source_label(index, source)}: dropped: an earlier source used up "
                f"total_max_tokens {plan.total}"
            )
        return
    plan.exhausted = True
    room, total_wanted = plan.room, sum(wanted)
    for index, source, want in zip(group, sources, wanted, strict=True):
        # Floor division: the shares never add up to more than the room.
        granted = want * room // total_wanted
        label = source_label(index, source)
        if granted == 0:
            plan.notes.append(
                f"{label}: dropped: no room left within total_max_tokens {plan.total}"
            )
            continue
        plan.budgets[index] = granted
        plan.room -= granted
        plan.notes.append(
            f"{label}: budget reduced from {want} to {granted} tokens to fit "
            f"total_max_tokens {plan.total}"
        )


def _budget_source(recipe: Recipe, index: int) -> _BudgetSource:
    source = recipe.sources[index]
    assert isinstance(source, ChannelSnapshotSource | ThreadContextSource | PlaybookSource)
    return source


def _granted(recipe: Recipe, source: _BudgetSource | None, plan: _Plan) -> int | None:
    if source is None:
        return None
    index = next(i for i, candidate in enumerate(recipe.sources) if candidate is source)
    return plan.budgets.get(index)
