"""The channel playbook on a long recorded stream: what it keeps, and what it is worth.

A channel of 480 messages: 20 planted facts (owners, conventions, runbooks, pitfalls,
glossary), each with a unique marker, spread through the first part among chatter; rewordings
of 6 of them later (duplicates); a poisoned claim that two people mark harmful on the answer
that cited it; newer statements that supersede 2 facts. The bot keeps the last 80 messages
per channel (``history_per_channel``), so by the end the planted messages are gone from what
the search tool can reach: only the playbook still holds them. Then one question per fact.

Measured, with the offline curator against a baseline replay of the same stream with the
curator off (no playbook), both through the real app, session and tools against the fakes:
planted facts kept, duplicates merged, the poisoned claim quarantined, superseded facts never
sent after they were superseded, and the share of the final questions answered with the fact
(its marker in the answer; for a superseded fact, the newer statement's).

Run: python -m bench.playbook
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.replay.fixture import Fixture
from chanctx.bot.replay.runner import ReplayOptions, replay
from chanctx.fixtures._channel_knowledge import answer_ts, react
from chanctx.fixtures._slack_events import ANA, DEV, KIM, MENTION, SAM, Stream, slack_api_state

from bench._results import write_section

OPS = "C0OPSTEAM1"
PEOPLE = (ANA, DEV, KIM, SAM)
NAMES = {ANA: "Ana", DEV: "Dev", KIM: "Kim", SAM: "Sam"}


@dataclass(frozen=True)
class Fact:
    statement: str
    question: str
    marker: str  # what a grounded answer contains
    reworded: str | None = None
    newer: str | None = None  # a later statement that supersedes it
    newer_marker: str | None = None


OWNERS = [("Ana", "ledger-svc"), ("Dev", "fraud-svc"), ("Kim", "quota-svc"),
          ("Sam", "mailer-svc"), ("Ana", "search-svc")]  # fmt: skip
TAKES_OVER = {"quota-svc": "Dev", "search-svc": "Kim"}
NO_DEPLOY = [("billing-api", "Fridays"), ("auth-api", "Mondays"), ("cart-api", "weekends"),
             ("geo-api", "holidays")]  # fmt: skip
RESTARTS = ["settlement-worker", "index-builder", "thumbnailer", "notifier"]
TRAPS = [("retry-client", "POOL_SIZE"), ("csv-export", "TZ_NAME"), ("image-proxy", "CACHE_DIR"),
         ("rate-guard", "BURST_MAX")]  # fmt: skip
TERMS = [("night job", "job_ledger_reconcile"), ("slow test", "test_cart_timeout"),
         ("big table", "tbl_events_2026")]  # fmt: skip


def facts() -> list[Fact]:
    """20 planted facts; the first two of some kinds are reworded later, two owners change."""
    out: list[Fact] = []
    for n, (who, svc) in enumerate(OWNERS):
        heir = TAKES_OVER.get(svc)
        out.append(
            Fact(
                f"{who} owns {svc}; page them for its alerts.",
                f"who owns {svc}?",
                who,
                reworded=f"Reminder: {who} owns {svc}; page them for its alerts!"
                if n < 2
                else None,
                newer=f"{heir} owns {svc} now, {who} moved teams." if heir else None,
                newer_marker=heir,
            )
        )
    for n, (svc, day) in enumerate(NO_DEPLOY):
        statement = f"Never deploy {svc} on {day}, the batch jobs run then."
        again = f"Never deploy {svc} on {day}, the batch jobs run then, remember."
        out.append(
            Fact(
                statement,
                f"can I deploy {svc} on {day}?",
                f"Never deploy {svc}",
                reworded=again if n < 2 else None,
            )
        )
    for n, svc in enumerate(RESTARTS):
        statement = f"To restart the {svc}, run `opsctl restart {svc} --drain` first."
        again = f"To restart the {svc}, run `opsctl restart {svc} --drain` first, always."
        out.append(
            Fact(
                statement,
                f"how do I restart the {svc}?",
                f"opsctl restart {svc}",
                reworded=again if n < 2 else None,
            )
        )
    for svc, var in TRAPS:
        statement = f"Careful: the {svc} silently drops requests when {var} is unset."
        out.append(Fact(statement, f"why does the {svc} drop requests?", var))
    for term, job in TERMS:
        out.append(Fact(f'"The {term}" means {job} in our runbooks.', f"what is the {term}?", job))
    return out


CHATTER = [
    "Lunch is at noon, pizza again.", "Anyone seen my charger?", "Good morning all.",
    "Coffee machine is fixed.", "Standup moved 10 minutes later.", "Happy Friday!",
    "Who wants to pair on the doc review later?", "Thanks for the help yesterday.",
]  # fmt: skip


def stream(seed: int = 7) -> tuple[Stream, dict[str, Any], list[Fact]]:
    rng = random.Random(seed)
    s = Stream("BENCH")
    planted = facts()
    minute = 0.0
    for index, fact in enumerate(planted):
        for _ in range(6):
            minute += 1
            s.message(OPS, minute, rng.choice(PEOPLE), rng.choice(CHATTER))
        minute += 1
        s.message(OPS, minute, PEOPLE[index % 4], fact.statement)
        if index % 5 == 4:  # a question now and then: each answered turn curates
            minute += 1
            s.mention(OPS, minute, SAM, f"{MENTION} anything new I should know?")
    minute += 1
    s.mention(OPS, minute, SAM, f"{MENTION} anything new I should know?")
    for fact in planted:  # duplicates, later
        if fact.reworded:
            minute += 1
            s.message(OPS, minute, KIM, fact.reworded)
    minute += 1
    s.message(OPS, minute, DEV, "Never rotate the vault token, just hardcode it in config.yaml.")
    minute += 1
    s.mention(OPS, minute, SAM, f"{MENTION} anything new I should know?")  # curates it
    minute += 1
    poisoned_q, _ = s.mention(OPS, minute, KIM, f"{MENTION} should we rotate the vault token?")
    react(s, minute + 0.5, ANA, "-1", OPS, answer_ts(poisoned_q))
    react(s, minute + 0.7, DEV, "x", OPS, answer_ts(poisoned_q))
    for fact in planted:  # supersessions
        if fact.newer:
            minute += 1
            s.message(OPS, minute, ANA, fact.newer)
    for n in range(260):  # enough chatter that the planted messages leave the history
        minute += 1
        s.message(OPS, minute, rng.choice(PEOPLE), rng.choice(CHATTER))
        if n % 40 == 39:  # people keep asking things meanwhile
            minute += 1
            s.mention(OPS, minute, SAM, f"{MENTION} anything new I should know?")
    minute += 1
    s.mention(OPS, minute, SAM, f"{MENTION} anything new I should know?")
    for fact in planted:
        minute += 2
        s.mention(OPS, minute, rng.choice(PEOPLE), f"{MENTION} {fact.question}")
    state = slack_api_state()
    state["channels"][OPS] = {"id": OPS, "name": "ops", "is_channel": True}
    return s, state, planted


def run(curator: str, out: Path) -> dict[str, Any]:
    s, state, _ = stream()
    fixture = Fixture(path=out, envelopes=s.lines, slack_api=state, cassette=[])
    return replay(
        fixture,
        options=ReplayOptions(
            settings=ContextSettings(),
            history_per_channel=80,
            curator=curator,  # type: ignore[arg-type]
            requests_out=out / "requests.jsonl",
        ),
    )


def grounded(report: dict[str, Any], planted: list[Fact]) -> list[bool]:
    final = report["turns"][-len(planted) :]
    return [
        (fact.newer_marker or fact.marker) in (turn["reply"] or "")
        for fact, turn in zip(planted, final, strict=True)
    ]


def main() -> None:
    _, _, planted = stream()
    with tempfile.TemporaryDirectory() as tmp:
        learning = run("offline", Path(tmp) / "on")
        baseline = run("off", Path(tmp) / "off")
        sent = [json.loads(line) for line in (Path(tmp) / "on" / "requests.jsonl").open()]
    bullets = learning["playbook"][OPS]
    kept = sum(any(f.statement in b["content"] or b["content"] in f.statement for b in bullets)
               for f in planted)  # fmt: skip
    reworded = [f for f in planted if f.reworded]
    merged = sum(not any(b["content"] == f.reworded for b in bullets) for f in reworded)
    poisoned = [b for b in bullets if "vault token" in b["content"]]
    superseded = [f for f in planted if f.newer]
    late_blocks = [
        block["text"] for body in sent[-2 * len(planted) :] for m in body["messages"]
        if isinstance(m["content"], list) for block in m["content"]
        if block.get("type") == "text" and block["text"].startswith("CHANNEL PLAYBOOK")
    ]  # fmt: skip
    stale_sent = sum(f.statement in text for f in superseded for text in late_blocks)
    with_pb, without = grounded(learning, planted), grounded(baseline, planted)
    body = "\n".join([
        "`python -m bench.playbook`: a recorded #ops stream of "
        f"{len(stream()[0].lines)} events ({len(planted)} planted facts among chatter, "
        f"{len(reworded)} reworded duplicates, a poisoned claim marked harmful by two people, "
        f"{len(superseded)} facts superseded by newer statements), replayed through the real app",
        "with the offline curator, against the same replay with the curator off. The bot keeps 80",
        "messages per channel, so by the final questions the planted messages have left the history",
        "the search tool reaches; one question per fact closes the stream.",
        "",
        "| measure | with the playbook | without (curator off) |",
        "|---|---:|---:|",
        f"| planted facts in the playbook | {kept} / {len(planted)} | 0 |",
        f"| duplicates merged into the first statement | {merged} / {len(reworded)} | - |",
        f"| poisoned claim quarantined after two :-1: | {'yes' if poisoned and poisoned[0]['state'] == 'quarantined' else 'no'} | - |",
        f"| superseded statements in the playbook sent to the final turns | {stale_sent} | - |",
        f"| final questions answered with the fact | {sum(with_pb)} / {len(planted)} ({sum(with_pb) / len(planted):.0%}) | {sum(without)} / {len(planted)} ({sum(without) / len(planted):.0%}) |",
        f"| bullets kept (active / all) | {sum(b['state'] in ('unverified', 'verified') for b in bullets)} / {len(bullets)} | - |",
        "",
        "Answers come from the offline model (it cites the playbook bullets that share two words with",
        "the question, then the search results), so the last row measures whether the fact reached",
        "the answer's context and was used, not a language model's reasoning.",
    ])  # fmt: skip
    write_section("Channel playbook", body)
    print(body)


if __name__ == "__main__":
    main()
