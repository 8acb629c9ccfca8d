"""What a message gives the search index: its BM25 document, whether an edit changes that
document, whether it belongs to a thread, who wrote it, and whether it states a cause."""

from __future__ import annotations

import re
from dataclasses import dataclass

from chanctx.context import Message, Names
from chanctx.context.render import author_of
from chanctx.tools._keywords import Stemmer, terms

__all__ = [
    "STATES_CAUSE",
    "ThreadStats",
    "author_key",
    "document_terms",
    "has_thread",
    "same_document",
]

STATES_CAUSE = re.compile(
    r"\b(because|caused|root cause|due to|found it|turns out|the (issue|problem|culprit) "
    r"(is|was)|broke|broken by|regression)\b"
)


@dataclass(frozen=True)
class ThreadStats:
    """What the channel knows about one thread: replies seen and the root's own counters."""

    reply_count: int
    last_reply_ts: str | None
    participant_names: tuple[str, ...]


def document_terms(message: Message, text: str, names: Names, stemmer: Stemmer) -> list[str]:
    """The BM25 document of a message: its text, its author's name and its files' titles."""
    # The author's name and the file titles are searchable too: "what did Dev post",
    # "the grafana screenshot".
    extra = [author_of(message, names).display_name]
    for ref in message.files:
        extra.extend(filter(None, (ref.title, ref.filename)))
    return terms(" ".join([text, *extra]), stemmer)


def same_document(old: Message, new: Message) -> bool:
    """Would ``new`` be indexed exactly like ``old`` (only counters or reactions differ)?"""
    return (
        old.text == new.text
        and old.files == new.files
        and old.user_id == new.user_id
        and old.bot_id == new.bot_id
        and old.author_name == new.author_name
        and old.is_reply == new.is_reply
        and old.root_ts == new.root_ts
        and old.is_self == new.is_self
        and old.mentions_self == new.mentions_self
    )


def has_thread(message: Message) -> bool:
    return message.is_reply or message.thread_ts is not None or message.reply_count > 0


def author_key(message: Message) -> tuple[str, str | None]:
    return (message.user_id or message.bot_id or "", message.author_name)
