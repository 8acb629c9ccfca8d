"""The recipe's vocabulary: source types, ``${VAR}`` templates, and field validators that each
raise one complete, YAML-flavoured message ("sources[2].max_tokens: must be a positive integer,
got true") instead of pydantic's generic one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Final, Literal, TypeAlias

from chanctx.context.errors import RecipeError
from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "SOURCE_TYPES",
    "VARIABLES",
    "NonNegativeInt",
    "OnMissing",
    "OptionalPositiveInt",
    "OptionalTemplate",
    "PositiveInt",
    "SourceId",
    "Template",
    "expand",
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
