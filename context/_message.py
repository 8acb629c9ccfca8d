"""The platform-neutral message every layer below ``bot/`` speaks.

``bot/`` turns a Slack event into a :class:`Message`; ``cache/`` stores it; the builders in
``context/`` turn messages into the wire models Claude reads. Nothing here knows Slack's
payload shapes, so a Discord or Telegram adapter can produce the same objects.

A Message is a slotted, frozen object rather than a pydantic model: the history keeps up to a
million of them (200 channels x 5,000), and a model instance (its ``__dict__`` and field set)
cost about 770 bytes beside its text where this costs 200. It is validated by pydantic all the
same (one ``TypeAdapter`` of its fields, so a bad ts or a negative count is refused with a
``ValidationError`` naming the field) and keeps the pydantic methods its callers use:
``model_validate``, ``model_copy``, ``model_dump``, ``model_dump_json``; it can also be a
field of a pydantic model. Ids repeated on every message (channel, user, bot) are interned, so
a million messages share a few hundred id strings.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final, Required

from chanctx.context.timestamps import validate_ts
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    TypeAdapter,
    with_config,
)
from pydantic_core import core_schema
from typing_extensions import TypedDict

__all__ = ["FileRef", "Message", "Reaction"]


class FileRef(BaseModel):
    """A file attached to a message. ``artifact_id`` is the platform's file id."""

    model_config = ConfigDict(frozen=True)

    artifact_id: str
    media_type: str = "application/octet-stream"
    filename: str | None = None
    title: str | None = None
    byte_length: int = Field(default=0, ge=0)
    # Where the bytes can be downloaded; only bot/ ever follows it, and only to Slack's hosts.
    download_url: str | None = None


class Reaction(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    count: int = Field(ge=0)
    users: tuple[str, ...] = ()


Ts = Annotated[str, AfterValidator(validate_ts)]


@with_config(ConfigDict(extra="ignore", title="Message"))
class MessageFields(TypedDict, total=False):
    """What a Message holds, for pydantic to validate (defaults are :data:`_DEFAULTS`)."""

    channel: Required[str]
    ts: Required[Ts]
    thread_ts: Ts | None
    user_id: str
    author_name: str | None
    is_bot: bool
    is_self: bool
    mentions_self: bool
    bot_id: str | None
    text: str
    subtype: str | None
    files: tuple[FileRef, ...]
    reactions: tuple[Reaction, ...]
    reply_count: Annotated[int, Field(ge=0)]
    reply_users: tuple[str, ...]
    latest_reply: Ts | None
    edited_ts: Ts | None
    deleted: bool
    is_broadcast: bool


_ADAPTER: Final = TypeAdapter(MessageFields)
_DEFAULTS: Final[dict[str, Any]] = {
    "thread_ts": None,
    "user_id": "",
    "author_name": None,
    "is_bot": False,
    "is_self": False,
    "mentions_self": False,
    "bot_id": None,
    "text": "",
    "subtype": None,
    "files": (),
    "reactions": (),
    "reply_count": 0,
    "reply_users": (),
    "latest_reply": None,
    "edited_ts": None,
    "deleted": False,
    "is_broadcast": False,
}
_FIELDS: Final = ("channel", "ts", *_DEFAULTS)
_INTERNED: Final = ("channel", "user_id", "bot_id")
# Stored in a slot of their own: what nearly every message sets.
_MAIN: Final = ("channel", "ts", "thread_ts", "user_id", "text", "reply_count")
# Stored as one bit each of ``_flags``.
_FLAGS: Final = ("is_bot", "is_self", "mentions_self", "deleted", "is_broadcast")
# Stored in ``_more``, a tuple, only when one of them is set (most chat messages set none).
_MORE: Final = (
    "author_name",
    "bot_id",
    "subtype",
    "files",
    "reactions",
    "reply_users",
    "latest_reply",
    "edited_ts",
)
_MORE_DEFAULTS: Final = tuple(_DEFAULTS[name] for name in _MORE)
_MORE_AT: Final = {name: index for index, name in enumerate(_MORE)}
_BIT: Final = {name: 1 << index for index, name in enumerate(_FLAGS)}
assert _BIT == {"is_bot": 1, "is_self": 2, "mentions_self": 4, "deleted": 8, "is_broadcast": 16}


_intern = sys.intern


def _interned(values: dict[str, Any]) -> dict[str, Any]:
    for name in _INTERNED:
        value = values.get(name)
        if type(value) is str:
            values[name] = sys.intern(value)
    return values


def _fill(message: Message, values: Mapping[str, Any]) -> None:
    """Set every field of ``message`` from ``values`` (a full set of fields)."""
    setter = object.__setattr__
    for name in _MAIN:
        setter(message, name, values[name])
    flags = 0
    for name in _FLAGS:
        if values[name]:
            flags |= _BIT[name]
    setter(message, "_flags", flags)
    more = tuple(values[name] for name in _MORE)
    setter(message, "_more", None if more == _MORE_DEFAULTS else more)


def _set(message: Message, values: Mapping[str, Any]) -> None:
    """Fill ``message`` from ``values`` (missing fields take their defaults). Straight-line
    on purpose: every event Slack sends builds a Message."""
    get = values.get
    setter = object.__setattr__
    user = get("user_id", "")
    setter(message, "channel", _intern(values["channel"]))
    setter(message, "ts", values["ts"])
    setter(message, "thread_ts", get("thread_ts"))
    setter(message, "user_id", _intern(user) if user else "")
    setter(message, "text", get("text", ""))
    setter(message, "reply_count", get("reply_count", 0))
    setter(
        message,
        "_flags",
        (1 if get("is_bot") else 0)
        | (2 if get("is_self") else 0)
        | (4 if get("mentions_self") else 0)
        | (8 if get("deleted") else 0)
        | (16 if get("is_broadcast") else 0),
    )
    more = tuple(map(get, _MORE, _MORE_DEFAULTS))
    if more == _MORE_DEFAULTS:
        setter(message, "_more", None)
        return
    if more[1]:  # bot_id
        more = (more[0], _intern(more[1]), *more[2:])
    setter(message, "_more", more)


class Message:
    """One channel message or thread reply.

    ``ts`` is the message id (unique within a channel). ``thread_ts`` is the root's ts for a
    reply, and equals ``ts`` for a root that has replies; it is None for a plain channel message.
    ``is_self``: our own bot posted it (the assistant side of the conversation).
    ``mentions_self``: it mentions our bot (a question asked of it); with ``is_self``, what
    search ranks after people's messages. ``is_broadcast``: a thread reply also sent to the
    channel ("Also send to #channel").

    Eight slots, not nineteen: the flags share an int and the fields most messages leave at
    their defaults (files, reactions, edits, bot names...) share one tuple, absent when unset.
    """

    __slots__ = (*_MAIN, "_flags", "_more")
    model_fields: ClassVar[dict[str, Any]] = dict.fromkeys(_FIELDS)

    channel: str
    ts: str
    thread_ts: str | None
    user_id: str
    text: str
    reply_count: int
    _flags: int
    _more: tuple[Any, ...] | None

    # The flags (bit i of _flags is _FLAGS[i]) and the rarely set fields (_MORE order).
    @property
    def is_bot(self) -> bool:
        return bool(self._flags & 1)

    @property
    def is_self(self) -> bool:
        return bool(self._flags & 2)

    @property
    def mentions_self(self) -> bool:
        return bool(self._flags & 4)

    @property
    def deleted(self) -> bool:
        return bool(self._flags & 8)

    @property
    def is_broadcast(self) -> bool:
        return bool(self._flags & 16)

    @property
    def author_name(self) -> str | None:
        return _MORE_DEFAULTS[0] if self._more is None else self._more[0]  # type: ignore[no-any-return]

    @property
    def bot_id(self) -> str | None:
        return _MORE_DEFAULTS[1] if self._more is None else self._more[1]  # type: ignore[no-any-return]

    @property
    def subtype(self) -> str | None:
        return _MORE_DEFAULTS[2] if self._more is None else self._more[2]  # type: ignore[no-any-return]

    @property
    def files(self) -> tuple[FileRef, ...]:
        return _MORE_DEFAULTS[3] if self._more is None else self._more[3]  # type: ignore[no-any-return]

    @property
    def reactions(self) -> tuple[Reaction, ...]:
        return _MORE_DEFAULTS[4] if self._more is None else self._more[4]  # type: ignore[no-any-return]

    @property
    def reply_users(self) -> tuple[str, ...]:
        return _MORE_DEFAULTS[5] if self._more is None else self._more[5]  # type: ignore[no-any-return]

    @property
    def latest_reply(self) -> str | None:
        return _MORE_DEFAULTS[6] if self._more is None else self._more[6]  # type: ignore[no-any-return]

    @property
    def edited_ts(self) -> str | None:
        return _MORE_DEFAULTS[7] if self._more is None else self._more[7]  # type: ignore[no-any-return]

    def __init__(self, **data: Any) -> None:
        _set(self, _ADAPTER.validate_python(data))

    @classmethod
    def model_construct(cls, **values: Any) -> Message:
        """A Message from values already of the right types and forms, not validated again
        (pydantic's name for it): for intake, which has checked them (every Slack event
        builds one, so this is on the ack path)."""
        message = object.__new__(Message)
        _set(message, values)
        return message

    # -- pydantic's methods, as callers use them ----------------------------------------------

    @classmethod
    def model_validate(cls, obj: Any) -> Message:
        if isinstance(obj, Message):
            return obj
        if not isinstance(obj, Mapping):
            # The same error pydantic gives a model for a non-mapping input.
            _ADAPTER.validate_python(obj)
        return cls(**obj)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Message:
        """A copy with ``update`` applied, not validated (as pydantic's ``model_copy``)."""
        values = self._fields()
        for name, value in (update or {}).items():
            if name not in values:
                raise AttributeError(f"Message has no field {name!r}")
            values[name] = value
        copy = object.__new__(Message)
        _fill(copy, values)
        return copy

    def _fields(self, *, exclude_defaults: bool = False) -> dict[str, Any]:
        """The fields, without those at their default when asked (a TypedDict knows no
        defaults, so pydantic's own ``exclude_defaults`` could not leave them out)."""
        fields = {name: getattr(self, name) for name in _FIELDS}
        if exclude_defaults:
            fields = {k: v for k, v in fields.items() if k not in _DEFAULTS or v != _DEFAULTS[k]}
        return fields

    def model_dump(
        self, *, mode: str = "python", exclude_defaults: bool = False, **options: Any
    ) -> dict[str, Any]:
        fields = self._fields(exclude_defaults=exclude_defaults)
        dumped: dict[str, Any] = _ADAPTER.dump_python(fields, mode=mode, **options)  # type: ignore[arg-type]
        return dumped

    def model_dump_json(self, *, exclude_defaults: bool = False, **options: Any) -> str:
        fields = self._fields(exclude_defaults=exclude_defaults)
        return _ADAPTER.dump_json(fields, **options).decode()  # type: ignore[arg-type]

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """As a field of a pydantic model: validated from a mapping, dumped as one."""
        return core_schema.no_info_plain_validator_function(
            cls.model_validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda message, info: message.model_dump(mode=info.mode), info_arg=True
            ),
        )

    # -- a frozen value -----------------------------------------------------------------------

    def _values(self) -> tuple[Any, ...]:
        return (*(getattr(self, name) for name in _MAIN), self._flags, self._more)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Message is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Message is frozen: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Message):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in _FIELDS
            if name in ("channel", "ts") or getattr(self, name) != _DEFAULTS.get(name)
        )
        return f"Message({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._values(),))

    # -- derived ----------------------------------------------------------------------------

    @property
    def is_reply(self) -> bool:
        """A reply inside a thread (not the root itself)."""
        return self.thread_ts is not None and self.thread_ts != self.ts

    @property
    def in_channel(self) -> bool:
        """Visible in the channel timeline: a top-level message or a broadcast reply."""
        return not self.is_reply or self.is_broadcast

    @property
    def root_ts(self) -> str:
        """The thread this message belongs to, or its own ts if it starts (or could start) one."""
        return self.thread_ts or self.ts


def _rebuild(values: tuple[Any, ...]) -> Message:
    message = object.__new__(Message)
    for name, value in zip(Message.__slots__, values, strict=True):
        object.__setattr__(message, name, value)
    return message
