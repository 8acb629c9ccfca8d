"""The durable session log (one append-only JSONL file per Slack thread's Claude session), the
attachment manifest persisted in it (seed 003), and compaction of a session near its window.

Pure of Slack and of the Anthropic SDK: messages are plain Messages API dicts, and the only
chanctx import is ``context``.
"""

from __future__ import annotations

from ._blocks import DIGEST_ACK, MessageParam, with_digest
from ._compaction import TrimResult, needs_compaction, summarize_request, trim
from ._digest import MAX_DIGEST_TOKENS, MIN_DIGEST_TOKENS
from ._entries import (
    ATTACHMENT_MANIFEST,
    CONTEXT_ATTACHED,
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    SessionStarted,
)
from ._errors import InvalidSessionKey, SessionLogCorrupt
from ._keys import SessionKey
from ._log import SessionLog, SessionStore
from ._manifest import (
    MANIFEST_VERSION,
    AttachmentManifest,
    AttachmentRecord,
    content_hash,
    reattach_preamble,
)
from ._rebuild import SessionState, rebuild

__all__ = [
    "ATTACHMENT_MANIFEST",
    "CONTEXT_ATTACHED",
    "DIGEST_ACK",
    "MANIFEST_VERSION",
    "MAX_DIGEST_TOKENS",
    "MIN_DIGEST_TOKENS",
    "AttachmentManifest",
    "AttachmentRecord",
    "CompactionEntry",
    "CustomEntry",
    "Entry",
    "InvalidSessionKey",
    "MessageEntry",
    "MessageParam",
    "SessionKey",
    "SessionLog",
    "SessionLogCorrupt",
    "SessionStarted",
    "SessionState",
    "SessionStore",
    "TrimResult",
    "content_hash",
    "needs_compaction",
    "reattach_preamble",
    "rebuild",
    "summarize_request",
    "trim",
    "with_digest",
]
