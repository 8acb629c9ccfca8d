"""The context recipe, I/O side: loading context.yaml, reading files, running and caching commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from chanctx.bot.core.recipe_runner import RecipeRunner, load_recipe
from chanctx.context import (
    ChannelSnapshotSource,
    ComputedCache,
    ComputedFileSource,
    FileSource,
    Fitted,
    Generator,
    JournalSource,
    Recipe,
    RecipeError,
    ThreadContextSource,
    default_recipe,
)

from tests.support.paths import ROOT


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def assemble(runner: RecipeRunner, channel: str = "C1", thread_ts: str = "1.000100") -> Fitted:
    return runner.assemble(run_id="run-1", channel=channel, thread_ts=thread_ts)


def texts(runner: RecipeRunner, **where: str) -> list[str]:
    return [block.text for block in assemble(runner, **where).blocks]


# A generator: appends a line to runs.log (so tests count runs), then writes its output, built from
# its argument, its environment, and the files under inputs/.
GENERATOR = """
import os, pathlib, sys
out = pathlib.Path(sys.argv[1])
with open(os.environ["CHANCTX_CWD"] + "/runs.log", "a") as log:
    log.write("run\\n")
out.write_text("Output for " + os.environ["CHANCTX_CHANNEL"] + ".")
"""


def computed(
    code: str = GENERATOR,
    *args: str,
    output: str = "out.md",
    on_missing: str = "error",
    timeout_ms: int = 30_000,
    cache: ComputedCache | None = None,
    cwd: str | None = None,
    command: tuple[str, ...] | None = None,
) -> ComputedFileSource:
    return ComputedFileSource(
        id="gen",
        generator=Generator(
            command=command or (sys.executable, "-c", code, *(args or (output,))),
            timeout_ms=timeout_ms,
            cwd=cwd,
        ),
        output_path=output,
        on_missing=on_missing,  # type: ignore[arg-type]
        cache=cache,
    )


def runner_for(home: Path, cwd: Path, *sources: object, clock: object = None) -> RecipeRunner:
    recipe = Recipe(sources=sources)  # type: ignore[arg-type]
    if clock is None:
        return RecipeRunner(recipe, home=home, cwd=cwd)
    return RecipeRunner(recipe, home=home, cwd=cwd, clock=clock)  # type: ignore[arg-type]


def runs(cwd: Path) -> int:
    log = cwd / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


# --- load_recipe ---------------------------------------------------------------------------------


def test_no_context_yaml_means_the_default_recipe(home: Path) -> None:
    assert load_recipe(home) == default_recipe()


def test_context_yaml_is_loaded(home: Path) -> None:
    (home / "context.yaml").write_text("sources:\n  - type: journal\n    max_iterations: 3\n")
    assert load_recipe(home) == Recipe(sources=(JournalSource(max_iterations=3),))


def test_an_invalid_context_yaml_names_its_path_index_and_field(home: Path) -> None:
    (home / "context.yaml").write_text(
        "sources:\n  - type: file\n    path: a.md\n  - type: file\n    path: b.md\n"
        "    max_tokens: -3\n"
    )
    with pytest.raises(RecipeError) as caught:
        load_recipe(home)
    assert str(caught.value) == (
        f"{home / 'context.yaml'}: sources[1].max_tokens: must be a positive integer, got -3 "
        "(line 6)"
    )


def test_an_unreadable_context_yaml_is_an_error(home: Path) -> None:
    (home / "context.yaml").mkdir()
    with pytest.raises(RecipeError, match=re.escape(f"{home / 'context.yaml'}: cannot be read")):
        load_recipe(home)


# --- file sources --------------------------------------------------------------------------------


def test_default_recipe_reads_the_prompt_and_the_project_guide(home: Path, cwd: Path) -> None:
    (home / "system_prompt.md").write_text("Answer briefly.")
    (cwd / "CHANCTX.md").write_text("This repo deploys with make.")
    fitted = assemble(RecipeRunner(default_recipe(), home=home, cwd=cwd))
    assert [(b.name, b.text) for b in fitted.blocks] == [
        ("system_prompt", "Answer briefly."),
        ("project_guide", "This repo deploys with make."),
    ]
    assert (fitted.snapshot_budget, fitted.thread_budget, fitted.journal_max_iterations) == (
        1500,
        8000,
        None,
    )
    assert fitted.notes == ()


def test_default_recipe_skips_missing_files_with_notes(home: Path, cwd: Path) -> None:
    fitted = assemble(RecipeRunner(default_recipe(), home=home, cwd=cwd))
    assert fitted.blocks == ()
    assert fitted.notes == (
        "sources[0] file 'system_prompt': skipped (on_missing: skip): "
        "${AGENT_HOME}/system_prompt.md not found",
        "sources[1] file 'project_guide': skipped (on_missing: skip): ${CWD}/CHANCTX.md not found",
    )


def test_file_paths_expand_variables_and_relative_paths_are_under_home(
    home: Path, cwd: Path
) -> None:
    (home / "relative.md").write_text("From home.")
    (cwd / "guide.md").write_text("From cwd.")
    (home / "deep").mkdir()
    (home / "deep" / "x.md").write_text("Deep.")
    runner = runner_for(
        home,
        cwd,
        FileSource(path="relative.md"),
        FileSource(path="${CWD}/guide.md"),
        FileSource(path="${AGENT_HOME}/deep/x.md"),
        FileSource(path=str(cwd / "guide.md"), id="absolute"),
    )
    assert texts(runner) == ["From home.", "From cwd.", "Deep.", "From cwd."]


def test_a_missing_file_with_on_missing_error_names_the_source(home: Path, cwd: Path) -> None:
    runner = runner_for(
        home, cwd, FileSource(path="a.md", on_missing="skip"), FileSource(path="${CWD}/gone.md")
    )
    with pytest.raises(RecipeError) as caught:
        assemble(runner)
    assert str(caught.value) == (
        f"{home / 'context.yaml'}: sources[1] file 'gone.md': ${{CWD}}/gone.md not found "
        f"(path: {cwd / 'gone.md'})"
    )


def test_undecodable_bytes_are_replaced_not_fatal(home: Path, cwd: Path) -> None:
    (home / "a.md").write_bytes(b"caf\xe9 ok.")
    assert texts(runner_for(home, cwd, FileSource(path="a.md"))) == ["caf\ufffd ok."]


def test_max_tokens_cuts_a_file_at_a_sentence_boundary(home: Path, cwd: Path) -> None:
    (home / "long.md").write_text("Keep this sentence. " + "Drop the rest of it. " * 200)
    fitted = assemble(runner_for(home, cwd, FileSource(path="long.md", max_tokens=20)))
    [block] = fitted.blocks
    assert block.text.startswith("Keep this sentence.") and block.text.endswith(". ...")
    assert block.truncated and block.tokens <= 20
    assert "max_tokens 20" in fitted.notes[0]


# --- computed_file sources -----------------------------------------------------------------------


def test_a_computed_file_runs_in_cwd_with_the_documented_environment(home: Path, cwd: Path) -> None:
    code = (
        "import json, os, sys; "
        "names = ['CHANCTX_RUN_ID', 'CHANCTX_AGENT_HOME', 'CHANCTX_CWD', 'CHANCTX_CHANNEL', "
        "'CHANCTX_THREAD_TS']; "
        "env = {name: os.environ[name] for name in names}; env['pwd'] = os.getcwd(); "
        "env['argv'] = sys.argv[1:]; open(sys.argv[1], 'w').write(json.dumps(env))"
    )
    source = ComputedFileSource(
        generator=Generator(
            command=(sys.executable, "-c", code, "${CWD}/env.json", "${AGENT_HOME}")
        ),
        output_path="env.json",
    )
    runner = RecipeRunner(Recipe(sources=(source,)), home=home, cwd=cwd)
    fitted = runner.assemble(run_id="r-42", channel="C0123", thread_ts="1781020800.000100")
    [block] = fitted.blocks
    assert block.name == "env.json"
    assert json.loads(block.text) == {
        "CHANCTX_RUN_ID": "r-42",
        "CHANCTX_AGENT_HOME": str(home),
        "CHANCTX_CWD": str(cwd),
        "CHANCTX_CHANNEL": "C0123",
        "CHANCTX_THREAD_TS": "1781020800.000100",
        "pwd": str(cwd),
        "argv": [str(cwd / "env.json"), str(home)],
    }


def test_generator_cwd_is_relative_to_cwd_and_paths_are_seen_from_it(home: Path, cwd: Path) -> None:
    (cwd / "sub").mkdir()
    code = "import os; open('here.md', 'w').write(os.path.basename(os.getcwd()) + '.')"
    runner = runner_for(home, cwd, computed(code, "x", output="here.md", cwd="sub"))
    assert texts(runner) == ["sub."]
    assert (cwd / "sub" / "here.md").exists()


@pytest.mark.parametrize(
    ("code", "happened"),
    [
        (
            "import sys; sys.stderr.write('boom: bad input\\n'); sys.exit(3)",
            "command exited with status 3; stderr: boom: bad input",
        ),
        ("pass", "command exited 0 but did not write out.md"),
    ],
)
def test_a_failing_command_with_on_missing_error_names_source_and_reason(
    home: Path, cwd: Path, code: str, happened: str
) -> None:
    runner = runner_for(
        home, cwd, FileSource(path="${AGENT_HOME}/p.md", on_missing="skip"), computed(code)
    )
    with pytest.raises(RecipeError) as caught:
        assemble(runner)
    message = str(caught.value)
    assert message.startswith(
        f"{home / 'context.yaml'}: sources[1] computed_file 'gen': {happened}"
    )


def test_a_failing_command_with_on_missing_skip_is_a_note(home: Path, cwd: Path) -> None:
    code = "import sys; sys.stderr.write('x' * 2000 + 'the real reason'); sys.exit(1)"
    runner = runner_for(home, cwd, computed(code, on_missing="skip"))
    fitted = assemble(runner)
    assert fitted.blocks == ()
    [note] = fitted.notes
    assert note.startswith(
        "sources[0] computed_file 'gen': skipped (on_missing: skip): command exited with status 1; "
        "stderr: ..."
    )
    assert note.endswith("the real reason") and len(note) < 700  # only the tail is quoted


def test_a_command_that_cannot_start_is_reported(home: Path, cwd: Path) -> None:
    source = ComputedFileSource(
        id="gen",
        generator=Generator(command=(str(home / "no-such-program"),)),
        output_path="o.md",
    )
    with pytest.raises(RecipeError, match=r"sources\[0\] computed_file 'gen': could not start"):
        assemble(runner_for(home, cwd, source))


# A shell, not Python: it writes "started" within milliseconds even on a loaded machine (an
# interpreter's start can take longer than the timeout there). Its child ``sleep`` holds stderr:
# killing only the direct child would leave the pipe open.
SLEEPER = ("/bin/sh", "-c", 'echo started >&2; sleep 60; echo "too late" > "$1"', "sh", "out.md")


def test_a_command_past_its_timeout_is_killed_and_reported(home: Path, cwd: Path) -> None:
    runner = runner_for(home, cwd, computed(command=SLEEPER, timeout_ms=300))
    with pytest.raises(RecipeError) as caught:
        assemble(runner)
    assert str(caught.value) == (
        f"{home / 'context.yaml'}: sources[0] computed_file 'gen': command timed out after 300 ms "
        "and was killed; stderr: started"
    )
    assert not (cwd / "out.md").exists()


def test_a_timeout_with_on_missing_skip_is_a_note(home: Path, cwd: Path) -> None:
    runner = runner_for(
        home,
        cwd,
        computed(command=SLEEPER, timeout_ms=300, on_missing="skip"),
        ThreadContextSource(),
    )
    fitted = assemble(runner)
    assert fitted.blocks == () and fitted.thread_budget == 8000
    assert fitted.notes == (
        "sources[0] computed_file 'gen': skipped (on_missing: skip): command timed out after "
        "300 ms and was killed; stderr: started",
    )


# --- caching -------------------------------------------------------------------------------------


def test_without_cache_the_command_runs_every_time(home: Path, cwd: Path) -> None:
    runner = runner_for(home, cwd, computed())
    assemble(runner)
    assemble(runner)
    assert runs(cwd) == 2


def test_a_cached_output_is_reused(home: Path, cwd: Path) -> None:
    runner = runner_for(home, cwd, computed(cache=ComputedCache()))
    assert texts(runner) == ["Output for C1."]
    (cwd / "out.md").write_text("changed behind our back")  # the cache holds the text itself
    assert texts(runner) == ["Output for C1."]
    assert runs(cwd) == 1


def test_a_change_to_a_file_matching_invalidate_on_reruns_the_command(
    home: Path, cwd: Path
) -> None:
    (cwd / "src").mkdir()
    watched = cwd / "src" / "app.py"
    watched.write_text("v1")
    (cwd / "notes.txt").write_text("not watched")
    cache = ComputedCache(invalidate_on=("src/**/*.py", "out.md"))
    runner = runner_for(home, cwd, computed(cache=cache))
    assemble(runner)
    assemble(runner)
    assert runs(cwd) == 1  # the output matches a glob too, but never counts

    (cwd / "notes.txt").write_text("edited, but not watched")
    assemble(runner)
    assert runs(cwd) == 1

    watched.write_text("v2, longer")  # size changes
    assemble(runner)
    assert runs(cwd) == 2

    stat = watched.stat()
    os.utime(watched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touched only
    assemble(runner)
    assert runs(cwd) == 3

    (cwd / "src" / "pkg").mkdir()
    (cwd / "src" / "pkg" / "new.py").write_text("")  # a new matching file
    assemble(runner)
    assemble(runner)
    assert runs(cwd) == 4


def test_invalidate_on_expands_variables(home: Path, cwd: Path) -> None:
    (home / "runbooks").mkdir()
    runbook = home / "runbooks" / "db.md"
    runbook.write_text("one")
    cache = ComputedCache(invalidate_on=("${AGENT_HOME}/runbooks/*.md",))
    runner = runner_for(home, cwd, computed(cache=cache))
    assemble(runner)
    assemble(runner)
    runbook.write_text("one and two")
    assemble(runner)
    assert runs(cwd) == 2


def test_the_ttl_expires_by_the_injected_clock(home: Path, cwd: Path) -> None:
    now = [1000.0]
    runner = runner_for(
        home, cwd, computed(cache=ComputedCache(ttl_seconds=60)), clock=lambda: now[0]
    )
    assemble(runner)
    now[0] += 59.5
    assemble(runner)
    assert runs(cwd) == 1
    now[0] += 0.5  # 60 s after the run started
    assemble(runner)
    assert runs(cwd) == 2
    now[0] += 30
    assemble(runner)
    assert runs(cwd) == 2


@pytest.mark.parametrize(
    ("scope", "expected_runs"),
    [("global", 1), ("channel", 2), ("thread", 3)],
)
def test_cache_scope(home: Path, cwd: Path, scope: str, expected_runs: int) -> None:
    runner = runner_for(home, cwd, computed(cache=ComputedCache(scope=scope)))  # type: ignore[arg-type]
    first = texts(runner, channel="C1", thread_ts="1.1")
    texts(runner, channel="C1", thread_ts="1.1")
    texts(runner, channel="C1", thread_ts="2.2")
    other = texts(runner, channel="C2", thread_ts="1.1")
    assert runs(cwd) == expected_runs
    assert first == ["Output for C1."]
    # Only a global cache may serve one channel's output in another.
    assert other == (["Output for C1."] if scope == "global" else ["Output for C2."])


def test_a_failed_run_is_not_cached(home: Path, cwd: Path) -> None:
    code = (
        "import os, sys; open(os.environ['CHANCTX_CWD'] + '/runs.log', 'a').write('run\\n'); "
        "flag = os.environ['CHANCTX_CWD'] + '/ok'; "
        "sys.exit(0 if os.path.exists(flag) and open(sys.argv[1], 'w').write('Fine.') else 1)"
    )
    runner = runner_for(home, cwd, computed(code, on_missing="skip", cache=ComputedCache()))
    assert texts(runner) == []
    (cwd / "ok").write_text("")
    assert texts(runner) == ["Fine."]
    assert texts(runner) == ["Fine."]
    assert runs(cwd) == 2


# --- the documented example ----------------------------------------------------------------------

DOCS = (ROOT / "docs" / "recipe.md").read_text()

EXPECTED_EXAMPLE = Recipe(
    total_max_tokens=12000,
    sources=(
        FileSource(id="system_prompt", path="${AGENT_HOME}/system_prompt.md"),
        FileSource(
            id="project_guide", path="${CWD}/CHANCTX.md", on_missing="skip", max_tokens=2000
        ),
        ComputedFileSource(
            id="runbook_digest",
            generator=Generator(
                command=(
                    "python3",
                    "${AGENT_HOME}/tools/runbook_digest.py",
                    "--max-words",
                    "300",
                ),
                timeout_ms=10000,
            ),
            output_path="${AGENT_HOME}/.chanctx/runbook_digest.md",
            on_missing="skip",
            max_tokens=1000,
            cache=ComputedCache(
                invalidate_on=("${AGENT_HOME}/runbooks/**/*.md",), ttl_seconds=3600, scope="global"
            ),
        ),
        ChannelSnapshotSource(budget_tokens=1500, window=20),
        ThreadContextSource(budget_tokens=8000),
        JournalSource(max_iterations=30),
    ),
)

DIGEST_TOOL = """
import argparse, os, pathlib
parser = argparse.ArgumentParser()
parser.add_argument("--max-words", type=int)
limit = parser.parse_args().max_words
home = pathlib.Path(os.environ["CHANCTX_AGENT_HOME"])
with open(home / "digest-runs.log", "a") as log:
    log.write("run\\n")
words = []
for runbook in sorted((home / "runbooks").rglob("*.md")):
    words += runbook.read_text().split()
out = home / ".chanctx" / "runbook_digest.md"
out.parent.mkdir(exist_ok=True)
out.write_text(" ".join(words[:limit]))
"""


def yaml_blocks(markdown: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", markdown, re.S)


def test_the_documented_example_is_the_recipe_the_docs_describe(home: Path) -> None:
    example = yaml_blocks(DOCS)[0]
    assert DOCS.startswith("# The context recipe: `context.yaml`\n\n```yaml\n" + example)
    (home / "context.yaml").write_text(example)
    assert load_recipe(home) == EXPECTED_EXAMPLE


def test_the_documented_default_recipe_is_the_default(home: Path) -> None:
    default_yaml = next(
        block for block in yaml_blocks(DOCS) if "CHANCTX.md" in block and "total" not in block
    )
    (home / "context.yaml").write_text(default_yaml)
    assert load_recipe(home) == default_recipe()


def test_the_documented_example_runs_end_to_end(home: Path, cwd: Path) -> None:
    # The documented example runs `python3` from PATH, as an operator's machine has it.
    assert shutil.which("python3"), "python3 must be on PATH (the recipe example runs it)"
    (home / "context.yaml").write_text(yaml_blocks(DOCS)[0])
    (home / "system_prompt.md").write_text("You answer for the ops team.")
    (home / "tools").mkdir()
    (home / "tools" / "runbook_digest.py").write_text(DIGEST_TOOL)
    (home / "runbooks" / "db").mkdir(parents=True)
    runbook = home / "runbooks" / "db" / "failover.md"
    runbook.write_text("Promote the replica. Then repoint the app.")
    runner = RecipeRunner(load_recipe(home), home=home, cwd=cwd)

    fitted = assemble(runner)
    assert [(b.name, b.text) for b in fitted.blocks] == [
        ("system_prompt", "You answer for the ops team."),
        ("runbook_digest", "Promote the replica. Then repoint the app."),
    ]
    assert fitted.notes == (
        "sources[1] file 'project_guide': skipped (on_missing: skip): ${CWD}/CHANCTX.md not found",
    )
    assert (fitted.snapshot_budget, fitted.snapshot_window, fitted.thread_budget) == (
        1500,
        20,
        8000,
    )
    assert fitted.journal_max_iterations == 30
    assert fitted.used_tokens <= 12000

    assemble(runner, channel="C2")  # scope: global -- shared across channels
    runbook.write_text("Promote the replica. Then repoint the app. Then page the DBA.")
    assert texts(runner)[1].endswith("Then page the DBA.")
    assert (home / "digest-runs.log").read_text().count("run") == 2
