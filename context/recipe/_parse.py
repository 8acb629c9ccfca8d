"""From context.yaml's text to a validated Recipe, every problem reported with its line.

YAML is read with safe_load's rules except that a key given twice is an error. Pydantic's
errors are rewritten as the operator wrote the file: ``sources[2].generator.command``, the
line it is on, and a "did you mean" for a misspelt field.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Final, get_args

import yaml
from chanctx.context.errors import RecipeError
from chanctx.context.recipe._fields import SOURCE_TYPES, _show
from chanctx.context.recipe._models import _BY_TYPE, Recipe
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.resolver import BaseResolver

__all__ = ["parse_recipe"]


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
