"""The durable session log (one append-only JSONL file per Slack thread's Claude session), the
attachment manifest persisted in it, and compaction of a session near its window.

Pure of Slack and of the Anthropic SDK: messages are plain Messages API dicts, and the only
chanctx import is ``context``.
"""

from __future__ import annotations

from chanctx.manifest_store._blocks import DIGEST_ACK, MessageParam, with_digest
from chanctx.manifest_store._compaction import TrimResult, needs_compaction, summarize_request, trim
from chanctx.manifest_store._digest import MAX_DIGEST_TOKENS, MIN_DIGEST_TOKENS
from chanctx.manifest_store._entries import (
    ATTACHMENT_MANIFEST,
    CONTEXT_ATTACHED,
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    SessionStarted,
)
from chanctx.manifest_store._errors import (
    InvalidSessionKey,
    SessionLogCorrupt,
    StoreUnavailable,
    TurnTakenOver,
)
from chanctx.manifest_store._keys import SessionKey
from chanctx.manifest_store._manifest import (
    MANIFEST_VERSION,
    AttachmentManifest,
    AttachmentRecord,
    content_hash,
    reattach_preamble,
)
from chanctx.manifest_store._rebuild import SessionState, rebuild
from chanctx.manifest_store.feedback import (
    FEEDBACK_FILE,
    HARMFUL,
    HELPFUL,
    FeedbackStore,
    LocalFeedbackStore,
    RedisFeedbackStore,
    Vote,
    verdict_of,
)
from chanctx.manifest_store.playbook import (
    PLAYBOOK_DIR,
    LocalPlaybookStore,
    PlaybookStore,
    RedisPlaybookStore,
)
from chanctx.manifest_store.redis_connection import (
    check_team,
    connect,
    guarded,
    is_outage,
    namespace,
)
from chanctx.manifest_store.sessions import (
    AppendLog,
    RedisSessionLog,
    RedisSessionStore,
    SessionLog,
    SessionLogs,
    SessionStore,
)
from chanctx.manifest_store.turns import (
    OutboxEntry,
    PendingTurn,
    QueuedTurn,
    RedisTurnStore,
    TurnJournal,
    TurnStore,
)

__all__ = [
    "ATTACHMENT_MANIFEST",
    "CONTEXT_ATTACHED",
    "DIGEST_ACK",
    "FEEDBACK_FILE",
    "HARMFUL",
    "HELPFUL",
    "MANIFEST_VERSION",
    "MAX_DIGEST_TOKENS",
    "MIN_DIGEST_TOKENS",
    "PLAYBOOK_DIR",
    "AppendLog",
    "AttachmentManifest",
    "AttachmentRecord",
    "CompactionEntry",
    "CustomEntry",
    "Entry",
    "FeedbackStore",
    "InvalidSessionKey",
    "LocalFeedbackStore",
    "LocalPlaybookStore",
    "MessageEntry",
    "MessageParam",
    "OutboxEntry",
    "PendingTurn",
    "PlaybookStore",
    "QueuedTurn",
    "RedisFeedbackStore",
    "RedisPlaybookStore",
    "RedisSessionLog",
    "RedisSessionStore",
    "RedisTurnStore",
    "SessionKey",
    "SessionLog",
    "SessionLogCorrupt",
    "SessionLogs",
    "SessionStarted",
    "SessionState",
    "SessionStore",
    "StoreUnavailable",
    "TrimResult",
    "TurnJournal",
    "TurnStore",
    "TurnTakenOver",
    "Vote",
    "check_team",
    "connect",
    "content_hash",
    "guarded",
    "is_outage",
    "namespace",
    "needs_compaction",
    "reattach_preamble",
    "rebuild",
    "summarize_request",
    "trim",
    "verdict_of",
    "with_digest",
]
