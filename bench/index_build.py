"""``python -m bench index_build``: what building a channel's search index from the channel store
costs (``bot/core/store_index.py``): the seconds from a restarted bot's first search of the
channel to its index being ready, and the memory the index takes, at several channel sizes.

Each size runs in a process of its own (RSS is not given back between sizes): the channel is
written to a fresh SQLite store (one ``write`` per 5,000 messages, ``synchronous=OFF``: the
fill is not what is measured), the store is closed and opened again, and a new engine over it
(empty caches, as after a restart) builds the channel's index. RssAnon is read before and
after the build; the budget (``--history-mb``) is large enough for the whole channel.

    python -m bench index_build [--sizes 10000,100000] [--no-write]
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache.channel_store import MessagePosted, SqliteChannelStore
from chanctx.context import Message, Names
from chanctx.tools import IndexedHistory

from bench._results import write_section

__all__ = ["main", "measure"]

SIZES = (10_000, 100_000, 300_000)
TEAM, CHANNEL = "T0INDEX001", "C0INDEX001"
START = 1_700_000_000


def rss_anon() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def channel(size: int) -> list[Message]:
    """Chat-like messages: 6-20 words of a 3,000-word vocabulary, 40 people, one in ten a reply
    to one of the last 50 top-level messages."""
    rng = random.Random(size)
    vocabulary = [f"w{n:04d}" for n in range(3_000)]
    out: list[Message] = []
    roots: list[str] = []
    for n in range(size):
        ts = f"{START + n}.000100"
        text = " ".join(rng.choices(vocabulary, k=rng.randint(6, 20)))
        user = f"U{rng.randrange(40):04d}"
        if roots and n % 10 == 9:
            out.append(Message(channel=CHANNEL, ts=ts, thread_ts=rng.choice(roots[-50:]),
                               user_id=user, text=text))  # fmt: skip
        else:
            roots.append(ts)
            out.append(Message(channel=CHANNEL, ts=ts, user_id=user, text=text))
    return out


def measure(size: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="chanctx-index-build-") as tmp:
        data = Path(tmp)
        store = SqliteChannelStore(data, synchronous="OFF")
        messages = channel(size)
        for start in range(0, size, 5_000):
            store.write([MessagePosted(TEAM, m) for m in messages[start : start + 5_000]])
        store.close()
        del messages
        opened = OpenStore(SqliteChannelStore(data))
        try:
            engine = ContextEngine(
                me=SelfIdentity(),
                names=Names(),
                history=IndexedHistory(max_bytes=64 * 2**30),
                record=ChannelRecord(opened, TEAM),
            )
            assert engine.indexes is not None
            before = rss_anon()
            started = time.perf_counter()
            # An answer waits for a build at most a second (and not at all for one with more
            # than a page to read): the bench waits for the build itself.
            while not engine.indexes.wait_built(CHANNEL, 3_600.0)[0]:
                pass
            seconds = time.perf_counter() - started
            after = rss_anon()
            assert engine.indexes.indexed(CHANNEL) == size, "the index is not whole"
        finally:
            opened.close()
    return {"size": size, "seconds": seconds, "rss": after - before}


def main(argv: Sequence[str] = ()) -> None:
    args = list(argv)
    if "--one" in args:
        print(json.dumps(measure(int(args[args.index("--one") + 1]))))
        return
    sizes = SIZES
    if "--sizes" in args:
        sizes = tuple(int(s) for s in args[args.index("--sizes") + 1].split(","))
    rows = []
    for size in sizes:
        child = subprocess.run(
            [sys.executable, "-m", "bench.index_build", "--one", str(size)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        row = json.loads(child.stdout.strip().splitlines()[-1])
        print(row, flush=True)
        rows.append(row)
    lines = [
        "`python -m bench index_build`: a restarted bot's first search of a channel builds the",
        "channel's index from the channel store (`bot/core/store_index.py`): the seconds until it",
        "is ready and the RssAnon it adds, for one channel of each size (chat-like messages of",
        "6-20 words, one in ten a thread reply), each size in a process of its own.",
        "",
        "| messages | build (s) | messages/s | RssAnon added (MB) | bytes/message |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['size']:,} | {row['seconds']:.1f} | {row['size'] / row['seconds']:,.0f} | "
            f"{row['rss'] / 2**20:,.0f} | {row['rss'] / row['size']:,.0f} |"
        )
    biggest = rows[-1]
    per_second = biggest["size"] / biggest["seconds"]
    lines += [
        "",
        f"At that rate a channel of 1,000,000 messages takes about {1e6 / per_second:.0f} s to",
        "build: the 5-second restart at that size needs the index persisted, not rebuilt.",
    ]
    body = "\n".join(lines)
    if "--no-write" not in args:
        write_section("Index built from the store", body)
    print(body)


if __name__ == "__main__":
    main(sys.argv[1:])
