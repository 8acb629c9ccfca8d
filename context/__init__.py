"""Pure context assembly: models, token counting, budgets, snapshot and thread builders.

Nothing in this package does I/O or knows Slack's payloads or the Anthropic SDK.
"""

from __future__ import annotations

from chanctx.context._message import FileRef, Message, Reaction
from chanctx.context._slack_text import render_slack_text
from chanctx.context._snapshot import (
    DEFAULT_ADJACENT_WINDOW,
    DEFAULT_SNAPSHOT_BUDGET,
    build_channel_snapshot,
    reaction_labels,
)
from chanctx.context._thread import DEFAULT_THREAD_BUDGET, build_thread_context
from chanctx.context._truncate import snippet, truncate_at_sentence
from chanctx.context._wire import (
    AdjacentMessage,
    Anchor,
    Author,
    ChannelRef,
    ChannelSnapshot,
    MediaRef,
    ThreadActivity,
    ThreadContext,
    ThreadReply,
    ThreadRoot,
    Truncation,
    wire_json,
)
from chanctx.context.errors import BudgetError, ChanctxError, InvalidTimestamp, RecipeError
from chanctx.context.recipe import (
    ChannelSnapshotSource,
    ComputedCache,
    ComputedFileSource,
    FileSource,
    Fitted,
    Generator,
    JournalSource,
    PlaybookSource,
    Recipe,
    Source,
    SourceContent,
    TextBlock,
    ThreadContextSource,
    default_recipe,
    expand,
    fit_sources,
    parse_recipe,
)
from chanctx.context.render import Names
from chanctx.context.timestamps import iso_from_ts
from chanctx.context.tokens import TokenCounter, default_counter

__all__ = [
    "DEFAULT_ADJACENT_WINDOW",
    "DEFAULT_SNAPSHOT_BUDGET",
    "DEFAULT_THREAD_BUDGET",
    "AdjacentMessage",
    "Anchor",
    "Author",
    "BudgetError",
    "ChanctxError",
    "ChannelRef",
    "ChannelSnapshot",
    "ChannelSnapshotSource",
    "ComputedCache",
    "ComputedFileSource",
    "FileRef",
    "FileSource",
    "Fitted",
    "Generator",
    "InvalidTimestamp",
    "JournalSource",
    "MediaRef",
    "Message",
    "Names",
    "PlaybookSource",
    "Reaction",
    "Recipe",
    "RecipeError",
    "Source",
    "SourceContent",
    "TextBlock",
    "ThreadActivity",
    "ThreadContext",
    "ThreadContextSource",
    "ThreadReply",
    "ThreadRoot",
    "TokenCounter",
    "Truncation",
    "build_channel_snapshot",
    "build_thread_context",
    "default_counter",
    "default_recipe",
    "expand",
    "fit_sources",
    "iso_from_ts",
    "parse_recipe",
    "reaction_labels",
    "render_slack_text",
    "snippet",
    "truncate_at_sentence",
    "wire_json",
]
