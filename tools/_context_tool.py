"""channel_context: search the channel, answer with the best messages that fit the budget."""

from __future__ import annotations

from chanctx.cache import ts_key
from chanctx.context import Author, iso_from_ts
from chanctx.context._render import author_of
from chanctx.context.budget import Chunk
from chanctx.tools._env import Env, ToolResult
from chanctx.tools._fit import fit_ranked
from chanctx.tools._index import ThreadStats
from chanctx.tools._indexed import SearchScope, synced_index
from chanctx.tools._inputs import ChannelContextInput, parse_since
from chanctx.tools._outputs import (
    ChannelContextOutput,
    ContextResult,
    Coverage,
    ThreadSummary,
    output_json,
)
from chanctx.tools._search import Hit, Search, search
from chanctx.tools._view import SearchableView

__all__ = ["PER_THREAD", "run_channel_context"]

# At most this many results from one thread (its root included): a long thread matching the
# intent would otherwise fill every slot, and its root's thread_id already leads to the rest.
PER_THREAD = 3


def _result(hit: Hit, stats: dict[int, ThreadStats | None], author: Author) -> ContextResult:
    message = hit.message
    thread = None if message.is_reply else stats.get(ts_key(message.ts))
    return ContextResult(
        message_id=message.ts,
        # A reply names its thread; a root names itself only if it has a thread to fetch.
        thread_id=message.thread_ts if message.is_reply else (message.ts if thread else None),
        ts=iso_from_ts(message.ts),
        author=author,
        text=hit.text,
        thread_summary=(
            ThreadSummary(
                reply_count=thread.reply_count,
                last_reply_ts=iso_from_ts(thread.last_reply_ts) if thread.last_reply_ts else None,
                participant_names=list(thread.participant_names),
            )
            if thread
            else None
        ),
        relevance_signal=hit.signal,
    )


def _coverage(found: Search) -> Coverage:
    if found.time_range is None:
        return Coverage(messages_scanned=0, time_range=None)
    oldest, newest = found.time_range
    return Coverage(
        messages_scanned=found.scanned,
        time_range=(iso_from_ts(oldest), iso_from_ts(newest)),
    )


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
        if scope.messages is not None:
            index.sync(scope.messages(), env.names)
        index.refresh(env.names)
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
            ts_key(hit.message.ts): index.thread_stats(ts_key(hit.message.ts), env.names)
            for hit in found.hits
            if not hit.message.is_reply
        }
    coverage = _coverage(found)
    top = found.hits
    beyond_max = found.matches - len(top)
    chunks = [
        Chunk(
            key=hit.message.ts,
            text=hit.text,
            item=_result(hit, stats, author_of(hit.message, env.names)),
            relevance=hit.score,
        )
        for hit in top
    ]

    def render(results: list[ContextResult], omitted: int, cut: int) -> str:
        return output_json(
            ChannelContextOutput(
                results=results,
                coverage=coverage,
                truncated=True if omitted or cut else None,
                note=_note(found, beyond_max, omitted, cut),
            )
        )

    fitted = fit_ranked(
        chunks,
        render=render,
        budget=env.budget,
        counter=env.counter,
        item_json=lambda result: result.model_dump_json(),
    )
    return ToolResult(render(fitted.items, fitted.omitted, fitted.cut))
