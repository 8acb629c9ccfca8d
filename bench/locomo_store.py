"""LoCoMo's real path served from the channel store (``python -m bench locomo_store``, or
``python -m bench.locomo --from-store``):
the bot that heard the conversation, a restarted bot whose index is built from the store, and one
whose byte budget leaves its index only the newest part of the channel, in one run.

``--postgres [--only whole|half]``: the two restarted rows again with the store on PostgreSQL,
put beside the embedded rows (which are not run again)."""

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
# The PostgreSQL rows, by the share of the conversation's bytes the index budget is (None: the
# whole conversation indexed, as the embedded store's second row).
POSTGRES_ROWS: dict[float | None, str] = {
    None: "from PostgreSQL (`--database-url`) after a restart (index built from the store)",
    0.5: (
        "from PostgreSQL (`--database-url`), budget half the channel: newest eighth indexed, "
        "the rest via `search_candidates`"
    ),
}
POSTGRES_VARIANTS = {"whole": None, "half": 0.5}


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


def from_postgres(
    conversations: Sequence[Conversation],
    *,
    write: bool,
    started: float,
    shares: Sequence[float | None] = (None, 0.5),
    command: str = "python -m bench locomo_store --postgres",
) -> None:
    """The restart rows with the channel store on PostgreSQL (the suite's way of starting one:
    ``initdb`` into a temporary directory, a loopback port), one for each of ``shares`` (None:
    the whole conversation indexed; 0.5: the budget-half restart), each put beside the embedded
    rows, which stay as they were measured (the notes say when)."""
    rows: dict[float | None, str] = {}
    for share in shares:
        server = postgres_server(Path(tempfile.mkdtemp(prefix="chanctx-locomo-pg-")))
        try:
            real = measure_real_path(
                conversations, restart=True, index_share=share, database_url=server.url
            )
        finally:
            server.stop("fast")
            shutil.rmtree(server.workdir, ignore_errors=True)
        cells = " | ".join(f"{overall(real.scored, k):.1f}" for k in KS)
        rows[share] = f"| {POSTGRES_ROWS[share]} | {cells} | {len(real.errors)} |"
        print(rows[share], flush=True)
    body = sections().get(SECTION, "")
    if not write or not body:
        return
    found = STAMP.search(body)
    before = found["stamp"] if found else "earlier"
    lines = [line for line in body.splitlines() if not line.startswith(("## ", "_Measured"))]
    for share, row in rows.items():
        at = [n for n, line in enumerate(lines) if line.startswith(f"| {POSTGRES_ROWS[share]}")]
        if at:
            lines[at[0]] = row
        else:  # after the last row of the table
            last = max(n for n, line in enumerate(lines) if line.startswith("| "))
            lines.insert(last + 1, row)
    measured = " and ".join(f'"{POSTGRES_ROWS[share]}"' for share in rows)
    lines += [
        "",
        f"Rerun of {measured} alone (`{command}`: "
        f"{time.perf_counter() - started:.0f} s): this section's measurement date; every other "
        f"row and note above is as measured {before}.",
    ]
    write_section(SECTION, "\n".join(lines).strip())


def main(argv: Sequence[str] = ()) -> None:
    args = list(argv)
    path = DATA
    if "--data" in args:
        path = benchdata(args[args.index("--data") + 1]) / "locomo" / "locomo10.json"
    conversations, _ = load(path)
    if "--postgres" in args:
        only = args[args.index("--only") + 1] if "--only" in args else None
        if only is not None and only not in POSTGRES_VARIANTS:
            raise SystemExit(f"--only: {only!r} is not one of {', '.join(POSTGRES_VARIANTS)}")
        shares = [POSTGRES_VARIANTS[only]] if only else list(POSTGRES_ROWS)
        from_postgres(
            conversations,
            write="--no-write" not in args,
            started=time.perf_counter(),
            shares=shares,
        )
        return
    from_store(conversations, write="--no-write" not in args, started=time.perf_counter())


if __name__ == "__main__":
    main(sys.argv[1:])
