"""LoCoMo's real path served from the channel store (``python -m bench locomo_store``, or
``python -m bench.locomo --from-store``):
the bot that heard the conversation, a restarted bot whose index is built from the store, and one
whose byte budget leaves its index only the newest part of the channel, in one run."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from chanctx.bot.core.store_index import CANDIDATES

from bench._data import benchdata
from bench._results import STAMP, sections, write_section
from bench.locomo import DATA, KS, Conversation, RealPath, load, measure_real_path, overall
from tests.support.postgres_server import postgres_server

__all__ = ["from_postgres", "from_store", "main"]

SECTION = "Search quality (LoCoMo) from the store"
POSTGRES_ROW = (
    "from PostgreSQL (`--database-url`), budget half the channel: newest eighth indexed, "
    "the rest via `search_candidates`"
)


def from_store(conversations: Sequence[Conversation], *, write: bool, started: float) -> None:
    """The real path three ways in one run: the bot that heard the conversation live; a new
    bot over the channel store it was written to (a restart: its index built from the store);
    and that restart with a byte budget of half the conversation's bytes (shared with the
    history, which holds the whole conversation: the index gets its floor, the newest eighth;
    the rest reaches the ranking only through the store's FTS5 index)."""
    rows: list[tuple[str, RealPath]] = []
    for label, restart, share in (
        ("live (the bot heard every turn)", False, None),
        ("from the store after a restart (index built from the store)", True, None),
        (
            "from the store, budget half the channel: newest eighth indexed, the rest via FTS5",
            True,
            0.5,
        ),
    ):
        real = measure_real_path(conversations, restart=restart, index_share=share)
        print(f"{label}: {overall(real.scored, 10):.1f} / {overall(real.scored, 25):.1f}")
        rows.append((label, real))
    lines = [
        '`python -m bench locomo_store`: the real path of "Search quality (LoCoMo)"',
        "(every question asked as a mention, answered through a Claude session against the fake",
        "Messages API, scored on `channel_context`'s rows) three ways in one run. *From the store*:",
        "the conversation is delivered to a bot with a channel store, that bot stops, and a new",
        "bot over the same data dir (empty caches, as after a restart; 0 `conversations.history`",
        "or `conversations.replies` calls, asserted) answers; its index is built from the store",
        "on the first search. *Budget half*: the same, with the byte budget (`--history-mb`) set to",
        "half of the conversation's `message_bytes`; the history (which holds the whole conversation,",
        "its recent window) counts against it, so the build gets its floor, a quarter of the budget:",
        "the index holds about the newest eighth, and each search pulls the older messages",
        f"FTS5 matches (top {CANDIDATES}) into it before ranking.",
        "",
        "| real path | recall@5 | recall@10 | recall@25 | questions failed |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, real in rows:
        cells = " | ".join(f"{overall(real.scored, k):.1f}" for k in KS)
        lines.append(f"| {label} | {cells} | {len(real.errors)} |")
    lines += ["", f"Run time {time.perf_counter() - started:.0f} s on 2 cores (shared)."]
    body = "\n".join(lines)
    if write:
        write_section(SECTION, body)
    print(body)


def from_postgres(conversations: Sequence[Conversation], *, write: bool, started: float) -> None:
    """The budget-half restart with the channel store on PostgreSQL (the suite's way of
    starting one: ``initdb`` into a temporary directory, a loopback port), its row added to
    the section beside the embedded rows, which stay as they were measured (their date is
    kept in the text)."""
    server = postgres_server(Path(tempfile.mkdtemp(prefix="chanctx-locomo-pg-")))
    try:
        real = measure_real_path(
            conversations, restart=True, index_share=0.5, database_url=server.url
        )
    finally:
        server.stop("fast")
        shutil.rmtree(server.workdir, ignore_errors=True)
    cells = " | ".join(f"{overall(real.scored, k):.1f}" for k in KS)
    row = f"| {POSTGRES_ROW} | {cells} | {len(real.errors)} |"
    print(row)
    body = sections().get(SECTION, "")
    if not write or not body:
        return
    found = STAMP.search(body)
    embedded = found["stamp"] if found else "earlier"
    lines = [line for line in body.splitlines() if not line.startswith(("## ", "_Measured"))]
    lines = [line for line in lines if not line.startswith(f"| {POSTGRES_ROW}")]
    lines = [line for line in lines if not line.startswith("The PostgreSQL row")]
    last = max(n for n, line in enumerate(lines) if line.startswith("| "))
    lines.insert(last + 1, row)
    lines += [
        "",
        f"The PostgreSQL row (`python -m bench locomo_store --postgres`, run alone: "
        f"{time.perf_counter() - started:.0f} s) is this section's measurement date; the "
        f"embedded rows above it are as measured {embedded}, not run again.",
    ]
    write_section(SECTION, "\n".join(lines).strip())


def main(argv: Sequence[str] = ()) -> None:
    args = list(argv)
    path = DATA
    if "--data" in args:
        path = benchdata(args[args.index("--data") + 1]) / "locomo" / "locomo10.json"
    conversations, _ = load(path)
    if "--postgres" in args:
        from_postgres(conversations, write="--no-write" not in args, started=time.perf_counter())
        return
    from_store(conversations, write="--no-write" not in args, started=time.perf_counter())


if __name__ == "__main__":
    main(sys.argv[1:])
