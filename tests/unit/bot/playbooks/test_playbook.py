"""The channel playbook (seeds 002 and 004): its properties under any sequence of deltas and
votes (Hypothesis), its store across crashes (kill -9 included), and ``chanctx playbook``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.cli import main
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server.query_api import ApiKeys
from chanctx.context import default_counter
from chanctx.context.playbook import (
    Bullet,
    BulletSource,
    Delta,
    Playbook,
    Section,
    render_playbook,
)
from chanctx.manifest_store import LocalPlaybookStore
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import ROOT
from tests.support.query_server import api_server

COUNT = default_counter().count
CHANNEL = "C0OPSTEAM1"
FIXTURES = ROOT / "fixtures"
OPS_KEY, OTHER_KEY = "ops-playbook-reader-01", "another-channel-reader-1"

# The planted set: statements about distinct subjects, and rewordings of each (duplicates).
PLANTED: list[tuple[Section, str, list[str]]] = [
    ("owners", "owner:payments-api", ["Kim owns payments-api and answers its pages.",
                                      "Kim owns payments-api and answers its pages at night."]),
    ("owners", "owner:billing-api", ["Dev owns billing-api and its deploy pipeline.",
                                     "Dev owns billing-api and the deploy pipeline for it."]),
    ("conventions", "staging", ["Staging is read-only on Fridays after 14:00 UTC.",
                                "Staging is read-only on Fridays after 14:00 UTC, reminder."]),
    ("conventions", "prod deploys", ["Prod deploys need two approvals in the deploy channel.",
                                     "Prod deploys need two approvals in the deploy channel now."]),
    ("runbooks", None, ["Run payctl drain before any payments failover to us-east.",
                        "Run payctl drain before any payments failover to us-east region."]),
    ("glossary", "term:flaky test", ["The flaky test means test_checkout_timeout in payments.",
                                     "The flaky test means test_checkout_timeout in the payments suite."]),
    # Same template, no subject the rules can name: only what they name tells them apart.
    ("runbooks", None, ["To restart the thumbnailer, run `opsctl restart thumbnailer` first.",
                        "To restart the thumbnailer, run `opsctl restart thumbnailer` first, always."]),
    ("runbooks", None, ["To restart the notifier, run `opsctl restart notifier` first.",
                        "To restart the notifier, run `opsctl restart notifier` first, always."]),
    ("conventions", None, ["Never deploy billing-api on Fridays, the batch jobs run then.",
                           "Never deploy billing-api on Fridays, the batch jobs run then, remember."]),
    ("conventions", None, ["Never deploy cart-api on weekends, the batch jobs run then.",
                           "Never deploy cart-api on weekends, the batch jobs run then, remember."]),
]  # fmt: skip
SUPERSEDING = {
    "owner:payments-api": "Sam took over payments-api from Kim last week.",
    "staging": "Staging stays writable on Fridays since the freeze was lifted.",
}


def add(fact: int, wording: int, turn: int) -> Delta:
    section, subject, texts = PLANTED[fact]
    return Delta(op="ADD", section=section, content=texts[wording], subject=subject,
                 sources=(BulletSource(turn=f"{CHANNEL}:{turn}", messages=(f"{turn}.000001",)),))  # fmt: skip


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, len(PLANTED) - 1), st.integers(0, 1)),
        st.tuples(st.just("vote"), st.integers(0, 20), st.booleans()),
        st.tuples(st.just("supersede"), st.sampled_from(sorted(SUPERSEDING)), st.just(0)),
        st.tuples(st.just("refine"), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(operations=OPERATIONS, budget=st.integers(min_value=20, max_value=600))
def test_playbook_properties_hold_for_any_sequence(
    operations: list[tuple[str, object, object]], budget: int
) -> None:
    playbook = Playbook()
    seen: dict[str, tuple[int, int]] = {}  # id -> the counters it had
    first_content: dict[str, str] = {}
    fact_of_turn: dict[str, int] = {}  # the planted fact each add came from
    for number, (kind, a, b) in enumerate(operations):
        if kind == "add":
            assert isinstance(a, int) and isinstance(b, int)
            fact_of_turn[f"{CHANNEL}:{number}"] = a
            playbook.apply(add(a, b, number), now=float(number))
        elif kind == "supersede":
            subject = str(a)
            section: Section = "owners" if subject.startswith("owner:") else "conventions"
            playbook.apply(Delta(op="ADD", section=section, content=SUPERSEDING[subject],
                                 subject=subject), now=float(number))  # fmt: skip
        elif kind == "vote":
            ids = [bullet.id for bullet in playbook.bullets]
            if ids:
                assert isinstance(a, int)
                playbook.vote([ids[a % len(ids)]], helpful=bool(b), now=float(number))
        else:
            playbook.refine()
        for bullet in playbook.bullets:
            # Counters only grow (a merge sums into the survivor: still no smaller).
            before = seen.get(bullet.id, (0, 0))
            assert bullet.helpful >= before[0] and bullet.harmful >= before[1]
            seen[bullet.id] = (bullet.helpful, bullet.harmful)
            # Ids are stable: an id keeps the text it was created with, merges included.
            assert first_content.setdefault(bullet.id, bullet.content) == bullet.content
        for alias in playbook.aliases:  # an absorbed id still finds its survivor
            assert playbook.get(alias) is not None
        # Hygiene: harmful >= 2 with net utility below zero is never active.
        assert all(not (b.active and b.harmful >= 2 and b.net < 0) for b in playbook.bullets)
    chosen = playbook.select(budget, COUNT)
    # The budget is never exceeded, and no bullet is cut to fit.
    assert COUNT(render_playbook(chosen)) <= budget
    assert {b.content for b in chosen} <= {b.content for b in playbook.bullets}
    # A quarantined or superseded bullet is never sent.
    assert all(b.state in ("unverified", "verified") for b in chosen)
    # Merges never join two planted facts: every source of a bullet is one fact's.
    for bullet in playbook.bullets:
        facts = {fact_of_turn[s.turn] for s in bullet.sources if s.turn in fact_of_turn}
        assert len(facts) <= 1, (bullet, facts)


def test_select_leaves_the_least_useful_out_whole() -> None:
    playbook = Playbook()
    for fact in range(len(PLANTED)):
        playbook.apply(add(fact, 0, fact), now=float(fact))
    ids = [b.id for b in playbook.active()]
    playbook.vote([ids[0]], helpful=True, now=10.0)
    playbook.vote([ids[1]], helpful=False, now=11.0)
    everything = COUNT(render_playbook(playbook.active()))
    chosen = playbook.select(everything - 1, COUNT)
    assert ids[1] not in {b.id for b in chosen}  # the harmful one goes first
    assert ids[0] in {b.id for b in chosen}  # the confirmed one stays


def test_a_person_marking_an_answer_helpful_verifies_its_bullets() -> None:
    playbook = Playbook()
    bullet_id = playbook.apply(add(0, 0, 1), now=1.0)
    assert bullet_id is not None and playbook.get(bullet_id).state == "unverified"  # type: ignore[union-attr]
    playbook.vote([bullet_id], helpful=True, now=2.0)
    assert playbook.get(bullet_id).state == "verified"  # type: ignore[union-attr]
    assert "(unverified)" not in render_playbook(playbook.active())


# --- the store -----------------------------------------------------------------------------


def test_the_store_survives_a_restart_and_a_torn_last_line(tmp_path: Path) -> None:
    store = LocalPlaybookStore(tmp_path)
    store.apply(CHANNEL, [add(0, 0, 1), add(2, 0, 1)], now=1.0)
    store.record_use(CHANNEL, f"{CHANNEL}:5", ["owners-00001"])
    store.vote(CHANNEL, f"{CHANNEL}:5", "U1", helpful=True, now=2.0)
    store.close()
    path = tmp_path / "playbooks" / f"{CHANNEL}.jsonl"
    with path.open("a") as torn:
        torn.write('{"kind": "bullet", "bullet": {"id": "owners-0')  # a crash mid-line
    again = LocalPlaybookStore(tmp_path)
    bullets = {b.id: b for b in again.bullets(CHANNEL)}
    assert set(bullets) == {"owners-00001", "conventions-00001"}
    assert bullets["owners-00001"].state == "verified"
    # The same person's verdict again counts once, across the restart too.
    assert again.vote(CHANNEL, f"{CHANNEL}:5", "U1", helpful=True, now=3.0) == []
    again.apply(CHANNEL, [add(1, 0, 9)], now=4.0)  # written after the torn line, not glued
    again.close()
    third = LocalPlaybookStore(tmp_path)
    assert len(third.bullets(CHANNEL)) == 3
    third.close()


@pytest.mark.slow
def test_the_store_rewrites_itself_compactly_without_losing_anything(tmp_path: Path) -> None:
    store = LocalPlaybookStore(tmp_path)
    store.apply(CHANNEL, [add(0, 0, 1)], now=1.0)
    for turn in range(1_200):  # many uses and votes: the file is rewritten along the way
        store.record_use(CHANNEL, f"{CHANNEL}:{turn}", ["owners-00001"])
        store.vote(CHANNEL, f"{CHANNEL}:{turn}", "U1", helpful=True, now=float(turn))
    expected = store.bullets(CHANNEL)
    store.close()
    lines = (tmp_path / "playbooks" / f"{CHANNEL}.jsonl").read_text().splitlines()
    assert len(lines) < 3 * 2_400  # rewritten: fewer lines than were appended
    again = LocalPlaybookStore(tmp_path)
    assert again.bullets(CHANNEL) == expected and expected[0].helpful == 1_200
    again.close()


_WRITER = """
import sys
from pathlib import Path
from chanctx.context.playbook import BulletSource, Delta
from chanctx.manifest_store import LocalPlaybookStore
store = LocalPlaybookStore(Path(sys.argv[1]))
for n in range(100_000):
    delta = Delta(op="ADD", section="runbooks", content=f"svc{n} alpha{n} beta{n} gamma{n} needs payctl.",
                  sources=(BulletSource(turn=f"C0OPSTEAM1:{n}"),))
    store.apply("C0OPSTEAM1", [delta], float(n))
    print(n, flush=True)
"""


@pytest.mark.slow
def test_a_kill_9_loses_no_applied_delta(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    acknowledged = -1
    deadline = time.monotonic() + 60
    while acknowledged < 150 and time.monotonic() < deadline:
        acknowledged = int(writer.stdout.readline())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    store = LocalPlaybookStore(tmp_path, max_active=100_000)
    contents = {b.content for b in store.bullets(CHANNEL)}
    # Every delta the writer saw applied is there (the pruning bound keeps the newest 300).
    assert acknowledged >= 150
    assert all(f"svc{n} alpha{n} beta{n} gamma{n} needs payctl." in contents
               for n in range(max(0, acknowledged - 299), acknowledged + 1))  # fmt: skip
    store.close()


# --- chanctx playbook --------------------------------------------------------------------


def test_the_playbook_command_prints_exports_and_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = LocalPlaybookStore(tmp_path)
    store.apply(CHANNEL, [add(0, 0, 1), add(2, 0, 1)], now=1.0)
    store.apply(CHANNEL, [Delta(op="ADD", section="owners", content=SUPERSEDING[
        "owner:payments-api"], subject="owner:payments-api")], now=2.0)  # fmt: skip
    store.close()
    assert main(["playbook", CHANNEL, "--data-dir", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "[owners-00002] helpful=0 harmful=0 :: (unverified) Sam took over" in shown
    assert "Not sent (superseded):" in shown and "[owners-00001]" in shown
    exported = tmp_path / "review.json"
    assert main(["playbook", CHANNEL, "--data-dir", str(tmp_path), "--export", str(exported)]) == 0
    reviewed = json.loads(exported.read_text())
    reviewed = [b for b in reviewed if b["id"] != "conventions-00001"]  # a reviewer removed it
    exported.write_text(json.dumps(reviewed))
    assert main(["playbook", CHANNEL, "--data-dir", str(tmp_path), "--import", str(exported)]) == 0
    assert main(["playbook", CHANNEL, "--data-dir", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    after = json.loads(out[out.index("[") :])
    assert [b["id"] for b in after] == ["owners-00001", "owners-00002"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not a JSON playbook"),
        ('{"id": "x"}', "expected a list of bullets"),
        ('[{"id": "owners-00001", "section": "owners"}]', "bullet 0: content: Field required"),
        ('[{"id": "owners-1", "section": "owners", "content": "x"}]', "id 'owners-1' must be"),
        ('[{"id": "owners-00001", "section": "nope", "content": "x"}]', "bullet 0: section"),
    ],
)
def test_a_bad_import_names_the_bullet_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    store = LocalPlaybookStore(tmp_path)
    store.apply(CHANNEL, [add(0, 0, 1)], now=1.0)
    before = store.bullets(CHANNEL)
    store.close()
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["playbook", CHANNEL, "--data-dir", str(tmp_path), "--import", str(bad)]) == 2
    assert message in capsys.readouterr().err
    again = LocalPlaybookStore(tmp_path)
    assert again.bullets(CHANNEL) == before
    again.close()


def test_bullets_render_in_aces_form() -> None:
    bullet = Bullet(id="owners-00001", section="owners", content="Kim owns payments-api.",
                    helpful=2, state="verified")  # fmt: skip
    assert render_playbook([bullet]) == (
        "## OWNERS\n[owners-00001] helpful=2 harmful=0 :: Kim owns payments-api."
    )


# --- the query API and the inspector's view --------------------------------------------------


@pytest.fixture(scope="module")
def learned() -> Iterator[str]:
    """The playbook fixture replayed (it learned, was voted on, superseded), served over HTTP
    with a key for #ops only and one for another channel."""
    fixture = load_fixture(FIXTURES / "playbook")
    start = float(fixture.envelopes[0].get("event_time") or 0)
    with OfflineBot(fixture.slack_api, start_time=start, claude=True) as bot:
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
        keys = ApiKeys({OPS_KEY: [CHANNEL], OTHER_KEY: ["C0NOTHING1"]})
        with api_server(bot, keys) as server:
            yield server.origin


def _get(url: str, key: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code), json.loads(error.read())


@pytest.mark.slow
def test_the_query_api_serves_the_bullets_a_session_would_get(learned: str) -> None:
    body = json.dumps({"query": "who owns payments-api", "channel": CHANNEL,
                       "type_filters": ["playbook"], "token_budget": 1_000}).encode()  # fmt: skip
    request = urllib.request.Request(
        f"{learned}/api/context/query", data=body, method="POST",
        headers={"Authorization": f"Bearer {OPS_KEY}", "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        chunks = json.loads(response.read())["chunks"]
    ids = [c["block_id"] for c in chunks]
    assert ids[0] == "playbook:owners-00002" and chunks[0]["block_type"] == "playbook"
    assert "(unverified)" in chunks[0]["source"]
    # Superseded and quarantined bullets are never served.
    assert "playbook:owners-00001" not in ids and "playbook:conventions-00002" not in ids


def test_the_inspector_lists_every_bullet_with_its_state_for_the_keys_channels(
    learned: str,
) -> None:
    status, listing = _get(f"{learned}/api/playbook", OPS_KEY)
    assert status == 200 and listing["channels"] == [{"id": CHANNEL, "name": "ops"}]
    status, view = _get(f"{learned}/api/playbook?channel={CHANNEL}", OPS_KEY)
    states = {b["id"]: b["state"] for b in view["bullets"]}
    assert states["conventions-00002"] == "quarantined" and states["owners-00001"] == "superseded"
    assert view["bullets"][0]["superseded_by"] == "owners-00002"
    assert _get(f"{learned}/api/playbook", OTHER_KEY)[1] == {"channels": []}
    status, refused = _get(f"{learned}/api/playbook?channel={CHANNEL}", OTHER_KEY)
    assert status == 403 and "bullets" not in refused
    assert _get(f"{learned}/api/playbook", "not-a-key-at-all-0000")[0] == 401


@pytest.mark.slow
def test_the_reactions_that_count_are_the_operators_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fixture = str(FIXTURES / "playbook")
    # :-1: no longer says harmful: only Dev's :x: counts, and one verdict does not quarantine.
    assert main(["replay", fixture, "--json", "--harmful-reactions", "x,no_entry_sign"]) == 0
    report = json.loads(capsys.readouterr().out)
    poisoned = next(b for b in report["playbook"][CHANNEL] if "hardcode" in b["content"])
    assert (poisoned["harmful"], poisoned["state"]) == (1, "unverified")
    assert main(["replay", fixture, "--json", "--helpful-reactions", "tada"]) == 0
    report = json.loads(capsys.readouterr().out)
    owner = next(b for b in report["playbook"][CHANNEL] if b["id"] == "owners-00001")
    assert owner["helpful"] == 0  # Sam's :+1: is not a helpful verdict any more
    assert main(["replay", fixture, "--helpful-reactions", "+1, no spaces allowed"]) == 2
    assert (
        "--helpful-reactions must be reaction names separated by commas" in capsys.readouterr().err
    )


# --- an embedding model the operator plugs in ------------------------------------------------

PARAPHRASES = (
    "Kim owns payments-api and its pages.",
    "Kim maintains payments-api, pages go to Kim.",
)


def test_an_installed_embedding_model_merges_paraphrases_words_alone_miss() -> None:
    from chanctx.bot.core.embeddings import EmbeddingSimilarity, load_embed

    deltas = [Delta(op="ADD", section="owners", content=text, subject=None,
                    sources=(BulletSource(turn=f"{CHANNEL}:{n}"),))
              for n, text in enumerate(PARAPHRASES)]  # fmt: skip
    lexical = Playbook()
    for delta in deltas:
        lexical.apply(delta, now=1.0)
    assert len(lexical.active()) == 2  # too few shared words for Jaccard
    embedded = Playbook(similar=EmbeddingSimilarity(load_embed("tests.support.word_vectors:embed")))
    for delta in deltas:
        embedded.apply(delta, now=1.0)
    (merged,) = embedded.active()
    assert len(merged.sources) == 2 and merged.id == "owners-00001"
    # Naming different things still keeps statements apart, however close the vectors.
    embedded.apply(Delta(op="ADD", section="owners", content="Kim owns billing-api and its pages.",
                         sources=(BulletSource(turn=f"{CHANNEL}:9"),)), now=2.0)  # fmt: skip
    assert len(embedded.active()) == 2
    # A model that fails merges nothing and breaks nothing.
    failing = Playbook(similar=EmbeddingSimilarity(load_embed("tests.support.word_vectors:broken")))
    for delta in deltas:
        failing.apply(delta, now=1.0)
    assert len(failing.active()) == 2


@pytest.mark.slow
def test_the_embedding_setting_is_checked_and_used_by_replay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fixture = str(FIXTURES / "playbook")
    assert (
        main(["replay", fixture, "--json", "--playbook-embed", "tests.support.word_vectors:embed"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["playbook"][CHANNEL]  # it still learns, with the model deciding merges
    for bad, said in (("nope", "expected MODULE:FUNCTION"),
                      ("no_such_module_x:embed", "cannot import no_such_module_x"),
                      ("tests.support.word_vectors:missing", "has no function missing")):  # fmt: skip
        assert main(["replay", fixture, "--playbook-embed", bad]) == 2
        assert said in capsys.readouterr().err


def test_a_vote_on_a_pane_answer_reaches_the_viewed_channels_playbook_after_a_restart(
    tmp_path: Path,
) -> None:
    # The pane answered in Sam's DM from #ops's playbook; the vote arrives on the DM's turn.
    dm, turn = "D0SAMDM001", "D0SAMDM001:1781020900.000100"
    store = LocalPlaybookStore(tmp_path)
    store.apply(CHANNEL, [add(0, 0, 1)], now=1.0)
    store.record_use(CHANNEL, turn, ["owners-00001"], answered_in=dm)
    store.close()
    again = LocalPlaybookStore(tmp_path)  # a restart: nothing in memory
    assert again.vote(dm, turn, "U01SAMLEE0", helpful=True, now=2.0) == ["owners-00001"]
    assert again.bullets(CHANNEL)[0].state == "verified" and again.bullets(dm) == []
    assert again.vote(dm, turn, "U01SAMLEE0", helpful=True, now=3.0) == []  # once
    again.close()
