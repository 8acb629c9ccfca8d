"""The recipe's models: one per source type, the recipe itself, and the zero-config default.

Every model is frozen and forbids unknown fields, so a typo in context.yaml is an error that
names the field, never a silently ignored setting.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Final, Literal, TypeAlias

from chanctx.context._snapshot import DEFAULT_ADJACENT_WINDOW, DEFAULT_SNAPSHOT_BUDGET
from chanctx.context._thread import DEFAULT_THREAD_BUDGET
from chanctx.context.recipe._fields import (
    DEFAULT_TIMEOUT_MS,
    NonNegativeInt,
    OnMissing,
    OptionalPositiveInt,
    OptionalTemplate,
    PositiveInt,
    SourceId,
    Template,
    _Argument,
    _command,
    _optional_positive_number,
    _scope,
    _show,
    _sources_list,
    _string_list,
)
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "DEFAULT_PLAYBOOK_BUDGET",
    "ChannelSnapshotSource",
    "ComputedCache",
    "ComputedFileSource",
    "FileSource",
    "Generator",
    "JournalSource",
    "PlaybookSource",
    "Recipe",
    "Source",
    "TextSource",
    "ThreadContextSource",
    "default_recipe",
    "source_label",
    "source_name",
]


DEFAULT_PLAYBOOK_BUDGET: Final = 1_500  # tokens of the channel playbook a session gets


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileSource(_Model):
    """A file's text as a system block. Relative paths are relative to ``${AGENT_HOME}``."""

    type: Literal["file"] = "file"
    id: SourceId = None
    path: Template
    on_missing: OnMissing = "error"
    max_tokens: OptionalPositiveInt = None
    # The query API puts a pinned source first in every answer, whatever the channel.
    pinned: StrictBool = False


class Generator(_Model):
    command: Annotated[tuple[_Argument, ...], BeforeValidator(_command)]
    timeout_ms: PositiveInt = DEFAULT_TIMEOUT_MS
    # The command's working directory; relative to ${CWD}; default ${CWD}.
    cwd: OptionalTemplate = None


class ComputedCache(_Model):
    """Reuse a computed output until an input changes, the ttl passes, or the scope differs."""

    invalidate_on: Annotated[tuple[Template, ...], BeforeValidator(_string_list)] = ()
    ttl_seconds: Annotated[float | None, PlainValidator(_optional_positive_number)] = None
    # Which runs may share an output. "channel" by default: the command sees CHANCTX_CHANNEL, and
    # an output computed for one (possibly private) channel must not be served in another.
    scope: Annotated[Literal["global", "channel", "thread"], PlainValidator(_scope)] = "channel"


class ComputedFileSource(_Model):
    """Run a command that writes ``output_path``, then use that file's text as a system block.

    ``output_path``, ``invalidate_on`` and relative command paths are seen from the command's
    working directory (``generator.cwd``, default ``${CWD}``).
    """

    type: Literal["computed_file"] = "computed_file"
    id: SourceId = None
    generator: Generator
    output_path: Template
    on_missing: OnMissing = "error"
    max_tokens: OptionalPositiveInt = None
    cache: ComputedCache | None = None
    pinned: StrictBool = False


class JournalSource(_Model):
    """Keep the session's conversation: the last ``max_iterations`` turns, or all of it."""

    type: Literal["journal"] = "journal"
    id: SourceId = None
    max_iterations: OptionalPositiveInt = None


class ChannelSnapshotSource(_Model):
    type: Literal["channel_snapshot"] = "channel_snapshot"
    id: SourceId = None
    budget_tokens: PositiveInt = DEFAULT_SNAPSHOT_BUDGET
    window: NonNegativeInt = DEFAULT_ADJACENT_WINDOW


class ThreadContextSource(_Model):
    type: Literal["thread_context"] = "thread_context"
    id: SourceId = None
    budget_tokens: PositiveInt = DEFAULT_THREAD_BUDGET


class PlaybookSource(_Model):
    """The channel's playbook: what it has learned, the most useful bullets that fit
    ``budget_tokens``; bullets are left out whole, never cut."""

    type: Literal["playbook"] = "playbook"
    id: SourceId = None
    budget_tokens: PositiveInt = DEFAULT_PLAYBOOK_BUDGET


Source: TypeAlias = Annotated[
    FileSource
    | ComputedFileSource
    | JournalSource
    | ChannelSnapshotSource
    | ThreadContextSource
    | PlaybookSource,
    Field(discriminator="type"),
]
TextSource: TypeAlias = FileSource | ComputedFileSource
_BudgetSource: TypeAlias = ChannelSnapshotSource | ThreadContextSource | PlaybookSource
_BY_TYPE: Final[dict[str, type[BaseModel]]] = {
    "file": FileSource,
    "computed_file": ComputedFileSource,
    "journal": JournalSource,
    "channel_snapshot": ChannelSnapshotSource,
    "thread_context": ThreadContextSource,
    "playbook": PlaybookSource,
}
_SINGLETONS: Final = ("journal", "channel_snapshot", "thread_context", "playbook")


class Recipe(_Model):
    """A validated context.yaml: the sources in prompt (and priority) order, and the total budget."""

    sources: Annotated[tuple[Source, ...], BeforeValidator(_sources_list)]
    total_max_tokens: OptionalPositiveInt = None

    @model_validator(mode="after")
    def _one_of_each(self) -> Recipe:
        # Two snapshots (or threads, or journals) would have no sensible meaning, and two equal ids
        # would make notes and logs ambiguous.
        first_of: dict[str, int] = {}
        first_id: dict[str, int] = {}
        for index, source in enumerate(self.sources):
            if source.type in _SINGLETONS:
                if source.type in first_of:
                    raise PydanticCustomError(
                        "duplicate_source",
                        "sources[{index}]: duplicate {kind} source (sources[{first}] is one "
                        "already; a recipe has at most one)",
                        {"index": index, "kind": source.type, "first": first_of[source.type]},
                    )
                first_of[source.type] = index
            if source.id is not None:
                if source.id in first_id:
                    raise PydanticCustomError(
                        "duplicate_id",
                        "sources[{index}].id: duplicate id {id} (sources[{first}] has it already)",
                        {"index": index, "id": _show(source.id), "first": first_id[source.id]},
                    )
                first_id[source.id] = index
        return self

    def text_sources(self) -> list[tuple[int, TextSource]]:
        """``(index, source)`` of the file and computed_file sources, in order."""
        return [
            (index, source)
            for index, source in enumerate(self.sources)
            if isinstance(source, FileSource | ComputedFileSource)
        ]


def source_name(source: Source) -> str:
    """The source's ``id``, else the file name it reads, else its type."""
    if source.id is not None:
        return source.id
    if isinstance(source, FileSource):
        return PurePosixPath(source.path).name or source.path
    if isinstance(source, ComputedFileSource):
        return PurePosixPath(source.output_path).name or source.output_path
    return source.type


def source_label(index: int, source: Source) -> str:
    """How notes and errors name a source: ``sources[1] file 'project_guide'``."""
    name = source_name(source)
    return f"sources[{index}] {source.type}" + ("" if name == source.type else f" '{name}'")


def default_recipe() -> Recipe:
    """The zero-config recipe: today's behaviour, plus the operator's prompt and project guide."""
    return Recipe(
        sources=(
            FileSource(
                id="system_prompt", path="${AGENT_HOME}/system_prompt.md", on_missing="skip"
            ),
            FileSource(id="project_guide", path="${CWD}/CHANCTX.md", on_missing="skip"),
            PlaybookSource(),
            ChannelSnapshotSource(),
            ThreadContextSource(),
            JournalSource(),
        )
    )
