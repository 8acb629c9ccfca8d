"""How each operator setting's text becomes a value: the parsers the settings table names.

Each raises ``ValueError`` for a value it refuses; the caller (``options.resolve_options``)
turns that into one line naming the flag, the variable and the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "choice",
    "database_url",
    "fraction",
    "gigabytes",
    "interval",
    "names",
    "non_negative_int",
    "path",
    "port",
    "positive_int",
    "redacted_url",
    "seconds",
    "switch",
    "text_value",
]


def positive_int(text: str) -> int:
    value = int(text.replace("_", ""))
    if value <= 0:
        raise ValueError
    return value


def non_negative_int(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 0:
        raise ValueError
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise ValueError
    return value


def gigabytes(text: str) -> float:
    value = float(text)
    if not 0 < value < 1_000_000:
        raise ValueError
    return value


def seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < 86_400:
        raise ValueError
    return value


def interval(text: str) -> float:
    value = float(text)
    if not 1 <= value <= 86_400:
        raise ValueError
    return value


def port(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise ValueError
    return value


def text_value(text: str) -> str:
    if not text.strip():
        raise ValueError
    return text.strip()


def redacted_url(url: str) -> str:
    """A URL as logs and errors may show it: the password (``user:secret@``) starred out."""
    hidden = re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1***", hidden)


def database_url(text: str) -> str:
    """A PostgreSQL URL (``postgresql://user@host/db``): the only database the store runs on
    besides its own SQLite file."""
    value = text_value(text)
    if not re.match(r"^postgres(ql)?://[^\s]+$", value):
        raise ValueError
    return value


def path(text: str) -> Path:
    return Path(text_value(text))


_REACTION = re.compile(r"^[a-z0-9_+'-]{1,100}$")


def names(text: str) -> tuple[str, ...]:
    """Reaction names as Slack writes them (``+1``, ``white_check_mark``), colons optional."""
    names = tuple(n.strip().strip(":") for n in text.split(",") if n.strip())
    if not names or not all(_REACTION.match(n) for n in names):
        raise ValueError
    return names


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def switch(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError


def choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError
        return value

    return parse
