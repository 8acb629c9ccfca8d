"""The context recipe (``context.yaml``): what the Claude session's context is made of.

A recipe is an ordered list of sources. Text sources (``file``, ``computed_file``) become system
text blocks; ``channel_snapshot`` and ``thread_context`` set the budgets of the two JSON packages
chanctx builds; ``journal`` says how much of the session's own conversation is kept. Order is
priority: when ``total_max_tokens`` is set, earlier sources are served first.

This module is pure: it parses and validates recipes, expands ``${VAR}`` templates and fits loaded
text into the budgets. Reading files and running commands is ``bot.recipe_runner``'s job.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Annotated, Any, Final, Literal, TypeAlias, get_args

import yaml
from chanctx.context._snapshot import DEFAULT_ADJACENT_WINDOW, DEFAULT_SNAPSHOT_BUDGET
from chanctx.context._thread import DEFAULT_THREAD_BUDGET
from chanctx.context.budget import Chunk, pack
from chanctx.context.errors import RecipeError
from chanctx.context.tokens import TokenCounter, default_counter
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.resolver import BaseResolver

__all__ = [
    "DEFAULT_PLAYBOOK_BUDGET",
    "DEFAULT_TIMEOUT_MS",
    "SOURCE_TYPES",
    "VARIABLES",
    "ChannelSnapshotSource",
    "ComputedCache",
    "ComputedFileSource",
    "FileSource",
    "Fitted",
    "Generator",
    "JournalSource",
    "PlaybookSource",
    "Recipe",
    "Source",
    "SourceContent",
    "TextBlock",
    "TextSource",
    "ThreadContextSource",
    "default_recipe",
    "expand",
    "fit_sources",
    "parse_recipe",
    "source_label",
    "source_name",
]

SOURCE_TYPES: Final = (
    "file",
    "computed_file",
    "journal",
    "channel_snapshot",
    "thread_context",
    "playbook",
)
VARIABLES: Final = ("AGENT_HOME", "CWD")
DEFAULT_TIMEOUT_MS: Final = 30_000

# ``${NAME}`` only: a bare ``$NAME`` stays literal, since commands run without a shell and "$" is
# ordinary text in them.
_VARIABLE: Final = re.compile(r"\$\{([^}]*)\}")


# --- variables -----------------------------------------------------------------------------------


def expand(value: str, variables: Mapping[str, str]) -> str:
    """``value`` with every ``${NAME}`` replaced by ``variables[NAME]``; unknown names raise."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            known = ", ".join(f"${{{key}}}" for key in sorted(variables))
            raise RecipeError(f"unknown variable ${{{name}}} in {value!r} (known: {known})")
        return variables[name]

    return _VARIABLE.sub(substitute, value)


# --- field validators: each raises one complete, YAML-flavoured message ----------------------------


def _show(value: object) -> str:
    """A value as the operator wrote it in YAML (null, true), short enough for one line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        shown = repr(value)
        return shown if len(shown) <= 60 else shown[:56] + "...'"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _fail(kind: str, message: str, value: object) -> PydanticCustomError:
    return PydanticCustomError(kind, message + ", got {got}", {"got": _show(value)})


def _positive_int(value: object) -> int:
    # YAML's true/false load as bools, which Python counts as ints: not a token count.
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise _fail("positive_int", "must be a positive integer", value)


def _optional_positive_int(value: object) -> int | None:
    return None if value is None else _positive_int(value)


def _non_negative_int(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _fail("non_negative_int", "must be a non-negative integer", value)


def _optional_positive_number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise _fail("positive_number", "must be a positive number", value)


def _check_variables(value: str) -> str:
    for name in _VARIABLE.findall(value):
        if name not in VARIABLES:
            known = ", ".join(f"${{{key}}}" for key in VARIABLES)
            raise PydanticCustomError(
                "unknown_variable",
                "unknown variable {name} (known: {known})",
                {"name": f"${{{name}}}", "known": known},
            )
    return value


def _template(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise _fail("non_empty_string", "must be a non-empty string", value)
    return _check_variables(value)


def _optional_template(value: object) -> str | None:
    return None if value is None else _template(value)


def _argument(value: object) -> str:
    if not isinstance(value, str):
        # `[sleep, 5]` is the classic slip: YAML makes 5 a number.
        raise _fail("command_argument", "must be a string (quote numbers in YAML)", value)
    return _check_variables(value)


def _command(value: object) -> object:
    if isinstance(value, str):
        raise _fail(
            "command_list",
            "must be a list: the program, then each argument (no shell is used)",
            value,
        )
    if not isinstance(value, list | tuple) or not value:
        raise _fail(
            "command_list", "must be a non-empty list: the program, then its arguments", value
        )
    return value


def _string_list(value: object) -> object:
    if not isinstance(value, list | tuple):
        raise _fail("string_list", "must be a list of strings", value)
    return value


def _optional_id(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail("non_empty_string", "must be a non-empty string", value)
    return value


def _on_missing(value: object) -> str:
    if value not in ("skip", "error"):
        raise _fail("on_missing", "must be 'skip' or 'error'", value)
    return str(value)


def _scope(value: object) -> str:
    if value not in ("global", "channel", "thread"):
        raise _fail("scope", "must be 'global', 'channel' or 'thread'", value)
    return str(value)


def _sources_list(value: object) -> object:
    if not isinstance(value, list | tuple):
        raise _fail("sources_list", "must be a list of sources", value)
    if not value:
        raise _fail("sources_list", "must list at least one source", value)
    return value


PositiveInt: TypeAlias = Annotated[int, PlainValidator(_positive_int)]
OptionalPositiveInt: TypeAlias = Annotated[int | None, PlainValidator(_optional_positive_int)]
NonNegativeInt: TypeAlias = Annotated[int, PlainValidator(_non_negative_int)]
Template: TypeAlias = Annotated[str, PlainValidator(_template)]
OptionalTemplate: TypeAlias = Annotated[str | None, PlainValidator(_optional_template)]
OnMissing: TypeAlias = Annotated[Literal["skip", "error"], PlainValidator(_on_missing)]
SourceId: TypeAlias = Annotated[str | None, PlainValidator(_optional_id)]
_Argument: TypeAlias = Annotated[str, PlainValidator(_argument)]


# --- the models ----------------------------------------------------------------------------------

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


# --- parsing -------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """safe_load's loader, except that a key given twice is an error, not "the last one wins"."""


def _construct_mapping(loader: _Loader, node: MappingNode) -> dict[Any, Any]:
    first_line: dict[object, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        try:
            if key in first_line:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {_show(key)} (first given on line {first_line[key] + 1})",
                    key_node.start_mark,
                )
            first_line[key] = key_node.start_mark.line
        except TypeError:  # an unhashable key: construct_mapping reports it properly
            continue
    return loader.construct_mapping(node)


_Loader.add_constructor(BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_recipe(text: str, *, origin: str = "context.yaml") -> Recipe:
    """Parse and validate a recipe; every problem is reported, each naming its source and field.

    Raises RecipeError. Its message has one line per problem, each starting with ``origin``;
    ``RecipeError.problems`` holds the lines.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f"{origin}:{mark.line + 1}:{mark.column + 1}" if mark else origin
        problem = error.problem or error.context or "unreadable"
        raise RecipeError(f"{at}: invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise RecipeError(f"{origin}: invalid YAML: {error}") from None
    finally:
        loader.dispose()

    if data is None:
        raise RecipeError(f"{origin}: is empty; a recipe is a mapping with a 'sources' list")
    if not isinstance(data, dict):
        raise RecipeError(
            f"{origin}: must be a mapping with a 'sources' list, got {_show(data)} (line 1)"
        )
    try:
        return Recipe.model_validate(data)
    except ValidationError as error:
        problems = []
        for detail in error.errors():
            message, where = _describe(detail)
            line = _line_of(node, where)
            problems.append(f"{origin}: {message}" + (f" (line {line})" if line else ""))
        raise RecipeError("\n".join(problems), problems=problems) from None


def _path(loc: Sequence[int | str]) -> str:
    """``('sources', 2, 'computed_file', 'generator')`` -> ``sources[2].generator``."""
    parts: list[str] = []
    for position, item in enumerate(_without_tag(loc)):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if position else "") + item)
    return "".join(parts)


def _without_tag(loc: Sequence[int | str]) -> list[int | str]:
    # Pydantic puts the discriminator's value after a union member's index; YAML has no such level.
    if len(loc) > 2 and loc[0] == "sources" and isinstance(loc[1], int) and loc[2] in _BY_TYPE:
        return [*loc[:2], *loc[3:]]
    return list(loc)


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model validating the mapping at ``loc`` (pydantic's, tag included), if any."""
    model: type[BaseModel] | None = Recipe
    rest = list(loc)
    while rest and model is not None:
        item = rest.pop(0)
        if model is Recipe and item == "sources":
            if len(rest) < 2 or not isinstance(rest[0], int):
                return None
            model = _BY_TYPE.get(str(rest[1]))
            rest = rest[2:]
            continue
        info = model.model_fields.get(str(item))
        model = None if info is None else _model_in(info.annotation)
    return model


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


# The error types our validators raise: their messages are complete as they are.
_OWN_ERRORS: Final = frozenset(
    {
        "positive_int",
        "non_negative_int",
        "positive_number",
        "non_empty_string",
        "unknown_variable",
        "command_argument",
        "command_list",
        "string_list",
        "on_missing",
        "scope",
        "sources_list",
        "duplicate_source",
        "duplicate_id",
    }
)


def _describe(detail: ErrorDetails) -> tuple[str, list[int | str]]:
    """One problem as a sentence, and where it is (YAML path) for the line number."""
    loc, kind, value = detail["loc"], detail["type"], detail["input"]
    where = _without_tag(loc)
    path = _path(loc)
    expected = ", ".join(SOURCE_TYPES)
    if kind == "union_tag_invalid" and isinstance(value, dict):
        got = _show(value.get("type"))
        return f"{path}.type: unknown source type {got} (expected one of: {expected})", [
            *where,
            "type",
        ]
    if kind == "union_tag_not_found":
        return f"{path}.type: required field missing (expected one of: {expected})", where
    if kind in ("model_attributes_type", "model_type", "dict_type"):
        what = "a mapping with a 'type' field" if _path(loc[:1]) == "sources" else "a mapping"
        return f"{path}: must be {what}, got {_show(value)}", where
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        if model is None:
            return f"{path}: unknown field", where
        fields = list(model.model_fields)
        close = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.75)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return f"{path}: unknown field ({hint}expected one of: {', '.join(fields)})", where
    if kind == "missing":
        return f"{path}: required field missing", where
    if kind in ("duplicate_source", "duplicate_id"):
        # Raised by the recipe-wide check, so pydantic's loc is empty; the index is in ctx.
        index = (detail.get("ctx") or {}).get("index", 0)
        return detail["msg"], ["sources", index]
    if kind in _OWN_ERRORS:
        return f"{path}: {detail['msg']}", where
    return f"{path}: {detail['msg']} (got {_show(value)})", where


def _line_of(node: Node | None, loc: Sequence[int | str]) -> int | None:
    """The 1-based line of the value at ``loc``; of the key, for the last step into a mapping."""
    found = node
    for step, item in enumerate(loc):
        if isinstance(found, MappingNode):
            match = next((pair for pair in found.value if pair[0].value == item), None)
            if match is None:
                break  # a missing field: point at the mapping that lacks it
            found = match[0] if step == len(loc) - 1 else match[1]
        elif isinstance(found, SequenceNode) and isinstance(item, int) and item < len(found.value):
            found = found.value[item]
        else:
            break
    return None if found is None else found.start_mark.line + 1


# --- fitting loaded text into the budgets --------------------------------------------------------


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
