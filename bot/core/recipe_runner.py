"""The I/O side of the context recipe: load context.yaml, read files, run computed_file commands.

``context.recipe`` is pure (models, validation, budgets); this module does what it cannot: it
reads the files a recipe names, runs each ``computed_file`` command (no shell, its timeout
enforced, its whole process group killed on timeout), caches their outputs as the recipe says,
and hands the loaded text to ``context.recipe.fit_sources``.

Path rules (documented in docs/recipe.md):
* a ``file`` source's relative ``path`` is relative to ``${AGENT_HOME}``;
* a ``computed_file`` runs in ``generator.cwd`` (relative to ``${CWD}``; default ``${CWD}``), and
  its relative ``output_path`` and ``invalidate_on`` globs are seen from there, as the command
  sees them.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from chanctx.context import RecipeError
from chanctx.context.recipe import (
    ComputedCache,
    ComputedFileSource,
    FileSource,
    Fitted,
    Recipe,
    SourceContent,
    default_recipe,
    expand,
    fit_sources,
    parse_recipe,
    source_label,
)
from chanctx.context.tokens import TokenCounter, default_counter

__all__ = ["CONTEXT_FILE", "RecipeRunner", "load_recipe"]

CONTEXT_FILE: Final = "context.yaml"
# How much of a failed command's stderr an error or note quotes: the end is where the reason is.
STDERR_TAIL_CHARS: Final = 500
# Cached outputs kept per computed source (LRU), so thread-scoped caches stay bounded.
MAX_CACHED_OUTPUTS: Final = 256
# After a timeout kill, how long to wait for the pipes to close before giving up on them.
_REAP_SECONDS: Final = 2.0


def load_recipe(home: Path) -> Recipe:
    """``home/context.yaml`` parsed and validated; the default recipe when there is none.

    Raises RecipeError (its message starts with the file's path) for an invalid file.
    """
    path = home / CONTEXT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default_recipe()
    except (OSError, UnicodeDecodeError) as error:
        raise RecipeError(f"{path}: cannot be read: {error}") from None
    return parse_recipe(text, origin=str(path))


@dataclass(frozen=True)
class _Cached:
    text: str
    ran_at: float  # clock() when the run that produced it started
    fingerprint: tuple[tuple[str, int, int], ...]  # (path, mtime_ns, size) of invalidate_on files


class _Failed(Exception):
    """A source could not be loaded; on_missing decides what follows.

    The message names paths as the recipe writes them (``${CWD}/x.md``), so notes are the same on
    every machine; ``detail`` (the resolved path, say) is added to errors for the operator.
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class RecipeRunner:
    """Loads a recipe's sources for one Claude session start (or re-attach) and fits them.

    Thread-safe: the bot assembles for several threads at once. Runs of one computed source are
    serialised, because concurrent runs would write the same ``output_path``.
    """

    def __init__(
        self,
        recipe: Recipe,
        *,
        home: Path,
        cwd: Path,
        counter: TokenCounter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.recipe = recipe
        self.home = home.absolute()
        self.cwd = cwd.absolute()
        self.variables = {"AGENT_HOME": str(self.home), "CWD": str(self.cwd)}
        self._counter = counter or default_counter()
        self._clock = clock
        self._origin = str(self.home / CONTEXT_FILE)
        self._locks = {
            index: threading.Lock()
            for index, source in recipe.text_sources()
            if isinstance(source, ComputedFileSource)
        }
        self._caches: dict[int, OrderedDict[str, _Cached]] = {i: OrderedDict() for i in self._locks}

    def assemble(self, *, run_id: str, channel: str, thread_ts: str) -> Fitted:
        """Load every text source, then fit them (``context.recipe.fit_sources``).

        Raises RecipeError, naming the source, when a source with ``on_missing: error`` fails.
        """
        contents = [
            self._load_file(index, source)
            if isinstance(source, FileSource)
            else self._load_computed(index, source, run_id, channel, thread_ts)
            for index, source in self.recipe.text_sources()
        ]
        return fit_sources(self.recipe, contents, self._counter)

    # --- file --------------------------------------------------------------------------------

    def _load_file(self, index: int, source: FileSource) -> SourceContent:
        path = _resolve(expand(source.path, self.variables), self.home)
        try:
            return SourceContent(_read(path, source.path))
        except _Failed as failure:
            return self._missing(index, source, failure)

    def _missing(
        self, index: int, source: FileSource | ComputedFileSource, failure: _Failed
    ) -> SourceContent:
        label = source_label(index, source)
        if source.on_missing == "skip":
            return SourceContent(None, note=f"{label}: skipped (on_missing: skip): {failure}")
        detail = f" ({failure.detail})" if failure.detail else ""
        raise RecipeError(f"{self._origin}: {label}: {failure}{detail}")

    # --- computed_file -----------------------------------------------------------------------

    def _load_computed(
        self,
        index: int,
        source: ComputedFileSource,
        run_id: str,
        channel: str,
        thread_ts: str,
    ) -> SourceContent:
        generator = source.generator
        workdir = self.cwd
        if generator.cwd is not None:
            workdir = _resolve(expand(generator.cwd, self.variables), self.cwd)
        output = _resolve(expand(source.output_path, self.variables), workdir)
        key = _scope_key(source.cache, channel, thread_ts)
        with self._locks[index]:
            cache = self._caches[index]
            fingerprint: tuple[tuple[str, int, int], ...] = ()
            if source.cache is not None:
                fingerprint = self._fingerprint(source.cache, workdir, output)
                hit = cache.get(key)
                if hit is not None and self._fresh(hit, source.cache, fingerprint):
                    cache.move_to_end(key)
                    return SourceContent(hit.text)
                cache.pop(key, None)
            started = self._clock()
            try:
                self._run(source, workdir, run_id, channel, thread_ts)
                text = _read(output, source.output_path, after_run=True)
            except _Failed as failure:
                return self._missing(index, source, failure)
            if source.cache is not None:
                cache[key] = _Cached(text, started, fingerprint)
                while len(cache) > MAX_CACHED_OUTPUTS:
                    cache.popitem(last=False)
            return SourceContent(text)

    def _fresh(
        self, hit: _Cached, policy: ComputedCache, fingerprint: tuple[tuple[str, int, int], ...]
    ) -> bool:
        if policy.ttl_seconds is not None and self._clock() - hit.ran_at >= policy.ttl_seconds:
            return False
        return hit.fingerprint == fingerprint

    def _fingerprint(
        self, policy: ComputedCache, workdir: Path, output: Path
    ) -> tuple[tuple[str, int, int], ...]:
        """(path, mtime_ns, size) of every regular file the globs match, the output excepted.

        A file added, removed, rewritten or touched changes it. The output is left out: a glob
        that also matches it would otherwise invalidate the cache on every run.
        """
        seen: set[tuple[str, int, int]] = set()
        for pattern in policy.invalidate_on:
            expanded = expand(pattern, self.variables)
            for match in glob.glob(expanded, root_dir=workdir, recursive=True):
                path = _resolve(match, workdir)
                if path == output:
                    continue
                try:
                    status = path.stat()
                except OSError:
                    continue  # vanished between glob and stat: the next look sees the change
                if path.is_file():
                    seen.add((str(path), status.st_mtime_ns, status.st_size))
        return tuple(sorted(seen))

    def _run(
        self,
        source: ComputedFileSource,
        workdir: Path,
        run_id: str,
        channel: str,
        thread_ts: str,
    ) -> None:
        generator = source.generator
        command = [expand(argument, self.variables) for argument in generator.command]
        env = {
            **os.environ,
            "CHANCTX_RUN_ID": run_id,
            "CHANCTX_AGENT_HOME": str(self.home),
            "CHANCTX_CWD": str(self.cwd),
            "CHANCTX_CHANNEL": channel,
            "CHANCTX_THREAD_TS": thread_ts,
        }
        try:
            # A new session makes the command a process-group leader, so a timeout kills what it
            # spawned too (a shell script's children would otherwise hold the stderr pipe open).
            process = subprocess.Popen(
                command,
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            reason = error.strerror or str(error)
            raise _Failed(f"could not start {command[0]!r}: {reason}", f"cwd: {workdir}") from None
        try:
            _, stderr = process.communicate(timeout=generator.timeout_ms / 1000)
        except subprocess.TimeoutExpired:
            stderr = _kill(process)
            raise _Failed(
                f"command timed out after {generator.timeout_ms} ms and was killed" + _tail(stderr)
            ) from None
        if process.returncode != 0:
            status = process.returncode
            how = (
                f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
            )
            raise _Failed(f"command {how}" + _tail(stderr))


def _kill(process: subprocess.Popen[bytes]) -> bytes:
    """Kill the command's process group; return what it wrote to stderr."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()  # already gone, or not a group leader
    try:
        _, stderr = process.communicate(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        # Something outside the group still holds the pipe: stop reading, reap the child.
        if process.stderr is not None:
            process.stderr.close()
        process.wait()
        return b""
    return stderr


def _tail(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    if not text:
        return ""
    if len(text) > STDERR_TAIL_CHARS:
        text = "..." + text[-STDERR_TAIL_CHARS:]
    return f"; stderr: {text}"


def _scope_key(policy: ComputedCache | None, channel: str, thread_ts: str) -> str:
    if policy is None or policy.scope == "global":
        return ""
    if policy.scope == "channel":
        return channel
    return f"{channel}/{thread_ts}"


def _resolve(value: str, base: Path) -> Path:
    path = Path(value)
    return path if path.is_absolute() else base / path


def _read(path: Path, template: str, *, after_run: bool = False) -> str:
    """The file's text (undecodable bytes replaced), or _Failed saying why not."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        if after_run:
            raise _Failed(
                f"command exited 0 but did not write {template}", f"path: {path}"
            ) from None
        raise _Failed(f"{template} not found", f"path: {path}") from None
    except OSError as error:
        raise _Failed(
            f"{template} cannot be read: {error.strerror or error}", f"path: {path}"
        ) from None
