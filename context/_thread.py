"""ThreadContext: the root in full and as many of the newest replies as the budget allows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from chanctx.context._message import Message
from chanctx.context._wire import ThreadContext, ThreadReply, ThreadRoot, Truncation, wire_json
from chanctx.context.budget import Chunk, pack
from chanctx.context.render import Names, author_of, media_of, text_of
from chanctx.context.timestamps import iso_from_ts
from chanctx.context.tokens import TokenCounter, default_counter

__all__ = ["DEFAULT_THREAD_BUDGET", "build_thread_context"]

DEFAULT_THREAD_BUDGET = 8_000


def _reply(message: Message, text: str, names: Names, *, truncated: bool) -> ThreadReply:
    return ThreadReply(
        message_id=message.ts,
        ts=iso_from_ts(message.ts),
        author=author_of(message, names),
        text=text,
        is_truncated=truncated,
        media=media_of(message),
    )


def _newest_first(replies: Sequence[Message], names: Names) -> Iterator[Chunk[Message]]:
    # Rendering is lazy: replies beyond the budget are never touched.
    for index in range(len(replies) - 1, -1, -1):
        message = replies[index]
        yield Chunk(key=message.ts, text=text_of(message, names), item=message)


def _assemble(
    root: ThreadRoot,
    replies: Sequence[Message],
    included: list[ThreadReply],
    thread_id: str,
    total: int | None = None,
) -> ThreadContext:
    total = max(total or 0, len(replies))
    omitted = len(replies) - len(included)
    unknown = total - len(replies)  # replies the platform counts that were never fetched
    if omitted:
        first = iso_from_ts(replies[0].ts) if not unknown else root.ts
        omitted_range = (first, iso_from_ts(replies[omitted - 1].ts))
    elif unknown:
        last = replies[0].ts if replies else None
        omitted_range = (root.ts, iso_from_ts(last) if last else root.ts)
    else:
        omitted_range = None
    return ThreadContext(
        thread_id=thread_id,
        root=root,
        replies=included,
        truncation=Truncation(
            total_replies=total,
            included_replies=len(included),
            omitted_range_ts=omitted_range,
        ),
    )


def build_thread_context(
    root: Message,
    replies: Sequence[Message],
    *,
    budget_tokens: int = DEFAULT_THREAD_BUDGET,
    counter: TokenCounter | None = None,
    names: Names | None = None,
    total_replies: int | None = None,
) -> ThreadContext:
    """Build a ThreadContext whose serialized JSON fits ``budget_tokens``.

    ``total_replies``: how many replies the platform says the thread has, when some were
    never fetched; ``truncation`` then counts them as omitted (the oldest ones).

    ``replies`` are the thread's replies oldest to newest (the root excluded). The root is
    always included in full; replies are taken from the newest backwards, the oldest one
    taken may be cut at a sentence boundary, and the result lists them oldest to newest.
    A root larger than the budget on its own is the one case the total exceeds the budget.
    """
    counter = counter or default_counter()
    names = names or Names()
    thread_id = root.ts
    wire_root = ThreadRoot(
        message_id=root.ts,
        ts=iso_from_ts(root.ts),
        author=author_of(root, names),
        text=text_of(root, names),
        media=media_of(root),
    )
    # The frame is priced with the longest truncation block it can carry, so filling in the
    # real counts afterwards can only make it cheaper.
    frame = _assemble(wire_root, replies, [], thread_id, total_replies)
    frame_tokens = counter.count(wire_json(frame))

    def cost(chunk: Chunk[Message], text: str) -> int:
        reply = _reply(chunk.item, text, names, truncated=text != chunk.text)
        return counter.count(wire_json(reply)) + counter.count(",")

    packing = pack(
        _newest_first(replies, names),
        budget=max(budget_tokens - frame_tokens, 0),
        cost=cost,
    )
    included = [
        _reply(packed.chunk.item, packed.text, names, truncated=packed.truncated)
        for packed in reversed(packing.included)
    ]
    context = _assemble(wire_root, replies, included, thread_id, total_replies)
    # Summing pieces is an estimate of the whole; check the whole and drop the oldest
    # included reply until it fits. This almost never loops, and never past `included`.
    while included and counter.count(wire_json(context)) > budget_tokens:
        included = included[1:]
        context = _assemble(wire_root, replies, included, thread_id, total_replies)
    return context
