"""channel_context's candidates and the people an intent names (tools._search).

- the context neighbours of a match are candidates, ranked after the match they sit next to;
  chatter beyond the context window is not, nor are neighbours of an identifiers-only lookup;
- a capitalised name of a channel member in the intent favours that person's messages
  ("person:" signal) instead of matching the name as a word; a lower-case word that happens to
  be someone's name stays a word;
- Hypothesis, over random small two-channel histories and intents: results stay in their
  channel, never exceed max_results, never repeat a message, are the same when asked twice, and
  each one is a match, a context neighbour of one, or by a person the intent names.
"""

from __future__ import annotations

from typing import Any

from chanctx.context import Message, Names
from chanctx.tools import ChannelTools, HistoryView, IndexedHistory
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.tools.test_tools_data import ok, ranked

C1, C2 = "C1SOCIAL", "C2OTHER"
T0 = 1_772_366_400  # 2026-03-01T12:00:00Z
PEOPLE = Names(users={"UJO": "Joanna", "UNA": "Nate", "UDEV": "Dev"})


def _say(seconds: int, user: str, text: str, channel: str = C1) -> Message:
    return Message(channel=channel, ts=f"{T0 + seconds}.000100", user_id=user, text=text)


def _history(messages: list[Message]) -> IndexedHistory:
    history = IndexedHistory()
    for message in messages:
        history.record(message)
    return history


def _texts(history: IndexedHistory, intent: str, limit: int = 8) -> list[tuple[str, str]]:
    hits = ranked(history, intent=intent, names=PEOPLE, channel=C1, limit=limit)
    return [(hit.text, hit.signal) for hit in hits]


def test_the_answer_after_a_question_is_found_without_its_words() -> None:
    history = _history(
        [
            _say(0, "UNA", "Anyone know a good dentist around here?"),
            _say(60, "UJO", "Dr Lee on 5th street, she is lovely"),
            _say(7_200, "UNA", "lunch at noon?"),  # two hours later: not the same talk
            _say(86_400, "UJO", "My dentist appointment moved to Friday"),
        ]
    )
    found = _texts(history, "who is a good dentist")
    order = [text for text, _ in found]
    assert "Dr Lee on 5th street, she is lovely" in order
    answer = order.index("Dr Lee on 5th street, she is lovely")
    assert answer > order.index("Anyone know a good dentist around here?")
    assert dict(found)["Dr Lee on 5th street, she is lovely"].startswith("context:")
    assert "lunch at noon?" not in order


def test_an_identifier_lookup_lists_its_matches_only() -> None:
    history = _history(
        [
            _say(0, "UNA", "shipping v2.30.4 now"),
            _say(60, "UJO", "fingers crossed"),
        ]
    )
    assert [text for text, _ in _texts(history, "v2.30.4")] == ["shipping v2.30.4 now"]
    # With a plain word beside it, the talk around the match comes along, after it.
    assert [text for text, _ in _texts(history, "v2.30.4 shipping")] == [
        "shipping v2.30.4 now",
        "fingers crossed",
    ]


def test_a_named_person_is_whose_messages_not_a_word() -> None:
    history = _history(
        [
            _say(0, "UNA", "Joanna, what hobbies do you have?"),
            _say(60, "UJO", "Hobbies: writing, reading and long hikes"),
            _say(86_400, "UNA", "Thanks Joanna! My hobbies are video games"),
            _say(2 * 86_400, "UJO", "Watched a movie tonight"),
        ]
    )
    found = _texts(history, "What are Joanna's hobbies?")
    assert found[0] == (
        "Hobbies: writing, reading and long hikes",
        "keyword:hobbies; context:hobbies; person:Joanna",
    )
    # Nate's messages that name her come after hers; her other messages are candidates too.
    order = [text for text, _ in found]
    assert order.index("Thanks Joanna! My hobbies are video games") > 0
    assert "Watched a movie tonight" in order
    # Without the name as a word, "joanna" alone would have put Nate's two messages first.
    plain = _texts(history, "hobbies joanna")
    assert "person:" not in " ".join(signal for _, signal in plain)


def test_a_lower_case_word_that_is_also_a_name_stays_a_word() -> None:
    history = _history(
        [
            _say(0, "UDEV", "lunch anyone?"),
            _say(86_400, "UNA", "the dev environment is down again"),
        ]
    )
    found = _texts(history, "is the dev environment down")
    assert found[0][0] == "the dev environment is down again"
    assert all("person:" not in signal for _, signal in found)
    # Capitalised, "Dev" is the person.
    by_dev = _texts(history, "what did Dev say about lunch")
    assert by_dev[0] == ("lunch anyone?", "keyword:lunch; person:Dev")


WORDS = ["dentist", "hobbies", "deploy", "lunch", "movie", "v2.30.4", "Joanna", "Nate", "Dev"]
USERS = ["UJO", "UNA", "UDEV"]


@st.composite
def _channels(draw: st.DrawFn) -> list[Message]:
    count = draw(st.integers(1, 30))
    out: list[Message] = []
    seconds = 0
    for _ in range(count):
        seconds += draw(st.sampled_from([30, 60, 600, 3_600, 86_400]))
        words = draw(st.lists(st.sampled_from([*WORDS, "ok", "sure", "nice"]), max_size=5))
        channel = draw(st.sampled_from([C1, C1, C2]))
        out.append(_say(seconds, draw(st.sampled_from(USERS)), " ".join(words), channel))
    return out


def _words_of(text: str) -> set[str]:
    return {word.casefold() for word in text.replace("?", " ").split()}


@given(
    _channels(),
    st.lists(st.sampled_from([*WORDS, "what", "did"]), min_size=1, max_size=4),
    st.integers(1, 12),
)
@settings(max_examples=150, deadline=None)
def test_results_stay_bounded_in_their_channel_and_deterministic(
    messages: list[Message], intent_words: list[str], limit: int
) -> None:
    history = _history(messages)
    intent = " ".join(intent_words)
    tools = ChannelTools(HistoryView(history, C1), names=PEOPLE)
    call: dict[str, Any] = {"intent": intent, "max_results": limit}
    first = ok(tools.call("channel_context", call))
    assert ok(tools.call("channel_context", call)) == first
    rows = [{"ts": row["message_id"]} for row in first["results"]]
    assert len(rows) <= limit
    assert len({row["ts"] for row in rows}) == len(rows)
    mine = {m.ts: m for m in messages if m.channel == C1}
    assert all(row["ts"] in mine for row in rows)
    # Every hit is a match, a neighbour (within 30 min) of a match, or by a named person.
    hits = ranked(history, intent=intent, names=PEOPLE, channel=C1, limit=limit)
    assert [hit.message.ts for hit in hits] == [row["ts"] for row in rows]
    has_keywords = bool(_words_of(intent) - {"what", "did"})
    for hit in hits:
        reasons = [s for s in ("keyword:", "context:", "person:") if s in hit.signal]
        assert reasons or not has_keywords, hit


def test_earlier_questions_to_the_bot_do_not_set_the_scale_for_peoples_messages() -> None:
    people = [
        _say(-10 * 86_400, "UJO", "I got accepted for the internship at the design studio"),
        _say(20 * 86_400, "UJO", "Watched a movie with my sister"),  # in March
        *(_say(-40 * 86_400 + 60 * n, "UNA", f"game night {n} was fun") for n in range(8)),
    ]
    asked = "What internship did Joanna get accepted for in March?"
    exchange = []
    for n in range(3):  # the same question asked before, and the bot's answers
        at = 40 * 86_400 + 120 * n
        exchange.append(
            Message(
                channel=C1,
                ts=f"{T0 + at}.000100",
                user_id="UNA",
                text=f"<@UBOT> {asked} internship internship accepted",
                mentions_self=True,
            )
        )
        exchange.append(
            Message(
                channel=C1,
                ts=f"{T0 + at + 1}.000100",
                user_id="UBOT",
                text="Joanna got accepted for the internship (internship, accepted).",
                is_self=True,
            )
        )
    alone = _texts(_history(people), asked)
    crowded = _texts(_history(people + exchange), asked)
    assert alone[0][0] == crowded[0][0] == people[0].text
    # The exchange comes after every message of people, whatever it matched.
    assert [text for text, _ in crowded[:2]] == [m.text for m in people[:2]]
