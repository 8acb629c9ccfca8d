"""``python -m bench all``: regenerate every section of bench/RESULTS.md, one module at a time.

    python -m bench list                 # the registered modules and their sections
    python -m bench all [--data DIR]     # run every one (about half an hour on 2 cores)
    python -m bench NAME [NAME ...]      # run some (e.g. ``python -m bench locomo``)
    python -m bench import               # = import_export (``import`` is a Python keyword)

Each module runs in its own process (``python -m bench.NAME``), so one bench's memory and
warm caches never colour another's numbers. A module that exits non-zero (a bar missed, or a
crash) is reported and the rest still run; the exit status is 1 if any failed or left a
section of its own unwritten.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench._registry import BENCHES
from bench._results import RESULTS, section_stamps

ROOT = Path(__file__).resolve().parents[1]
# Names a module cannot have (``import`` is a keyword): the command name -> the module.
ALIASES = {"import": "import_export"}


def _run(name: str, data: str | None) -> tuple[int, list[str]]:
    """Run one module; (exit status, its sections that were not rewritten)."""
    before = section_stamps()
    env = dict(os.environ)
    if data is not None:
        env["CHANCTX_BENCHDATA"] = data
    done = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=ROOT, env=env, check=False)
    after = section_stamps()
    stale = [s for s in BENCHES[name] if after.get(s) is None or after.get(s) == before.get(s)]
    return done.returncode, stale


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    data = None
    if "--data" in args:
        at = args.index("--data")
        if at + 1 >= len(args):
            print("--data needs a directory", file=sys.stderr)
            return 2
        data = args[at + 1]
        del args[at : at + 2]
    if not args or args == ["list"]:
        for name, sections in BENCHES.items():
            print(f"{name}: " + "; ".join(sections))
        return 0
    names = list(BENCHES) if args == ["all"] else [ALIASES.get(a, a) for a in args]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(
            f"unknown bench {', '.join(map(repr, unknown))}; registered: {', '.join(BENCHES)}",
            file=sys.stderr,
        )
        return 2
    failed: list[str] = []
    for name in names:
        started = time.monotonic()
        print(f"== bench.{name}", flush=True)
        status, stale = _run(name, data)
        took = time.monotonic() - started
        if status or stale:
            why = f"exit {status}" if status else ""
            if stale:
                why += ("; " if why else "") + "not rewritten: " + ", ".join(stale)
            failed.append(f"{name} ({why})")
        print(f"== bench.{name}: {'ok' if not (status or stale) else 'FAILED'} in {took:.0f} s")
    print(f"{len(names) - len(failed)} of {len(names)} benches wrote {RESULTS.name}")
    if failed:
        print("failed: " + "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
