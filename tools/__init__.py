"""Claude's channel tools, ``channel_context`` (search) and ``channel_messages`` (fetch).

Both are bound to one channel when a :class:`ChannelTools` is created over a
:class:`ChannelView`; no tool argument can reach another channel (scoping is structural: no
code path leads from an argument to another channel's data). ``bot/`` implements ChannelView
over its caches; :class:`HistoryView` serves a ``cache.ChannelHistory`` directly, for tests and
offline use.

``channel_context`` searches a per-channel index kept current as messages arrive
(:class:`IndexedHistory` feeds it on every write; a view may serve it through the optional
:class:`SearchableView` method); :class:`Ranking` holds the ranking's weights.
"""

from __future__ import annotations

from chanctx.tools._definitions import CHANNEL_CONTEXT, CHANNEL_MESSAGES
from chanctx.tools._env import ToolResult
from chanctx.tools._index import ChannelIndex
from chanctx.tools._indexed import IndexedHistory, IndexSink, SearchScope, synced_index
from chanctx.tools._inputs import ChannelContextInput, ChannelMessagesInput
from chanctx.tools._keywords import keywords
from chanctx.tools._outputs import (
    HELD,
    ChannelContextOutput,
    ContextRow,
    FetchedMessage,
    MediaInfo,
    MediaOutput,
    MessagesOutput,
    ThreadOutput,
    read_context_output,
)
from chanctx.tools._query import (
    BLOCK_TYPES,
    FORMATS,
    ExtraBlock,
    QueryChunk,
    QueryResult,
    query_channel,
)
from chanctx.tools._ranking import Ranking
from chanctx.tools._tools import DEFAULT_OUTPUT_BUDGET, MIN_OUTPUT_BUDGET, ChannelTools
from chanctx.tools._view import ChannelView, HistoryView, SearchableView, ThreadLookup

__all__ = [
    "BLOCK_TYPES",
    "CHANNEL_CONTEXT",
    "CHANNEL_MESSAGES",
    "DEFAULT_OUTPUT_BUDGET",
    "FORMATS",
    "HELD",
    "MIN_OUTPUT_BUDGET",
    "ChannelContextInput",
    "ChannelContextOutput",
    "ChannelIndex",
    "ChannelMessagesInput",
    "ChannelTools",
    "ChannelView",
    "ContextRow",
    "ExtraBlock",
    "FetchedMessage",
    "HistoryView",
    "IndexSink",
    "IndexedHistory",
    "MediaInfo",
    "MediaOutput",
    "MessagesOutput",
    "QueryChunk",
    "QueryResult",
    "Ranking",
    "SearchScope",
    "SearchableView",
    "ThreadLookup",
    "ThreadOutput",
    "ToolResult",
    "keywords",
    "query_channel",
    "read_context_output",
    "synced_index",
]
