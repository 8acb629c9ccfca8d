"""channel_context: search the channel, answer with the best messages that fit the budget.

Each hit is one compact row (``tools._outputs.ContextRow``): its ts, when (UTC, to the
minute), who, its text on one line, and a thread pointer. A hit the reader already holds (the
attached thread and snapshot, ``SearchScope.held``) is named by its ts only. No hit's text may
take more than a tenth of the budget (it is cut, and the note says how to read it whole), so
one pasted log cannot crowd out the other results.
"""

from __future__ import annotations

from datetime import UTC, datetime

from chanctx.cache import ts_key
from chanctx.context import Message, Names
from chanctx.context.budget import Chunk
from chanctx.context.render import author_of
from chanctx.tools._env import Env, ToolResult
from chanctx.tools._fit import cut_text, fit_ranked
from chanctx.tools._index import ThreadStats
from chanctx.tools._indexed import SearchScope, synced_index
from chanctx.tools._inputs import ChannelContextInput, parse_since
from chanctx.tools._outputs import ChannelContextOutput, ContextRow
from chanctx.tools._ranking import Hit, Search
from chanctx.tools._search import search
from chanctx.tools._view import SearchableView

__all__ = ["PER_THREAD", "minute", "run_channel_context"]

# At most this many results from one thread (its root included): a long thread matching the
# intent would otherwise fill every slot, and its root's ts already leads to the rest.
PER_THREAD = 3
# A hit's text takes at most this share of the output budget.
HIT_SHARE = 10


def minute(ts: str) -> str:
    """ "2026-02-27 14:02": UTC to the minute, what a reader needs to place a message."""
    return datetime.fromtimestamp(int(ts.split(".", 1)[0]), UTC).strftime("%Y-%m-%d %H:%M")


def _who(message: Message, names: Names) -> str:
    name = author_of(message, names).display_name
    if message.is_self:
        return f"{name} (you)"
    return f"{name} (bot)" if message.is_bot else name


def _line(hit: Hit, message: Message) -> str:
    """The hit's text on one line; files shared with text are named after it."""
    text = " ".join(hit.text.split())
    if message.files and not text.startswith("[shared "):
        titles = ", ".join(f.title or f.filename or f.artifact_id for f in message.files)
        text = f"{text} [shared {titles}]" if text else f"[shared {titles}]"
    return text


def _thread(message: Message, stats: ThreadStats | None) -> str | None:
    if message.is_reply:
        return f"thread {message.thread_ts}"
    if stats is None:
        return None
    replies = f"{stats.reply_count} repl{'y' if stats.reply_count == 1 else 'ies'}"
    return f"{replies}, last {minute(stats.last_reply_ts)}" if stats.last_reply_ts else replies


def _note(found: Search, beyond_max: int, omitted: int, cut: int) -> str | None:
    parts: list[str] = []
    if not found.hits and found.keywords and found.scanned:
        words = ", ".join(repr(k.word) for k in found.keywords)
        parts.append(f"No message matched the keywords {words}; try other words.")
    if omitted:
        parts.append(
            f"{omitted} more matching result{'s' if omitted > 1 else ''} left out to fit the "
            "output budget: narrow the search (a later `since`, `authors`, fewer results) or "
            "read one thread with channel_messages thread_id."
        )
    if cut:
        parts.append(
            f"The text of {cut} result{'s' if cut > 1 else ''} was cut (ends with '...'): "
            "fetch it in full with channel_messages message_ids."
        )
    if beyond_max:
        parts.append(
            f"{beyond_max} lower-ranked matches not shown (max_results; at most {PER_THREAD} "
            "per thread: read a whole thread with channel_messages thread_id)."
        )
    return " ".join(parts) or None


def _scope(env: Env) -> SearchScope:
    """The channel's index: the view's own if it serves one, else one synced from messages()."""
    view = env.view
    if isinstance(view, SearchableView):
        scope = view.search_index()
        # An index of another channel, or built with another stemmer, is not this search's.
        if (
            scope is not None
            and scope.index.channel == env.channel
            and scope.index.stemmer == env.ranking.stemmer
        ):
            return scope
    index = synced_index(view, env.channel, env.ranking.stemmer)
    return SearchScope(index, messages=view.messages)


def run_channel_context(env: Env, args: ChannelContextInput) -> ToolResult:
    scope = _scope(env)
    index = scope.index
    with index.lock:
        scope.prepare(args.intent, env.names)
        found = search(
            index,
            intent=args.intent,
            authors=args.authors or (),
            since=parse_since(args.since) if args.since is not None else None,
            names=env.names,
            now=env.now() if env.now is not None else None,
            limit=args.max_results,
            per_thread=PER_THREAD,
            hidden=scope.hidden,
            ranking=env.ranking,
        )
        stats = {
            hit.message.ts: index.thread_stats(ts_key(hit.message.ts), env.names)
            for hit in found.hits
            if not hit.message.is_reply and hit.message.ts not in scope.held
        }
    searched = found.scanned if found.time_range is not None else 0
    span = (minute(found.time_range[0]), minute(found.time_range[1])) if found.time_range else None
    beyond_max = found.matches - len(found.hits)
    cap = max(env.budget // HIT_SHARE, 1)
    chunks: list[Chunk[ContextRow]] = []
    capped: set[str] = set()
    for hit in found.hits:
        message = hit.message
        if message.ts in scope.held:
            row = ContextRow(ts=message.ts, held=True)
        else:
            text = _line(hit, message)
            if env.counter.count(text) > cap:
                text = cut_text(text, lambda t: env.counter.count(t) <= cap) or ""
                capped.add(message.ts)
            row = ContextRow(
                ts=message.ts,
                when=minute(message.ts),
                who=_who(message, env.names),
                text=text,
                thread=_thread(message, stats.get(message.ts)),
            )
        chunks.append(Chunk(key=message.ts, text=row.text, item=row, relevance=hit.score))

    def render(rows: list[ContextRow], omitted: int, cut: int) -> str:
        # The budget cuts only the last row kept; the cap may have cut any of them before.
        if capped:
            cut = sum(1 for row in rows if row.ts in capped) + (
                cut if rows and rows[-1].ts not in capped else 0
            )
        return ChannelContextOutput(
            results=rows,
            searched=searched,
            range=span,
            truncated=True if omitted or cut else None,
            note=_note(found, beyond_max, omitted, cut),
        ).to_json()

    fitted = fit_ranked(
        chunks,
        render=render,
        budget=env.budget,
        counter=env.counter,
        item_json=ContextRow.to_json,
    )
    return ToolResult(render(fitted.items, fitted.omitted, fitted.cut))
