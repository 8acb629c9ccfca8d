"""The context recipe (``context.yaml``): what the Claude session's context is made of.

A recipe is an ordered list of sources. Text sources (``file``, ``computed_file``) become system
text blocks; ``channel_snapshot`` and ``thread_context`` set the budgets of the two JSON packages
chanctx builds; ``playbook`` sets the budget of the channel's playbook; ``journal`` says how much
of the session's own conversation is kept. Order is priority: when ``total_max_tokens`` is set,
earlier sources are served first.

This package is pure: it parses and validates recipes (``_fields``, ``_models``, ``_parse``),
expands ``${VAR}`` templates and fits loaded text into the budgets (``_fit``). Reading files and
running commands is ``bot.recipe_runner``'s job.
"""

from __future__ import annotations

from chanctx.context.recipe._fields import DEFAULT_TIMEOUT_MS, SOURCE_TYPES, VARIABLES, expand
from chanctx.context.recipe._fit import Fitted, SourceContent, TextBlock, fit_sources
from chanctx.context.recipe._models import (
    DEFAULT_PLAYBOOK_BUDGET,
    ChannelSnapshotSource,
    ComputedCache,
    ComputedFileSource,
    FileSource,
    Generator,
    JournalSource,
    PlaybookSource,
    Recipe,
    Source,
    TextSource,
    ThreadContextSource,
    default_recipe,
    source_label,
    source_name,
)
from chanctx.context.recipe._parse import parse_recipe

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
