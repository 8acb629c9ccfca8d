"""Request fitting: CPU time to fit a request against the number of text attachments it holds.

A thread whose turns read many text files carries every one of them in each later request, so
the request must be fitted (attachments left out, largest first, until it is under the token
budget) before every Messages API call. Here a request holds N (10..100) distinct text files of
about 98 KB each, as a session accumulates them, under the budget a 200k window at the 0.8
compaction threshold gives (160,000 tokens: most files are left out). For each N:

* the first fit with a fresh offline counter (nothing counted yet: every file tokenized once),
* the next request's fit (the same files again, as every later tool round and turn sends them),

each as process CPU time, and per attachment. The baseline is the fitting code at commit
``BASELINE`` (``git show``), run on the same requests in the same process; where it would take
minutes, it runs up to ``--baseline-max`` attachments only (25 by default). Beside it: the exact counter's cold
speed (``ExactCounter`` against the loopback fake Anthropic API, text it has not seen).

Run: python -m bench.request_fit [--no-write] [--baseline-max N]
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from chanctx.bot.claude import request_fit
from chanctx.bot.claude.token_count import ExactCounter
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.context.tokens import PieceCounter, family_for_model

from bench._results import write_section

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "d501de6"  # before fitting measured each block once
MODEL = "claude-sonnet-4-5"
BUDGET = 160_000  # 200,000-token window x 0.8 compaction threshold
FILE_BYTES = 98_000
SIZES = (10, 25, 50, 75, 100)
FILES_PER_TURN = 25  # each mention asked Claude to read 25 files

Fit = Callable[..., list[str]]

WORDS = [
    "checkout",
    "latency",
    "p99",
    "deploy",
    "rollback",
    "incident",
    "timeout",
    "retry",
    "cache",
    "miss",
    "shard",
    "replica",
    "database",
    "connection",
    "pool",
    "error",
    "budget",
    "alert",
    "page",
    "on-call",
    "runbook",
    "kafka",
    "consumer",
    "lag",
    "queue",
    "worker",
    "thread",
    "lock",
    "contention",
    "memory",
    "leak",
    "heap",
    "gc",
    "pause",
    "request",
    "response",
    "header",
    "payload",
    "json",
    "schema",
    "migration",
    "index",
    "query",
    "plan",
    "scan",
    "filter",
    "join",
    "aggregate",
    "metric",
    "dashboard",
    "grafana",
    "prometheus",
    "trace",
    "span",
    "service",
    "mesh",
    "sidecar",
    "envoy",
    "ingress",
    "tls",
    "cert",
]


def file_text(rng: random.Random, n: int) -> str:
    """About ``FILE_BYTES`` of log-like text, different for every file."""
    lines: list[str] = []
    size = 0
    while size < FILE_BYTES:
        line = (
            f"2026-11-{1 + n % 28:02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
            f"{rng.randrange(60):02d}Z svc-{rng.randrange(40)} "
            + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))
            + f" id={rng.getrandbits(48):x} took={rng.randrange(5000)}ms"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def request_with(files: Sequence[str]) -> dict[str, Any]:
    """A request as the session builds it: turns of ``FILES_PER_TURN`` files read, each turn
    answered, the files still in the history."""
    messages: list[dict[str, Any]] = []
    for start in range(0, len(files), FILES_PER_TURN):
        chunk = files[start : start + FILES_PER_TURN]
        blocks = [
            {"type": "text", "text": f"[file log-{start + i}.txt]\n{text}"}
            for i, text in enumerate(chunk)
        ]
        blocks.append({"type": "text", "text": "What do these logs say about the outage?"})
        messages += [
            {"role": "user", "content": blocks},
            {"role": "assistant", "content": [{"type": "text", "text": "They show ..."}]},
        ]
    messages.append({"role": "user", "content": [{"type": "text", "text": "And now?"}]})
    return {
        "model": MODEL,
        "max_tokens": 4_096,
        "system": "You answer questions about a Slack channel.",
        "tools": [{"name": "search", "description": "Search.", "input_schema": {}}],
        "messages": messages,
    }


def cpu(fit: Fit, request: dict[str, Any], count: Callable[[str], int]) -> tuple[float, int]:
    """CPU seconds to fit a copy of ``request``, and how many attachments it left out."""
    copied = copy.deepcopy(request)
    start = time.process_time()
    notes = fit(copied, count=count, token_budget=BUDGET)
    return time.process_time() - start, len(notes)


def measure(fit: Fit, files: Sequence[str]) -> tuple[float, float, int]:
    """(first fit, next request's fit) CPU seconds with a fresh counter; attachments left out."""
    counter = PieceCounter(family_for_model(MODEL))
    request = request_with(files)
    first, left_out = cpu(fit, request, counter.count)
    again, _ = cpu(fit, request, counter.count)
    return first, again, left_out


def baseline_module() -> ModuleType:
    """``bot/claude/request_fit.py`` as it was at ``BASELINE``, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{BASELINE}:bot/claude/request_fit.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "request_fit_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("request_fit_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def exact_cold(files: Sequence[str]) -> tuple[float, float]:
    """The exact counter on text it has not seen: (wall ms, CPU ms of this process) per file."""
    import anthropic

    with FakeAnthropicAPI() as fake:
        client = anthropic.Anthropic(api_key="sk-ant-bench", base_url=fake.url)
        counter = ExactCounter(client, model=MODEL, timeout=30.0)
        counter.count("warm up the frame")
        wall, start = time.perf_counter(), time.process_time()
        for text in files:
            counter.count(text)
        cpu_ms = (time.process_time() - start) * 1000 / len(files)
        wall_ms = (time.perf_counter() - wall) * 1000 / len(files)
    return wall_ms, cpu_ms


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_fit")
    parser.add_argument("--no-write", action="store_true")
    # The baseline re-counts every file on every note it writes: minutes past 25 files.
    parser.add_argument("--baseline-max", type=int, default=25)
    args = parser.parse_args(argv)
    rng = random.Random(24)
    files = [file_text(rng, n) for n in range(max(SIZES))]
    old = baseline_module()
    rows: list[str] = []
    worst = 0.0
    for n in SIZES:
        first, again, left_out = measure(request_fit.fit_request, files[:n])
        worst = max(worst, again)
        if n <= args.baseline_max:
            old_first, old_again, _ = measure(old.fit_request, files[:n])
            before = f"{old_first:.2f} s / {old_again:.2f} s"
            ratio = f"{old_first / first:.1f}x / {old_again / max(again, 1e-6):.0f}x"
        else:
            before, ratio = "not run", "-"
        rows.append(
            f"| {n} | {left_out} | {first:.2f} s | {first / n * 1000:.1f} ms | "
            f"{again * 1000:.1f} ms | {again / n * 1000:.2f} ms | {before} | {ratio} |"
        )
        print(rows[-1], flush=True)
    wall_ms, cpu_ms = exact_cold(files[:20])
    offline_ms = offline_cold(files[:20])
    body = "\n".join(
        [
            f"A request holding N distinct ~{FILE_BYTES // 1000} KB text files (the history of "
            f"turns that read {FILES_PER_TURN} each), fitted under a {BUDGET:,}-token budget "
            "(a 200k window at the 0.8 compaction threshold) with the offline counter. First "
            "fit: a fresh counter, every file tokenized once; next: the same request again, as "
            "every later tool round and turn sends it. CPU time of the fitting only. Baseline: "
            f"the fitting code at {BASELINE} on the same requests in the same run "
            "(first / next, and the ratio baseline / now).",
            "",
            "| attachments | left out | first fit | per attachment | next fit | per attachment "
            "| at " + BASELINE + " (first / next) | ratio |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Bar: a request holding {max(SIZES)} accumulated attachments (each counted once, "
            f"when it first came) fits in under 1 s of CPU: {worst:.2f} s at most "
            f"({'met' if worst < 1.0 else 'missed'}). The first fit is the counter's cold "
            "speed times the files it has not seen: flat per attachment, paid once per file.",
            "",
            f"Cold counting of a ~{FILE_BYTES // 1000} KB text it has not seen: exact counter "
            f"(`ExactCounter`, `count_tokens` on the loopback fake API, which counts offline "
            f"itself) {wall_ms:.0f} ms wall ({cpu_ms:.0f} ms CPU in this process, the fake "
            f"included) per file; offline counter (a fresh `PieceCounter`) {offline_ms:.0f} ms.",
        ]
    )
    print(body)
    if not args.no_write:
        write_section("Request fitting", body)
    return 0 if worst < 1.0 else 1


def offline_cold(files: Sequence[str]) -> float:
    """ms of CPU per file for a fresh offline counter on unseen text."""
    counter = PieceCounter(family_for_model(MODEL))
    start = time.process_time()
    for text in files:
        counter.count(text)
    return (time.process_time() - start) * 1000 / len(files)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
