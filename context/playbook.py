"""A channel's playbook: what the channel has learned, as bullets that grow by deltas and are
refined in budget, never rewritten or summarised.

A bullet reads ``[owners-00001] helpful=2 harmful=0 :: Kim owns payments-api.`` and lives in a
section. Its id (``<section slug>-<5 digits>``, one counter per section) never changes: a merge
keeps the older bullet's id and folds the newer one into it (provenance joined, counters
summed); the absorbed id becomes an alias, so a vote on it still lands.

States (so that a wrong or stale bullet stops reaching the model, and nothing is lost):

* ``unverified``: proposed by a curator (a model or the offline rules); sent labelled as such.
* ``verified``: a person marked an answer that used it helpful.
* ``superseded``: a newer bullet on the same subject replaced it (kept, never sent).
* ``quarantined``: ``harmful >= 2`` and net utility below zero (kept, never sent again).

Counters only grow: a vote adds one, a merge sums; nothing ever subtracts. What is sent is
chosen by utility under a token budget: the least useful bullets (harmful, never confirmed,
oldest) are left out first, and a bullet's text is never cut (no brevity bias).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal

from chanctx.context._likeness import (
    EMBEDDING_SIMILARITY,
    Similarity,
    anchors,
    same_fact,
    similarity,
    words,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ACTIVE",
    "EMBEDDING_SIMILARITY",
    "SECTIONS",
    "Bullet",
    "BulletSource",
    "Delta",
    "Playbook",
    "Section",
    "Similarity",
    "anchors",
    "render_playbook",
    "same_fact",
    "similarity",
    "words",
]

Section = Literal["owners", "conventions", "runbooks", "pitfalls", "glossary"]
SECTIONS: Final[tuple[Section, ...]] = ("owners", "conventions", "runbooks", "pitfalls", "glossary")
State = Literal["unverified", "verified", "superseded", "quarantined"]
ACTIVE: Final = frozenset({"unverified", "verified"})
MAX_CONTENT: Final = 500  # characters; a longer proposal is refused, not cut


class BulletSource(BaseModel):
    """Where a bullet came from: the turn that curated it and the Slack messages it rests on."""

    model_config = ConfigDict(frozen=True)

    turn: str
    messages: tuple[str, ...] = ()


class Delta(BaseModel):
    """A curator's proposal: ``ADD`` a bullet, or ``UPDATE`` one (confirm it with new sources;
    new content on the same subject supersedes it with a new bullet: never an in-place
    rewrite, so nothing is lost to a bad edit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: Literal["ADD", "UPDATE"]
    section: Section = "pitfalls"
    content: str = Field(default="", max_length=MAX_CONTENT)
    # What the bullet is about ("owner:payments-api"): two bullets on one subject clash, and
    # bullets on different subjects never merge.
    subject: str | None = Field(default=None, max_length=120)
    id: str | None = None  # the bullet an UPDATE confirms
    sources: tuple[BulletSource, ...] = ()

    @field_validator("content")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("subject")
    @classmethod
    def _normal_subject(cls, value: str | None) -> str | None:
        return " ".join(value.casefold().split()) or None if value is not None else None


class Bullet(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    section: Section
    content: str
    subject: str | None = None
    helpful: int = Field(default=0, ge=0)
    harmful: int = Field(default=0, ge=0)
    state: State = "unverified"
    sources: tuple[BulletSource, ...] = ()
    created: float = 0.0
    confirmed: float = 0.0  # last time new evidence or a helpful vote backed it
    superseded_by: str | None = None

    @property
    def net(self) -> int:
        return self.helpful - self.harmful

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def _utility(bullet: Bullet) -> tuple[int, int, int, float, float]:
    """Higher is more useful: net votes, verified, never harmful, recently confirmed, newer."""
    return (
        bullet.net,
        bullet.state == "verified",
        -bullet.harmful,
        bullet.confirmed,
        bullet.created,
    )


class Playbook:
    """One channel's bullets. Not thread-safe: the store serialises access."""

    def __init__(
        self,
        bullets: Iterable[Bullet] = (),
        aliases: dict[str, str] | None = None,
        *,
        similar: Similarity | None = None,
    ) -> None:
        self._similar = similar
        self._bullets: dict[str, Bullet] = {b.id: b for b in bullets}
        self._aliases: dict[str, str] = dict(aliases or {})
        self._next: dict[str, int] = {}
        for bullet in self._bullets.values():
            self._count(bullet.id)
        for alias in self._aliases:
            self._count(alias)

    def _count(self, bullet_id: str) -> None:
        slug, _, number = bullet_id.rpartition("-")
        if number.isdigit():
            self._next[slug] = max(self._next.get(slug, 1), int(number) + 1)

    # -- reading -----------------------------------------------------------------------------

    @property
    def bullets(self) -> list[Bullet]:
        """Every bullet, superseded and quarantined ones included, in id order per section."""
        return sorted(self._bullets.values(), key=lambda b: (_section_rank(b.section), b.id))

    @property
    def aliases(self) -> dict[str, str]:
        return dict(self._aliases)

    def get(self, bullet_id: str) -> Bullet | None:
        return self._bullets.get(self._aliases.get(bullet_id, bullet_id))

    def active(self) -> list[Bullet]:
        return [b for b in self.bullets if b.active]

    # -- growing -----------------------------------------------------------------------------

    def apply(self, delta: Delta, now: float) -> str | None:
        """Apply one delta; the id of the bullet it added or confirmed (None if refused)."""
        if delta.op == "UPDATE":
            return self._update(delta, now)
        if len(delta.content) < 8:
            return None
        return self._add(delta, now)

    def _add(self, delta: Delta, now: float) -> str:
        same = self._duplicate_of(delta.section, delta.content, delta.subject)
        if same is not None:
            self._bullets[same.id] = same.model_copy(
                update={"sources": _joined(same.sources, delta.sources), "confirmed": now}
            )
            return same.id
        new_id = self._new_id(delta.section)
        self._bullets[new_id] = Bullet(
            id=new_id,
            section=delta.section,
            content=delta.content,
            subject=delta.subject,
            sources=delta.sources,
            created=now,
            confirmed=now,
        )
        if delta.subject is not None:  # a clash: the newer statement wins, the older is kept
            for old in self.active():
                if old.id != new_id and old.subject == delta.subject:
                    self._bullets[old.id] = old.model_copy(
                        update={"state": "superseded", "superseded_by": new_id}
                    )
        return new_id

    def _update(self, delta: Delta, now: float) -> str | None:
        old = self.get(delta.id or "")
        if old is None or not old.active:
            return None
        if delta.content and not same_fact(delta.content, old.content, self._similar):
            # New content on the same subject: a new bullet supersedes this one.
            subject = old.subject or f"bullet:{old.id}"
            if old.subject is None:
                self._bullets[old.id] = old.model_copy(update={"subject": subject})
            return self._add(
                Delta(op="ADD", section=old.section, content=delta.content, subject=subject,
                      sources=delta.sources),
                now,
            )  # fmt: skip
        self._bullets[old.id] = old.model_copy(
            update={"sources": _joined(old.sources, delta.sources), "confirmed": now}
        )
        return old.id

    def _duplicate_of(self, section: Section, content: str, subject: str | None) -> Bullet | None:
        for bullet in self.active():
            if bullet.section != section or not _compatible(bullet.subject, subject):
                continue
            if same_fact(bullet.content, content, self._similar):
                return bullet
        return None

    def _new_id(self, section: Section) -> str:
        number = self._next.get(section, 1)
        self._next[section] = number + 1
        return f"{section}-{number:05d}"

    # -- feedback ----------------------------------------------------------------------------

    def vote(self, ids: Sequence[str], *, helpful: bool, now: float) -> list[str]:
        """One person's verdict on an answer that used ``ids``; the ids it changed."""
        changed: list[str] = []
        for bullet_id in dict.fromkeys(ids):
            bullet = self.get(bullet_id)
            if bullet is None or bullet.state == "superseded":
                continue
            if helpful:
                state = "verified" if bullet.state == "unverified" else bullet.state
                bullet = bullet.model_copy(
                    update={"helpful": bullet.helpful + 1, "state": state, "confirmed": now}
                )
            else:
                bullet = bullet.model_copy(update={"harmful": bullet.harmful + 1})
            if bullet.harmful >= 2 and bullet.net < 0:  # poisoning: never sent again
                bullet = bullet.model_copy(update={"state": "quarantined"})
            self._bullets[bullet.id] = bullet
            changed.append(bullet.id)
        return changed

    # -- refining ----------------------------------------------------------------------------

    def refine(self) -> list[tuple[str, str]]:
        """Merge near-duplicates among the active bullets: the older id survives with both
        provenances and the summed counters. Returns ``(kept, absorbed)`` pairs."""
        merged: list[tuple[str, str]] = []
        for bullet in self.active():
            if bullet.id not in self._bullets:
                continue
            for other in self.active():
                if other.id <= bullet.id or other.section != bullet.section:
                    continue
                if not _compatible(bullet.subject, other.subject):
                    continue
                if same_fact(bullet.content, other.content, self._similar):
                    self._absorb(bullet.id, other.id)
                    merged.append((bullet.id, other.id))
        return merged

    def _absorb(self, keep_id: str, gone_id: str) -> None:
        keep, gone = self._bullets[keep_id], self._bullets.pop(gone_id)
        state = "verified" if "verified" in (keep.state, gone.state) else keep.state
        self._bullets[keep_id] = keep.model_copy(
            update={
                "helpful": keep.helpful + gone.helpful,
                "harmful": keep.harmful + gone.harmful,
                "sources": _joined(keep.sources, gone.sources),
                "confirmed": max(keep.confirmed, gone.confirmed),
                "subject": keep.subject or gone.subject,
                "state": state,
            }
        )
        self._aliases[gone_id] = keep_id
        for alias, target in list(self._aliases.items()):
            if target == gone_id:
                self._aliases[alias] = keep_id

    def prune(self, max_active: int, max_kept: int) -> list[str]:
        """Bound the stored playbook: the least useful active bullets beyond ``max_active``,
        and the oldest superseded / quarantined ones beyond ``max_kept``, are dropped."""
        dropped: list[str] = []
        active = sorted(self.active(), key=_utility, reverse=True)
        for bullet in active[max_active:]:
            dropped.append(bullet.id)
        inactive = sorted((b for b in self.bullets if not b.active), key=lambda b: b.created)
        for bullet in inactive[: max(len(inactive) - max_kept, 0)]:
            dropped.append(bullet.id)
        for bullet_id in dropped:
            del self._bullets[bullet_id]
        return dropped

    # -- sending -----------------------------------------------------------------------------

    def select(self, budget: int, count: Callable[[str], int]) -> list[Bullet]:
        """The active bullets to send within ``budget`` tokens of ``render_playbook``: the
        most useful first; the least useful are left out whole, never cut."""
        # Each line (and each section's header) is counted once and summed: the whole is
        # counted only to confirm, so a long playbook costs one pass, not one per bullet.
        chosen: list[Bullet] = []
        sections: set[str] = set()
        used = 0
        for bullet in sorted(self.active(), key=_utility, reverse=True):
            cost = count(_line(bullet)) + 1
            if bullet.section not in sections:
                cost += count(_header(bullet.section)) + 1
            if used + cost > budget:
                break
            chosen.append(bullet)
            sections.add(bullet.section)
            used += cost
        while chosen and count(render_playbook(chosen)) > budget:  # joins may cost a token
            chosen.pop()
        return chosen


def render_playbook(bullets: Sequence[Bullet]) -> str:
    """ACE's form, a header per section; unverified bullets say so."""
    lines: list[str] = []
    for section in sorted({b.section for b in bullets}, key=_section_rank):
        lines.append(_header(section))
        for bullet in sorted((b for b in bullets if b.section == section), key=lambda b: b.id):
            lines.append(_line(bullet))
    return "\n".join(lines)


def _header(section: str) -> str:
    return f"## {section.upper()}"


def _line(bullet: Bullet) -> str:
    label = "(unverified) " if bullet.state == "unverified" else ""
    return f"[{bullet.id}] helpful={bullet.helpful} harmful={bullet.harmful} :: {label}{bullet.content}"


def _section_rank(section: str) -> int:
    return SECTIONS.index(section) if section in SECTIONS else len(SECTIONS)


def _compatible(a: str | None, b: str | None) -> bool:
    """Two bullets may merge unless both name a subject and the subjects differ."""
    return a is None or b is None or a == b


def _joined(
    a: Sequence[BulletSource], b: Sequence[BulletSource], limit: int = 20
) -> tuple[BulletSource, ...]:
    """Both provenances, each once, the newest ``limit`` kept (memory stays bounded)."""
    return tuple(dict.fromkeys([*a, *b]))[-limit:]
