"""The context recipe, pure side: models, validation messages, variables, defaults, budgets."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from chanctx.context import (
    ChannelSnapshotSource,
    ComputedCache,
    ComputedFileSource,
    FileSource,
    Fitted,
    Generator,
    JournalSource,
    PlaybookSource,
    Recipe,
    RecipeError,
    SourceContent,
    ThreadContextSource,
    default_counter,
    default_recipe,
    expand,
    fit_sources,
    parse_recipe,
)
from chanctx.context.recipe import Source, TextSource
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.strategies import chat_text


class CharCounter:
    """One token per character: makes budget arithmetic in the tests obvious."""

    def count(self, text: str) -> int:
        return len(text)


CHARS = CharCounter()


def contents_for(recipe: Recipe, *texts: str | None) -> list[SourceContent]:
    assert len(texts) == len(recipe.text_sources())
    return [SourceContent(text) for text in texts]


# --- parsing every source type -------------------------------------------------------------------

EVERY_TYPE = """
total_max_tokens: 12000
sources:
  - type: file
    id: prompt
    path: "${AGENT_HOME}/system_prompt.md"
    on_missing: skip
    max_tokens: 500
  - type: computed_file
    id: summary
    generator:
      command: ["python3", "${AGENT_HOME}/tools/summarize.py", "--out", "${CWD}/s.md"]
      timeout_ms: 5000
      cwd: "${CWD}/work"
    output_path: "${CWD}/s.md"
    max_tokens: 2000
    cache:
      invalidate_on: ["src/**/*.py", "${AGENT_HOME}/notes/*.md"]
      ttl_seconds: 90
      scope: thread
  - type: channel_snapshot
    budget_tokens: 1200
    window: 10
  - type: thread_context
    budget_tokens: 6000
  - type: journal
    max_iterations: 15
"""


def test_every_source_type_and_field_parses() -> None:
    recipe = parse_recipe(EVERY_TYPE)
    assert recipe == Recipe(
        total_max_tokens=12000,
        sources=(
            FileSource(
                id="prompt",
                path="${AGENT_HOME}/system_prompt.md",
                on_missing="skip",
                max_tokens=500,
            ),
            ComputedFileSource(
                id="summary",
                generator=Generator(
                    command=("python3", "${AGENT_HOME}/tools/summarize.py", "--out", "${CWD}/s.md"),
                    timeout_ms=5000,
                    cwd="${CWD}/work",
                ),
                output_path="${CWD}/s.md",
                max_tokens=2000,
                cache=ComputedCache(
                    invalidate_on=("src/**/*.py", "${AGENT_HOME}/notes/*.md"),
                    ttl_seconds=90.0,
                    scope="thread",
                ),
            ),
            ChannelSnapshotSource(budget_tokens=1200, window=10),
            ThreadContextSource(budget_tokens=6000),
            JournalSource(max_iterations=15),
        ),
    )
    assert [index for index, _ in recipe.text_sources()] == [0, 1]


def test_defaults_of_every_source_type() -> None:
    recipe = parse_recipe(
        """
sources:
  - {type: file, path: a.md}
  - {type: computed_file, generator: {command: [gen]}, output_path: out.md, cache: {}}
  - {type: channel_snapshot}
  - {type: thread_context}
  - {type: journal}
"""
    )
    file, computed, snapshot, thread, journal = recipe.sources
    assert isinstance(file, FileSource)
    assert (file.on_missing, file.max_tokens, file.id) == ("error", None, None)
    assert isinstance(computed, ComputedFileSource)
    assert computed.generator.timeout_ms == 30000
    assert computed.generator.cwd is None
    assert computed.on_missing == "error"
    assert computed.cache == ComputedCache(invalidate_on=(), ttl_seconds=None, scope="channel")
    assert snapshot == ChannelSnapshotSource(budget_tokens=1500, window=20)
    assert thread == ThreadContextSource(budget_tokens=8000)
    assert journal == JournalSource(max_iterations=None)
    assert recipe.total_max_tokens is None


def test_default_recipe_is_todays_behaviour() -> None:
    recipe = default_recipe()
    assert recipe.sources == (
        FileSource(id="system_prompt", path="${AGENT_HOME}/system_prompt.md", on_missing="skip"),
        FileSource(id="project_guide", path="${CWD}/CHANCTX.md", on_missing="skip"),
        PlaybookSource(budget_tokens=1500),  # the channel's playbook, on by default
        ChannelSnapshotSource(budget_tokens=1500, window=20),
        ThreadContextSource(budget_tokens=8000),
        JournalSource(),
    )
    assert recipe.total_max_tokens is None
    fitted = fit_sources(recipe, [SourceContent(None), SourceContent(None)])
    assert fitted.blocks == ()
    assert (fitted.snapshot_budget, fitted.snapshot_window, fitted.thread_budget) == (
        1500,
        20,
        8000,
    )
    assert fitted.journal_max_iterations is None


# --- validation messages: index and field named --------------------------------------------------


def error_of(text: str, origin: str = "context.yaml") -> RecipeError:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, origin=origin)
    return caught.value


BAD_TIMEOUT = """sources:
  - type: file
    path: a.md
  - type: journal
  - type: computed_file
    generator:
      command: [python3, x.py]
      timeout_ms: -5
    output_path: out.md
"""


def test_bad_timeout_names_index_field_value_and_line() -> None:
    assert str(error_of(BAD_TIMEOUT)) == (
        "context.yaml: sources[2].generator.timeout_ms: must be a positive integer, got -5 (line 8)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "sources:\n  - {type: file, path: a}\n  - type: jornal\n",
            "context.yaml: sources[1].type: unknown source type 'jornal' (expected one of: file, "
            "computed_file, journal, channel_snapshot, thread_context, playbook) (line 3)",
        ),
        (
            "sources:\n  - type: file\n    path: a: b\n",
            "context.yaml:3:12: invalid YAML: mapping values are not allowed here",
        ),
        (
            "sources:\n  - type: file\n    path: [a\n",
            "context.yaml:4:1: invalid YAML: expected ',' or ']', but got '<stream end>'",
        ),
        (
            "sources:\n  - type: file\n    path: x\n    path: y\n",
            "context.yaml:4:5: invalid YAML: duplicate key 'path' (first given on line 3)",
        ),
        (
            "sources:\n  - type: channel_snapshot\n  - {type: file, path: x}\n"
            "  - type: channel_snapshot\n",
            "context.yaml: sources[2]: duplicate channel_snapshot source (sources[0] is one "
            "already; a recipe has at most one) (line 4)",
        ),
        (
            "sources:\n  - type: thread_context\n  - type: thread_context\n",
            "context.yaml: sources[1]: duplicate thread_context source (sources[0] is one "
            "already; a recipe has at most one) (line 3)",
        ),
        (
            "sources:\n  - type: journal\n  - type: journal\n    max_iterations: 3\n",
            "context.yaml: sources[1]: duplicate journal source (sources[0] is one already; a "
            "recipe has at most one) (line 3)",
        ),
        (
            "sources:\n  - {type: file, path: a, id: x}\n  - {type: journal, id: x}\n",
            "context.yaml: sources[1].id: duplicate id 'x' (sources[0] has it already) (line 3)",
        ),
        ("total_max_tokens: 5\n", "context.yaml: sources: required field missing (line 1)"),
        ("sources:\n", "context.yaml: sources: must be a list of sources, got null (line 1)"),
        (
            "sources: []\n",
            "context.yaml: sources: must list at least one source, got a list (line 1)",
        ),
        ("", "context.yaml: is empty; a recipe is a mapping with a 'sources' list"),
        (
            "- type: file\n",
            "context.yaml: must be a mapping with a 'sources' list, got a list (line 1)",
        ),
        (
            "sources:\n  - type: file\n    path: ${HOME}/x.md\n",
            "context.yaml: sources[0].path: unknown variable ${HOME} (known: ${AGENT_HOME}, ${CWD}) "
            "(line 3)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator: {command: [python3, x.py]}\n"
            "    output_path: ${WORKSPACE}/o.md\n",
            "context.yaml: sources[0].output_path: unknown variable ${WORKSPACE} (known: "
            "${AGENT_HOME}, ${CWD}) (line 4)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator: {command: [gen, '${X}']}\n"
            "    output_path: o.md\n",
            "context.yaml: sources[0].generator.command[1]: unknown variable ${X} (known: "
            "${AGENT_HOME}, ${CWD}) (line 3)",
        ),
        (
            "sources:\n  - type: file\n    path: a.md\n    on_missing: ignore\n",
            "context.yaml: sources[0].on_missing: must be 'skip' or 'error', got 'ignore' (line 4)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator:\n      command: python3 x.py\n"
            "    output_path: o.md\n",
            "context.yaml: sources[0].generator.command: must be a list: the program, then each "
            "argument (no shell is used), got 'python3 x.py' (line 4)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator:\n      command: []\n"
            "    output_path: o.md\n",
            "context.yaml: sources[0].generator.command: must be a non-empty list: the program, "
            "then its arguments, got a list (line 4)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator:\n      command: [sleep, 5]\n"
            "    output_path: o.md\n",
            "context.yaml: sources[0].generator.command[1]: must be a string (quote numbers in "
            "YAML), got 5 (line 4)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator: {command: [gen]}\n",
            "context.yaml: sources[0].output_path: required field missing (line 2)",
        ),
        (
            "sources:\n  - type: computed_file\n    output_path: o.md\n",
            "context.yaml: sources[0].generator: required field missing (line 2)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator: {command: [gen], timeout: 5}\n"
            "    output_path: o.md\n",
            "context.yaml: sources[0].generator.timeout: unknown field (did you mean "
            "'timeout_ms'? expected one of: command, timeout_ms, cwd) (line 3)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator: {command: [gen]}\n"
            "    output_path: o.md\n    cache: {invalidate_on: 'src/*.py', ttl_seconds: 0}\n",
            "context.yaml: sources[0].cache.invalidate_on: must be a list of strings, got "
            "'src/*.py' (line 5)\n"
            "context.yaml: sources[0].cache.ttl_seconds: must be a positive number, got 0 (line 5)",
        ),
        (
            "sources:\n  - type: computed_file\n    generator: {command: [gen]}\n"
            "    output_path: o.md\n    cache: {scope: user}\n",
            "context.yaml: sources[0].cache.scope: must be 'global', 'channel' or 'thread', got "
            "'user' (line 5)",
        ),
        (
            "sources:\n  - path: a.md\n",
            "context.yaml: sources[0].type: required field missing (expected one of: file, "
            "computed_file, journal, channel_snapshot, thread_context, playbook) (line 2)",
        ),
        (
            "sources:\n  - file\n",
            "context.yaml: sources[0]: must be a mapping with a 'type' field, got 'file' (line 2)",
        ),
        (
            "sources:\n  - type: thread_context\n    budget_tokens: true\n",
            "context.yaml: sources[0].budget_tokens: must be a positive integer, got true (line 3)",
        ),
        (
            "sources:\n  - type: channel_snapshot\n    window: -1\n",
            "context.yaml: sources[0].window: must be a non-negative integer, got -1 (line 3)",
        ),
        (
            "sources:\n  - type: journal\n    max_iterations: 2.5\n",
            "context.yaml: sources[0].max_iterations: must be a positive integer, got 2.5 (line 3)",
        ),
        (
            "sources:\n  - type: journal\n    max_tokens: 100\n",
            "context.yaml: sources[0].max_tokens: unknown field (expected one of: type, id, "
            "max_iterations) (line 3)",
        ),
        (
            "sources: [{type: journal}]\ntotal_max_token: 9000\n",
            "context.yaml: total_max_token: unknown field (did you mean 'total_max_tokens'? "
            "expected one of: sources, total_max_tokens) (line 2)",
        ),
        (
            "sources: [{type: journal}]\ntotal_max_tokens: '9000'\n",
            "context.yaml: total_max_tokens: must be a positive integer, got '9000' (line 2)",
        ),
    ],
)
def test_error_messages(text: str, expected: str) -> None:
    assert str(error_of(text)) == expected


def test_every_problem_is_reported_with_its_own_line() -> None:
    text = "sources:\n  - type: file\n    pth: a.md\n  - type: jornal\n  - type: snapshot\n"
    error = error_of(text, origin="/srv/bot/context.yaml")
    assert error.problems == (
        "/srv/bot/context.yaml: sources[0].path: required field missing (line 2)",
        "/srv/bot/context.yaml: sources[0].pth: unknown field (did you mean 'path'? expected one "
        "of: type, id, path, on_missing, max_tokens, pinned) (line 3)",
        "/srv/bot/context.yaml: sources[1].type: unknown source type 'jornal' (expected one of: "
        "file, computed_file, journal, channel_snapshot, thread_context, playbook) (line 4)",
        "/srv/bot/context.yaml: sources[2].type: unknown source type 'snapshot' (expected one of: "
        "file, computed_file, journal, channel_snapshot, thread_context, playbook) (line 5)",
    )
    assert str(error) == "\n".join(error.problems)
    assert isinstance(error, ValueError)  # RecipeError is a ChanctxError and a ValueError


def test_models_validate_when_built_in_python_too() -> None:
    with pytest.raises(ValueError, match="must be a positive integer, got 0"):
        FileSource(path="a.md", max_tokens=0)
    with pytest.raises(ValueError, match=re.escape("unknown variable ${NOPE}")):
        FileSource(path="${NOPE}/a.md")


# --- variables -----------------------------------------------------------------------------------

VARIABLES = {"AGENT_HOME": "/srv/bot", "CWD": "/work/repo"}


def test_expand_replaces_known_variables() -> None:
    assert expand("${AGENT_HOME}/tools/x.py", VARIABLES) == "/srv/bot/tools/x.py"
    assert expand("${CWD}:${CWD}", VARIABLES) == "/work/repo:/work/repo"
    # No shell: $NAME and ~ are plain text, and so is an unterminated ${.
    assert expand("$CWD ~/x ${CWD", VARIABLES) == "$CWD ~/x ${CWD"


def test_expand_names_an_unknown_variable() -> None:
    with pytest.raises(RecipeError, match=re.escape("unknown variable ${HOME}")):
        expand("${HOME}/x", VARIABLES)


@given(st.text().filter(lambda text: "${" not in text))
def test_expand_leaves_text_without_variables_alone(text: str) -> None:
    assert expand(text, VARIABLES) == text


# --- round trip ----------------------------------------------------------------------------------

_names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
_paths = st.sampled_from(["a.md", "${AGENT_HOME}/p.md", "${CWD}/docs/g.md", "/etc/motd"])
_limits = st.none() | st.integers(1, 50_000)
_file_sources = st.builds(
    FileSource,
    path=_paths,
    on_missing=st.sampled_from(["skip", "error"]),
    max_tokens=_limits,
)
_computed_sources = st.builds(
    ComputedFileSource,
    generator=st.builds(
        Generator,
        command=st.lists(st.sampled_from(["gen", "${CWD}", "-x", "", "5"]), min_size=1).map(tuple),
        timeout_ms=st.integers(1, 10**6),
        cwd=st.none() | _paths,
    ),
    output_path=_paths,
    on_missing=st.sampled_from(["skip", "error"]),
    max_tokens=_limits,
    cache=st.none()
    | st.builds(
        ComputedCache,
        invalidate_on=st.lists(st.sampled_from(["src/**/*.py", "${CWD}/*.md"])).map(tuple),
        ttl_seconds=st.none() | st.floats(0.5, 1e6),
        scope=st.sampled_from(["global", "channel", "thread"]),
    ),
)


@st.composite
def recipes(draw: st.DrawFn) -> Recipe:
    sources: list[Source] = draw(st.lists(_file_sources | _computed_sources, max_size=5))
    if draw(st.booleans()):
        sources.append(
            ChannelSnapshotSource(
                budget_tokens=draw(st.integers(1, 20_000)), window=draw(st.integers(0, 50))
            )
        )
    if draw(st.booleans()):
        sources.append(ThreadContextSource(budget_tokens=draw(st.integers(1, 20_000))))
    if draw(st.booleans()):
        sources.append(JournalSource(max_iterations=draw(_limits)))
    if not sources:
        sources.append(JournalSource())
    ordered = draw(st.permutations(sources))
    return Recipe(sources=tuple(ordered), total_max_tokens=draw(st.none() | st.integers(1, 30_000)))


@settings(max_examples=100, deadline=None)
@given(recipes())
def test_any_recipe_round_trips_through_yaml(recipe: Recipe) -> None:
    data: dict[str, Any] = recipe.model_dump(mode="json", exclude_none=True)
    assert parse_recipe(yaml.safe_dump(data)) == recipe


# --- fitting: max_tokens -------------------------------------------------------------------------


def one_file(max_tokens: int | None = None, **extra: Any) -> Recipe:
    return Recipe(sources=(FileSource(id="guide", path="g.md", max_tokens=max_tokens, **extra),))


def test_max_tokens_cuts_at_a_sentence_boundary() -> None:
    text = "First sentence here. Second one follows! Third is long and is cut away."
    fitted = fit_sources(one_file(max_tokens=45), [SourceContent(text)], CHARS)
    [block] = fitted.blocks
    assert block.text == "First sentence here. Second one follows! ..."
    assert block.truncated and block.tokens == len(block.text) <= 45
    assert fitted.notes == (
        f"sources[0] file 'guide': cut at a sentence boundary to {block.tokens} of {len(text)} "
        "tokens (max_tokens 45)",
    )


def test_max_tokens_leaves_a_source_out_when_not_even_a_sentence_fits() -> None:
    text = "An opening sentence that is far too long for the limit. Short."
    fitted = fit_sources(one_file(max_tokens=10), [SourceContent(text)], CHARS)
    assert fitted.blocks == ()
    assert fitted.notes == (
        f"sources[0] file 'guide': dropped: not even its first sentence fits max_tokens 10 "
        f"({len(text)} tokens)",
    )


def test_text_within_max_tokens_is_sent_whole() -> None:
    fitted = fit_sources(one_file(max_tokens=100), [SourceContent("Short. Text.")], CHARS)
    assert [(b.name, b.text, b.truncated, b.source_index) for b in fitted.blocks] == [
        ("guide", "Short. Text.", False, 0)
    ]
    assert fitted.notes == ()


def test_skipped_and_empty_sources_send_nothing_and_notes_pass_through() -> None:
    recipe = Recipe(
        sources=(
            FileSource(path="${AGENT_HOME}/a.md"),
            FileSource(path="b.md"),
            FileSource(path="c.md"),
        )
    )
    fitted = fit_sources(
        recipe,
        [SourceContent(None, note="a was skipped"), SourceContent("  \n"), SourceContent("C.")],
        CHARS,
    )
    assert [(b.name, b.text) for b in fitted.blocks] == [("c.md", "C.")]
    assert fitted.notes == ("a was skipped", "sources[1] file 'b.md': empty, nothing sent")


def test_contents_must_match_the_text_sources() -> None:
    with pytest.raises(ValueError, match="1 contents for 2 text sources"):
        fit_sources(default_recipe(), [SourceContent("x")])


def test_journal_semantics() -> None:
    def journal_of(*sources: Source) -> int | None:
        return fit_sources(Recipe(sources=sources), []).journal_max_iterations

    assert journal_of(JournalSource()) is None  # all turns
    assert journal_of(JournalSource(max_iterations=7)) == 7
    assert journal_of(ThreadContextSource()) == 0  # no journal source: no earlier turns


def test_absent_snapshot_or_thread_is_not_attached() -> None:
    fitted = fit_sources(Recipe(sources=(ThreadContextSource(budget_tokens=3000),)), [])
    assert (fitted.snapshot_budget, fitted.snapshot_window, fitted.thread_budget) == (
        None,
        None,
        3000,
    )
    fitted = fit_sources(Recipe(sources=(ChannelSnapshotSource(window=5),)), [])
    assert (fitted.snapshot_budget, fitted.snapshot_window, fitted.thread_budget) == (
        1500,
        5,
        None,
    )


# --- fitting: total_max_tokens -------------------------------------------------------------------


def budget_recipe(total: int, *sources: Source) -> Recipe:
    return Recipe(sources=sources, total_max_tokens=total)


def test_snapshot_and_thread_share_what_is_left_in_proportion() -> None:
    recipe = budget_recipe(
        5000,
        FileSource(id="prompt", path="p.md"),
        ChannelSnapshotSource(budget_tokens=1500),
        JournalSource(),  # a journal between them does not separate them
        ThreadContextSource(budget_tokens=8000),
    )
    fitted = fit_sources(recipe, [SourceContent("x" * 250)], CHARS)
    assert [b.tokens for b in fitted.blocks] == [250]
    assert (fitted.snapshot_budget, fitted.thread_budget) == (750, 4000)
    assert fitted.used_tokens == 5000
    assert fitted.notes == (
        "sources[1] channel_snapshot: budget reduced from 1500 to 750 tokens to fit "
        "total_max_tokens 5000",
        "sources[3] thread_context: budget reduced from 8000 to 4000 tokens to fit "
        "total_max_tokens 5000",
    )


def test_earlier_sources_win_and_later_text_is_cut_then_dropped() -> None:
    recipe = budget_recipe(
        100,
        FileSource(id="first", path="1.md"),
        FileSource(id="second", path="2.md"),
        FileSource(id="third", path="3.md"),
        ThreadContextSource(budget_tokens=50),
    )
    first = "Pinned first. " * 4  # 56 characters
    second = "One sentence. Another sentence. A third sentence."
    fitted = fit_sources(recipe, contents_for(recipe, first, second, "Tiny."), CHARS)
    assert [(b.name, b.truncated) for b in fitted.blocks] == [("first", False), ("second", True)]
    assert fitted.blocks[0].text == first
    assert fitted.blocks[1].text == "One sentence. Another sentence. ..."  # 35 of 44 left
    assert fitted.thread_budget is None
    assert fitted.used_tokens <= 100
    assert fitted.notes == (
        "sources[1] file 'second': cut at a sentence boundary to 35 of 49 tokens to fit "
        "total_max_tokens 100",
        "sources[2] file 'third': dropped: an earlier source used up total_max_tokens 100",
        "sources[3] thread_context: dropped: an earlier source used up total_max_tokens 100",
    )


def test_a_thread_placed_first_is_served_before_text() -> None:
    recipe = budget_recipe(
        1000,
        ThreadContextSource(budget_tokens=800),
        FileSource(id="guide", path="g.md"),
    )
    fitted = fit_sources(recipe, [SourceContent("Way too long. " * 30)], CHARS)
    assert fitted.thread_budget == 800
    assert fitted.blocks[0].tokens <= 200 and fitted.blocks[0].truncated


def test_a_budget_reduced_to_nothing_is_not_attached() -> None:
    recipe = budget_recipe(
        12,
        FileSource(id="prompt", path="p.md"),
        ChannelSnapshotSource(budget_tokens=1),
        ThreadContextSource(budget_tokens=8000),
    )
    fitted = fit_sources(recipe, [SourceContent("x" * 10)], CHARS)
    assert fitted.snapshot_budget is None and fitted.snapshot_window is None
    assert fitted.thread_budget == 1
    assert "sources[1] channel_snapshot: dropped: no room left within total_max_tokens 12" in (
        fitted.notes
    )


def test_nothing_is_cut_when_everything_fits() -> None:
    recipe = budget_recipe(
        10_000,
        FileSource(path="p.md", max_tokens=3),
        ChannelSnapshotSource(),
        ThreadContextSource(),
    )
    fitted = fit_sources(recipe, [SourceContent("Hi.")], CHARS)
    assert fitted == Fitted(
        blocks=fitted.blocks,
        snapshot_budget=1500,
        snapshot_window=20,
        thread_budget=8000,
        journal_max_iterations=0,
        notes=(),
        total_max_tokens=10_000,
    )
    assert [b.text for b in fitted.blocks] == ["Hi."]


_maybe_text = st.none() | chat_text | st.text(max_size=300)


@settings(max_examples=300, deadline=None)
@given(st.data(), recipes())
def test_total_budget_holds_and_earlier_sources_come_first(
    data: st.DataObject, recipe: Recipe
) -> None:
    counter = default_counter()
    texts = [data.draw(_maybe_text) for _ in recipe.text_sources()]
    contents = [SourceContent(text) for text in texts]
    fitted = fit_sources(recipe, contents, counter)
    unbounded = fit_sources(recipe.model_copy(update={"total_max_tokens": None}), contents, counter)

    # Every block is counted honestly, in recipe order, within its own max_tokens.
    indexes = [block.source_index for block in fitted.blocks]
    assert indexes == sorted(indexes)
    for block in fitted.blocks:
        assert block.tokens == counter.count(block.text)
        # Claude's tokenizers drop control characters: only a text of nothing else costs 0.
        assert block.tokens > 0 or not any(c.isprintable() for c in block.text)
        limit = recipe.sources[block.source_index]
        assert isinstance(limit, FileSource | ComputedFileSource)
        assert limit.max_tokens is None or block.tokens <= limit.max_tokens

    total = recipe.total_max_tokens
    if total is None:
        assert fitted == unbounded
        return
    assert fitted.used_tokens <= total
    if unbounded.used_tokens <= total:
        assert fitted.blocks == unbounded.blocks
        assert fitted.snapshot_budget == unbounded.snapshot_budget
        assert fitted.thread_budget == unbounded.thread_budget
        return

    # Earlier first: each source either got all it would get without the total, or lost something;
    # once one lost something, no later source (outside its snapshot/thread pair) keeps anything.
    wanted = {block.source_index: block.text for block in unbounded.blocks}
    got = {block.source_index: block.text for block in fitted.blocks}
    budgets_wanted = _budgets(recipe, unbounded)
    budgets_got = _budgets(recipe, fitted)
    order = [i for i, s in enumerate(recipe.sources) if i in wanted or i in budgets_wanted]
    losers = [
        i
        for i in order
        if (i in wanted and got.get(i) != wanted[i])
        or (i in budgets_wanted and budgets_got.get(i) != budgets_wanted[i])
    ]
    assert losers  # it did not fit, so something gave way
    first_loser = losers[0]
    pair = _budget_pair(recipe, first_loser)
    for i in order:
        if i < first_loser:
            assert i not in losers
        elif i not in pair:
            assert i not in got and i not in budgets_got


def _budgets(recipe: Recipe, fitted: Fitted) -> dict[int, int]:
    found: dict[int, int] = {}
    for index, source in enumerate(recipe.sources):
        if isinstance(source, ChannelSnapshotSource) and fitted.snapshot_budget is not None:
            found[index] = fitted.snapshot_budget
        if isinstance(source, ThreadContextSource) and fitted.thread_budget is not None:
            found[index] = fitted.thread_budget
    return found


def _budget_pair(recipe: Recipe, index: int) -> set[int]:
    """``index`` and the budget source adjacent to it (journals between do not count)."""

    def budget(i: int) -> bool:
        return isinstance(recipe.sources[i], ChannelSnapshotSource | ThreadContextSource)

    pair = {index}
    if not budget(index):
        return pair
    for step in (-1, 1):
        i = index + step
        while 0 <= i < len(recipe.sources) and isinstance(recipe.sources[i], JournalSource):
            i += step
        if 0 <= i < len(recipe.sources) and budget(i):
            pair.add(i)
    return pair


def test_text_source_type_alias_covers_both_text_sources() -> None:
    sources: list[TextSource] = [
        FileSource(path="a"),
        ComputedFileSource(generator=Generator(command=("gen",)), output_path="o"),
    ]
    assert [s.type for s in sources] == ["file", "computed_file"]
