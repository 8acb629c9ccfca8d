"""Agent profiles: named defaults an agent's queries take for the fields they omit, and the
interface every profile store implements (``local``: a file in the data dir; ``redis``: one hash
shared by replicas)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_PROFILES", "NAME_PATTERN", "AgentProfile", "ProfileFields", "ProfileStore"]
MAX_PROFILES = 1_000


NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class ProfileFields(BaseModel):
    """A profile without its name: what ``PUT /api/profiles/{name}`` takes (the path names it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_window: int = Field(default=200_000, ge=1_000, le=2_000_000)
    token_budget: int = Field(default=2_000, ge=16, le=200_000)
    preferred_format: Literal["json", "markdown", "text"] = "markdown"
    type_filters: list[Literal["message", "thread"]] = Field(default_factory=list)


class AgentProfile(ProfileFields):
    name: str = Field(pattern=NAME_PATTERN)


class ProfileStore(ABC):
    """Profiles by name, at most ``MAX_PROFILES``. Thread-safe."""

    @abstractmethod
    def get(self, name: str) -> AgentProfile | None: ...

    @abstractmethod
    def all(self) -> list[AgentProfile]:
        """Every profile, by name."""

    @abstractmethod
    def put(self, profile: AgentProfile) -> bool:
        """Store ``profile``; True if it replaced one of the same name. ValueError when full."""

    @abstractmethod
    def delete(self, name: str) -> bool:
        """True if there was one to delete."""
