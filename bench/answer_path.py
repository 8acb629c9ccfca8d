"""``python -m bench answer_path``: the query API's answer over a channel of a million messages,
the code of a commit before against this tree's, in one run on one store.

    python -m bench.answer_path [--sizes 10000,1000000] [--queries 20] [--rounds 3]
                                [--before REV] [--dir DIR] [--format F] [--no-write]

For each size, one channel of that many messages (``bench.beyond_budget``'s fill; ``--dir``
keeps the stores and reuses them). Two worker processes, one running ``--before``'s code (a
``git archive`` of it put ahead of this tree on the import path) and one this tree's, each open
the store at the default ``--history-mb`` of 256, wait for the channel's index, then answer
the query API's question (``run_query``, JSON or ``--format``, messages only; no HTTP) taking turns: one
answer at a time under a shared lock, so both see the same load. Each asks ``--queries`` new
intents once (older matches pulled in), then the same intents ``--rounds`` times again. The
answers must be identical; the table gives p50 / p95 in ms, the ratio, and how many threads
each read from the caches or the store.

``--format tool`` times ``channel_context``'s own steps instead (the scope brought up to date
for the intent, then the ranking; no packing, no rendering), "Answer path tool" in
``bench/RESULTS.md``.

``--served`` asks the same question of two real ``chanctx run --http`` processes instead
(before and after, each on its own copy of the store, one answer at a time in turns, new
intents only, over HTTP with a new connection each as ``bench.store_served`` asks), with a body
the API refuses (422: routing, key and body checks, no answer) beside each answer: the table
says what HTTP costs apart from the answer.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._results import write_section

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "cache", "context", "tools", "manifest_store", "fixtures")
BEFORE = "ca03546"  # the last commit before the answer path's caches


def worker(
    data: Path, out: Path, lock_path: Path, other: Path, queries: int, rounds: int, fmt: str
) -> None:
    """One side: build, wait for the other side, answer in turns, write what it measured.

    ``fmt`` "tool": time ``channel_context``'s own steps instead of the query API's answer (the
    scope brought up to date for the intent, then the ranking at the tool's 8 results, 3 a
    thread; no packing, no rendering: what ``bench.store_restart``'s column times)."""
    # Imported here, not at the top: the side's own ``chanctx`` comes first on its path.
    from chanctx.bot.core.built_context import ContextSettings
    from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
    from chanctx.bot.core.engine import ContextEngine
    from chanctx.bot.server.queries import QueryBody, run_query
    from chanctx.bot.slack.intake import SelfIdentity
    from chanctx.cache.channel_store import SqliteChannelStore
    from chanctx.context import Names
    from chanctx.tools import IndexedHistory
    from chanctx.tools._search import search

    from bench.beyond_budget import CHANNEL, TEAM
    from bench.search_speed import Corpus

    opened = OpenStore(SqliteChannelStore(data, read_only=True))
    engine = ContextEngine(
        me=SelfIdentity(),
        names=Names(users=Corpus(seed=11).users),
        history=IndexedHistory(max_bytes=256 * 2**20),
        record=ChannelRecord(opened, TEAM),
        settings=ContextSettings(max_wait_seconds=10.0),
    )
    assert engine.indexes is not None
    reads = 0
    cached_thread = engine.cached_thread

    def counted(channel: str, root_ts: str) -> list[Any]:
        nonlocal reads
        reads += 1
        return cached_thread(channel, root_ts)

    engine.cached_thread = counted  # type: ignore[method-assign]
    intents = Corpus(seed=11).intents(queries)
    lock = lock_path.open("w")

    def tool(intent: str) -> dict[str, Any]:
        scope = engine.search_scope(CHANNEL, hidden=frozenset(), held=frozenset())
        assert scope is not None
        with scope.index.lock:
            scope.prepare(intent, engine.names)
            found = search(
                scope.index, intent=intent, authors=(), since=None, names=engine.names,
                now=None, limit=8, per_thread=3, hidden=scope.hidden,
            )  # fmt: skip
        hits = [[h.message.ts, h.score, h.signal] for h in found.hits]
        return {"hits": hits, "matches": found.matches, "scanned": found.scanned}

    def ask(intent: str) -> tuple[dict[str, Any], float]:
        body = QueryBody.model_validate(
            {"query": intent, "channel": CHANNEL, "format": "json" if fmt == "tool" else fmt,
             "type_filters": ["message"]}
        )  # fmt: skip
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            started = time.perf_counter()
            answer = tool(intent) if fmt == "tool" else run_query(engine, body)
            return answer, time.perf_counter() - started
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

    ask(intents[0])  # starts the build
    while not engine.indexes.indexed(CHANNEL):
        time.sleep(0.5)
    out.with_suffix(".ready").touch()
    while not other.with_suffix(".ready").exists():
        time.sleep(0.2)
    reads = 0
    fresh = [ask(intent) for intent in intents]
    fresh_reads = reads
    again = [ask(intent) for _ in range(rounds) for intent in intents]
    answers = json.dumps([a for a, _ in fresh + again[: len(intents)]], sort_keys=True)
    out.write_text(
        json.dumps(
            {
                "fresh": [t for _, t in fresh],
                "again": [t for _, t in again],
                "reads": [fresh_reads, reads - fresh_reads],
                "answers": hashlib.sha256(answers.encode()).hexdigest(),
                "indexed": engine.indexes.indexed(CHANNEL),
            }
        )
    )
    opened.close()


def _shadow(rev: str, into: Path) -> Path:
    """``rev``'s packages as ``chanctx.*`` under ``into`` (first on the import path)."""
    tree = into / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    package = into / "path" / "chanctx"
    package.mkdir(parents=True)
    (package / "__init__.py").touch()
    for name in PACKAGES:
        (package / name).symlink_to(tree / name)
    return into / "path"


def measure(data: Path, shadow: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    sides = {"before": f"{shadow}{os.pathsep}{ROOT}", "after": str(ROOT)}
    procs = {}
    for side, path in sides.items():
        other = "after" if side == "before" else "before"
        command = [sys.executable, "-m", "bench.answer_path", "--worker", str(data),
                   str(work / f"{side}.json"), str(work / "turn.lock"), str(work / f"{other}.json"),
                   str(args.queries), str(args.rounds), args.format]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": path}
        procs[side] = subprocess.Popen(command, cwd=ROOT, env=env)
    for side, proc in procs.items():
        if proc.wait() != 0:
            raise SystemExit(f"the {side} worker failed ({proc.returncode})")
    return {side: json.loads((work / f"{side}.json").read_text()) for side in sides}


def _p(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def report(args: argparse.Namespace, rows: dict[int, dict[str, Any]]) -> str:
    what = (
        "`channel_context`'s own steps in process (the index brought up to date for the intent,\n"
        "older matches pulled in, the ranking at 8 results, 3 a thread; no packing or rendering)"
        if args.format == "tool"
        else "the query API's answer in process\n"
        f"(`run_query`, format {args.format}, messages only, no HTTP)"
    )
    lines = [
        f"`python -m bench.answer_path --sizes {args.sizes} --queries {args.queries} --rounds "
        f"{args.rounds} --format {args.format}`: one channel of each size (`bench.store`'s",
        f"synthetic chat) at the default `--history-mb` of 256, {what} by the code of",
        f"{args.before} (before) and of this tree (after), two processes answering in turns on",
        f"the same store; load {os.getloadavg()[0]:.1f} at the end.",
        "New intents: each asked once (older matches pulled in); again: the same intents asked",
        "again. p50 / p95 in ms;",
        "thread reads: threads read from the caches or the store for the new intents.",
        "",
        "| messages (indexed) | | before | after | before / after (p50, p95) |",
        "|---|---|---:|---:|---:|",
    ]
    for size, sides in rows.items():
        before, after = sides["before"], sides["after"]
        for key, label in (("fresh", "new intents"), ("again", "the same again")):
            (b50, b95), (a50, a95) = _p(before[key]), _p(after[key])
            lines.append(
                f"| {size:,} ({after['indexed']:,}) | {label} | {b50:,.1f} / {b95:,.1f} | "
                f"{a50:,.1f} / {a95:,.1f} | {b50 / a50:.2f}x, {b95 / a95:.2f}x |"
            )
        lines.append(f"| {size:,} | thread reads | {before['reads'][0]} | {after['reads'][0]} | |")
        same = "identical" if before["answers"] == after["answers"] else "DIFFERENT"
        lines.append(f"| {size:,} | answers | | {same} | |")
    return "\n".join(lines)


def served(data: Path, shadow: Path, work: Path, queries: int) -> dict[str, dict[str, Any]]:
    """Both sides served: answer and 422 times (seconds) per side, and the answers compared."""
    import urllib.error
    import urllib.request

    from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
    from chanctx.bot.replay.fake_slack import FakeSlackAPI

    from bench._process import BotProcess
    from bench._served_process import KEY, ask, slack_state
    from bench.beyond_budget import CHANNEL
    from bench.search_speed import Corpus

    keys = work / "keys.json"
    keys.write_text(json.dumps({KEY: "*"}))
    intents = Corpus(seed=11).intents(queries + 12)
    refused = json.dumps({"channel": CHANNEL}).encode()  # no query: 422

    def refuse(base: str) -> float:
        request = urllib.request.Request(
            base + "/api/context/query", data=refused, method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        )  # fmt: skip
        started = time.perf_counter()
        try:
            urllib.request.urlopen(request, timeout=60).close()
        except urllib.error.HTTPError as error:
            error.read()
            if error.code != 422:
                raise
        return time.perf_counter() - started

    paths = {"before": f"{shadow}{os.pathsep}{ROOT}", "after": str(ROOT)}
    out: dict[str, dict[str, Any]] = {
        s: {"answer": [], "refused": [], "answers": []} for s in paths
    }
    with FakeSlackAPI(slack_state([CHANNEL])) as slack, FakeAnthropicAPI() as claude:
        bots: dict[str, BotProcess] = {}
        for side, path in paths.items():
            copy = work / side / "data"
            shutil.copytree(data, copy)
            (copy / "channels.lock").unlink(missing_ok=True)
            bots[side] = BotProcess(
                copy, slack.url, claude.url, extra_args=("--api-keys", str(keys)),
                env={"PYTHONPATH": path},
            )  # fmt: skip
        try:
            for bot in bots.values():
                bot.start(60)
            bases = {s: b.url.removesuffix("/slack/events") for s, b in bots.items()}
            for _ in range(2):  # the first asks start the index builds; the second finds them
                for base in bases.values():
                    for intent in intents[:12]:
                        ask(base, CHANNEL, intent)
                time.sleep(5)
            for number, intent in enumerate(intents[12:]):
                for side in list(paths)[:: 1 if number % 2 == 0 else -1]:
                    took, body = ask(bases[side], CHANNEL, intent)
                    out[side]["answer"].append(took)
                    out[side]["answers"].append(hashlib.sha256(body).hexdigest())
                    out[side]["refused"].append(refuse(bases[side]))
        finally:
            for bot in bots.values():
                bot.stop()
    return out


def served_report(args: argparse.Namespace, size: int, sides: dict[str, dict[str, Any]]) -> str:
    load = os.getloadavg()[0]
    lines = [
        f"`python -m bench.answer_path --served --sizes {size} --queries {args.queries} "
        f"--before {args.before}`: two real `chanctx run --http` (before: {args.before}, after:",
        "this tree), each on a copy of one store, answering in turns; each new intent asked once",
        "(JSON, messages only), and beside each answer a body the API refuses (422, no answer).",
        f"p50 / p95 in ms, load {load:.1f} at the end.",
        "",
        "| messages | | before | after | before / after (p50) |",
        "|---|---|---:|---:|---:|",
    ]
    for key, label in (("answer", "answer"), ("refused", "422")):
        (b50, b95), (a50, a95) = _p(sides["before"][key]), _p(sides["after"][key])
        lines.append(
            f"| {size:,} | {label} | {b50:,.1f} / {b95:,.1f} | {a50:,.1f} / {a95:,.1f} | "
            f"{b50 / a50:.2f}x |"
        )
    same = sides["before"]["answers"] == sides["after"]["answers"]
    lines.append(f"| {size:,} | answers | | {'identical' if same else 'DIFFERENT'} | |")
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> None:
    if argv[:1] == ["--worker"]:
        data, out, lock, other, queries, rounds, fmt = argv[1:8]
        worker(Path(data), Path(out), Path(lock), Path(other), int(queries), int(rounds), fmt)
        return
    parser = argparse.ArgumentParser(prog="python -m bench.answer_path")
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--dir", type=Path, default=None, help="keep the stores here, reuse them")
    parser.add_argument(
        "--format", choices=("json", "markdown", "text", "tool"), default="json",
        help="the query API's answer in this format, or tool: channel_context's own steps",
    )  # fmt: skip
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--served", action="store_true", help="over HTTP, two real bots")
    args = parser.parse_args(argv)
    from bench.beyond_budget import fill

    root = args.dir or Path(tempfile.mkdtemp(prefix="chanctx-answer-"))
    work = Path(tempfile.mkdtemp(prefix="chanctx-answer-work-"))
    rows: dict[int, dict[str, Any]] = {}
    try:
        shadow = _shadow(args.before, work / "before")
        for size in (int(s) for s in args.sizes.split(",")):
            data = root / f"store-{size}"
            if not (data / "channels.sqlite3").exists():
                data.mkdir(parents=True, exist_ok=True)
                fill(data, size)
            turn = work / str(size)
            turn.mkdir()
            if args.served:
                body = served_report(args, size, served(data, shadow, turn, args.queries))
                print(body)
                if not args.no_write:
                    write_section("Answer path served", body)
                continue
            rows[size] = measure(data, shadow, turn, args)
            print(size, {s: _p(r["again"]) for s, r in rows[size].items()}, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.served:
        return
    body = report(args, rows)
    print(body)
    if not args.no_write:
        write_section("Answer path tool" if args.format == "tool" else "Answer path", body)


if __name__ == "__main__":
    main(sys.argv[1:])
