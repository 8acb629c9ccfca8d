"""Claude sessions end to end: the real Bolt app and the real anthropic client against the fakes.

Every test drives ``OfflineBot(claude=True)`` with Slack envelopes and asserts on what reached
the fake Anthropic API (``bot.anthropic.requests``: the request bodies the SDK sent) and what the
bot posted to the fake Slack Web API.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.claude.prompt import CONTEXT_HEADER, system_prompt
from chanctx.bot.claude.session import SessionSettings
from chanctx.bot.core.recipe_runner import RecipeRunner, load_recipe
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_claude import OFFLINE_MARK
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.slack.markdown import MARKDOWN_LIMIT
from chanctx.cache import RateLimiter
from chanctx.context import RecipeError, default_counter, iso_from_ts
from chanctx.manifest_store import (
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    SessionKey,
    SessionStarted,
    SessionStore,
)
from chanctx.tools import read_context_output

from tests.support.slack_events import (
    BOT_ID,
    BOT_USER,
    CHANNEL,
    STATE,
    TEAM,
    envelope,
    mention_pair,
    message,
    ts,
)

START_SECONDS = int(ts(0).split(".")[0])
THREAD_JSON = "ThreadContext (JSON):\n"
SNAPSHOT_JSON = "ChannelSnapshot (JSON):\n"
DELTA_HEAD = "New in this thread since your last answer:\n"
SUMMARIZE_SYSTEM = "Summarize this Slack thread conversation for your own later reference."

# -- helpers --------------------------------------------------------------------------------


def new_bot(data_dir: Path, state: dict[str, Any] | None = None, **options: Any) -> OfflineBot:
    return OfflineBot(
        copy.deepcopy(state or STATE),
        claude=True,
        data_dir=data_dir,
        start_time=float(START_SECONDS),
        **options,
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def say(bot: OfflineBot, at: str, text: str, *, user: str = "U2", **extra: Any) -> None:
    bot.dispatch(envelope(message(at, text, user=user, **extra)))


def mention(bot: OfflineBot, at: str, text: str, **extra: Any) -> None:
    for item in mention_pair(at, text, **extra):
        bot.dispatch(item)


def echo_answers(bot: OfflineBot, since: int = 0) -> None:
    """Deliver the bot's own posts back as Slack does (a message event from the bot)."""
    for posted in bot.slack.posted[since:]:
        extra = {"thread_ts": posted["thread_ts"]} if posted.get("thread_ts") else {}
        own = message(posted["ts"], posted["text"], user=BOT_USER, bot_id=BOT_ID, **extra)
        bot.dispatch(envelope(own))


def fake(bot: OfflineBot) -> FakeAnthropicAPI:
    assert bot.anthropic is not None
    return bot.anthropic


def bodies(bot: OfflineBot) -> list[dict[str, Any]]:
    return [r.body for r in fake(bot).requests if r.path == "/v1/messages"]


def blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def texts(msg: dict[str, Any]) -> list[str]:
    return [b["text"] for b in blocks(msg) if b.get("type") == "text"]


def all_texts(body: dict[str, Any]) -> list[str]:
    return [t for m in body["messages"] for t in texts(m)]


def package_count(body: dict[str, Any]) -> int:
    """How many context packages the request carries (one header per package)."""
    return sum(t.count(CONTEXT_HEADER) for t in all_texts(body))


def cache_markers(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(cache_markers(v) for v in value.values())
    if isinstance(value, list):
        return sum(cache_markers(v) for v in value)
    return 0


def unmarked(value: Any) -> Any:
    """``value`` without cache_control markers (they move from request to request)."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def is_question(msg: dict[str, Any]) -> bool:
    """A user message that asks (not one that only carries tool results)."""
    return msg["role"] == "user" and not any(b.get("type") == "tool_result" for b in blocks(msg))


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] for b in blocks(m) if b.get("type") == "tool_result"]


def json_after(prefix: str, text: str) -> tuple[str, dict[str, Any]]:
    raw = text[text.index(prefix) + len(prefix) :]
    return raw, json.loads(raw)


def log_entries(data_dir: Path, thread_ts: str, channel: str = CHANNEL) -> list[Entry]:
    store = SessionStore(data_dir)
    return store.open(SessionKey(team=TEAM, channel=channel, thread_ts=thread_ts)).entries()


def turn_texts(bot: OfflineBot) -> list[str | None]:
    return [result.reply for result in bot.runtime.runner.results]


def answer(text: str, number: int = 1) -> dict[str, Any]:
    return {
        "id": f"msg_cassette_{number:03d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
    }


def tool_round(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A response asking for tools: (tool_use id, tool name, input) per call."""
    return {
        "id": f"msg_{calls[0][0]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [
            {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
            for tool_id, name, tool_input in calls
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
    }


class Responses:
    """Keeps every Messages API response next to its request (the fake records only requests).

    Wraps the fake's own endpoint, so the cassette, the offline model and the simulated prompt
    cache still answer; ``after`` may react to a response (inject a fault for the next request).
    """

    def __init__(
        self,
        api: FakeAnthropicAPI,
        after: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
    ) -> None:
        self._inner = api.messages
        self._after = after
        self.seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
        api.messages = self  # type: ignore[assignment]  # the route looks it up per request

    def __call__(self, body: Any) -> tuple[int, dict[str, Any]]:
        status, response = self._inner(body)
        self.seen.append((body, response))
        if self._after is not None:
            self._after(body, response)
        return status, response


# -- a thread with some history --------------------------------------------------------------

ROOT = ts(1)
ROOT_TEXT = "Checkout returns 502 in eu-west-1 since the 14:00 deploy"


def incident_thread(bot: OfflineBot) -> None:
    say(bot, ROOT, ROOT_TEXT, user="U1")
    say(bot, ts(2), "Error rate is 12%, rolling back to v41", thread_ts=ROOT)
    say(bot, ts(3), "Staging database is read-only until Friday", user="U1")


# -- 1. the tool loop ------------------------------------------------------------------------


def test_tool_loop_sends_real_tool_outputs_back_and_posts_the_answer_in_the_thread(
    data_dir: Path,
) -> None:
    final = "The 14:00 deploy broke checkout; Ana rolled back to v41. Staging is read-only."
    cassette = [
        tool_round(("toolu_01", "channel_context", {"intent": "staging database read-only"})),
        tool_round(("toolu_02", "channel_messages", {"thread_id": ROOT})),
        answer(final),
    ]
    with new_bot(data_dir, cassette=cassette) as bot:
        incident_thread(bot)
        mention(bot, ts(10), "what broke, and can we test the fix on staging?", thread_ts=ROOT)
        sent = bodies(bot)
        (result,) = bot.runtime.runner.results

        assert len(sent) == 3
        assert [b.get("tool_choice") for b in sent] == [None, None, None]
        # The first tool's real output went back as the tool_result of its tool_use.
        (search,) = tool_results(sent[1])
        assert search["tool_use_id"] == "toolu_01" and search["is_error"] is False
        # The best match is in the attached snapshot already: named by its ts, not repeated.
        found = read_context_output(search["content"])
        assert found[0] == {"ts": ts(3), "held": True}
        assert "Staging database is read-only" not in search["content"]
        # The third request carries both rounds, in order, and the thread the second fetched.
        assert [(m["role"], [b["type"] for b in blocks(m)]) for m in sent[2]["messages"]] == [
            ("user", ["text", "text", "text"]),
            ("assistant", ["tool_use"]),
            ("user", ["tool_result"]),
            ("assistant", ["tool_use"]),
            ("user", ["tool_result"]),
        ]
        first, fetched = tool_results(sent[2])
        assert unmarked(first) == unmarked(search)
        assert fetched["tool_use_id"] == "toolu_02" and fetched["is_error"] is False
        thread = json.loads(fetched["content"])["thread"]
        assert thread["root"]["text"] == ROOT_TEXT
        replies = [r["text"] for r in thread["replies"]]
        assert replies[0] == "Error rate is 12%, rolling back to v41"

        # The report lists the calls with exactly what was sent back.
        assert [(c.name, c.input, c.is_error) for c in result.tool_calls] == [
            ("channel_context", {"intent": "staging database read-only"}, False),
            ("channel_messages", {"thread_id": ROOT}, False),
        ]
        assert [c.output for c in result.tool_calls] == [search["content"], fetched["content"]]
        assert [c.is_error for c in result.tool_calls] == [False, False]
        assert result.usage["requests"] == 3

        # The answer is posted once (streamed), in the mention's thread.
        posts = bot.slack.posted
        assert [(p.get("thread_ts"), p.get("markdown_text")) for p in posts] == [(ROOT, final)]
        assert bot.slack.call_counts().get("chat.postMessage") is None
        assert result.reply == final and result.error is None


class ToolHungryModel:
    """A model that always wants one more search, unless the request forbids tools."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: Any) -> tuple[int, dict[str, Any]]:
        if body.get("tool_choice") == {"type": "none"}:
            return 200, {
                **answer("Here is what I found so far: the deploy broke checkout."),
                "usage": {"input_tokens": 10, "output_tokens": 10},
            }
        self.calls += 1
        call = (f"toolu_{self.calls:02d}", "channel_context", {"intent": "checkout deploy"})
        return 200, {**tool_round(call), "usage": {"input_tokens": 10, "output_tokens": 10}}


def test_reaching_max_tool_iterations_forbids_tools_and_still_answers(data_dir: Path) -> None:
    settings = SessionSettings(max_tool_iterations=2)
    with new_bot(data_dir, session_settings=settings) as bot:
        fake(bot).messages = ToolHungryModel()  # type: ignore[assignment]
        incident_thread(bot)
        mention(bot, ts(10), "what broke?", thread_ts=ROOT)
        sent = bodies(bot)
        (result,) = bot.runtime.runner.results

        assert len(sent) == 3  # two rounds of tools, then the answer
        assert [b.get("tool_choice") for b in sent] == [None, None, {"type": "none"}]
        assert len(tool_results(sent[2])) == 2  # both rounds' results reach the last request
        assert [c.name for c in result.tool_calls] == ["channel_context", "channel_context"]
        assert [p["text"] for p in bot.slack.posted] == [
            "Here is what I found so far: the deploy broke checkout."
        ]
        assert bot.slack.posted[0]["thread_ts"] == ROOT


# -- 2. tools cannot reach another channel ---------------------------------------------------

SECRET = "C0SECRET01"
SECRET_ROOT = ts(4)
SECRET_REPLY = ts(5)
SECRET_FILE = "F0SECRET01"
# Text that exists only in the other channel: none of it may reach Claude.
SECRET_WORDS = ("Zebracorp", "42 million", "zebracorp-terms.pdf", "confidential", "Board only")


def two_channel_state() -> dict[str, Any]:
    state = copy.deepcopy(STATE)
    state["channels"][SECRET] = {"id": SECRET, "name": "board", "is_private": True}
    return state


def test_tools_answer_not_found_for_ids_and_words_of_another_channel(data_dir: Path) -> None:
    made_up = "1781020999.000100"
    calls = [
        ("toolu_01", "channel_messages", {"thread_id": SECRET_ROOT}),
        ("toolu_02", "channel_messages", {"thread_id": made_up}),
        ("toolu_03", "channel_messages", {"message_ids": [SECRET_REPLY]}),
        ("toolu_04", "channel_messages", {"message_ids": [made_up]}),
        ("toolu_05", "channel_messages", {"media_artifact_id": SECRET_FILE}),
        ("toolu_06", "channel_messages", {"media_artifact_id": "F0MADEUP01"}),
    ]
    cassette = [
        tool_round(*calls),
        tool_round(("toolu_07", "channel_context", {"intent": "acquisition closing price"})),
        answer("I can only see this channel, and it says nothing about an acquisition."),
    ]
    with new_bot(data_dir, two_channel_state(), cassette=cassette) as bot:
        # The bot is in both channels, so it sees both channels' events.
        secret_file = {
            "id": SECRET_FILE,
            "name": "zebracorp-terms.pdf",
            "title": "Zebracorp terms",
            "mimetype": "application/pdf",
            "size": 2048,
        }
        say(
            bot,
            SECRET_ROOT,
            "Board only: the Zebracorp acquisition closes at 42 million",
            user="U1",
            channel=SECRET,
            files=[secret_file],
        )
        say(bot, SECRET_REPLY, "Keep the price confidential", channel=SECRET, thread_ts=SECRET_ROOT)
        say(bot, ts(6), "Deploy of v42 went fine", user="U1")
        mention(bot, ts(10), "anything about the acquisition closing?")
        sent = bodies(bot)
        (result,) = bot.runtime.runner.results

        assert len(sent) == 3 and result.error is None
        errors = tool_results(sent[1])
        assert [r["tool_use_id"] for r in errors] == [c[0] for c in calls]
        assert all(r["is_error"] is True for r in errors)
        shapes = []
        for (_, _, tool_input), result_block in zip(calls, errors, strict=True):
            asked = next(iter(tool_input.values()))
            asked_id = asked[0] if isinstance(asked, list) else asked
            assert result_block["content"].endswith(" not found in this channel")
            shapes.append(result_block["content"].replace(asked_id, "<id>"))
        # A foreign id and a made-up one get the same answer: nothing tells them apart.
        assert shapes == [
            "thread <id> not found in this channel",
            "thread <id> not found in this channel",
            "message <id> not found in this channel",
            "message <id> not found in this channel",
            "media artifact <id> not found in this channel",
            "media artifact <id> not found in this channel",
        ]
        search = tool_results(sent[2])[-1]
        assert search["tool_use_id"] == "toolu_07" and search["is_error"] is False
        assert json.loads(search["content"])["results"] == []

        # Nothing of the other channel reached the Messages API, in any request.
        for body in sent:
            wire = json.dumps(body, ensure_ascii=False)
            leaked = [word for word in SECRET_WORDS if word.lower() in wire.lower()]
            assert leaked == [], leaked
            assert SECRET not in wire
        assert not [w for w in SECRET_WORDS if w in json.dumps(bot.slack.posted)]


def test_one_answer_makes_at_most_three_slack_fetches_and_the_fourth_says_so(
    data_dir: Path,
) -> None:
    roots = [ts(40 + i) for i in range(4)]
    history: list[dict[str, Any]] = []
    for number, root in enumerate(roots):
        history += [
            {"type": "message", "user": "U1", "text": f"Thread {number} on the outage",
             "ts": root, "thread_ts": root, "reply_count": 1},
            {"type": "message", "user": "U2", "text": f"Reply {number}: rolled back",
             "ts": ts(50 + number), "thread_ts": root, "parent_user_id": "U1"},
        ]  # fmt: skip
    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: history}
    calls = [(f"toolu_{n}", "channel_messages", {"thread_id": r}) for n, r in enumerate(roots)]
    # An app on a Marketplace-sized replies limit: the per-answer fetch count binds here, not
    # the minute of rate-limit waiting (one call a minute would allow only two).
    roomy = RateLimiter(per_method={"conversations.replies": 50})
    cassette = [tool_round(*calls), answer("Four threads.")]
    with new_bot(data_dir, state, cassette=cassette, limiter=roomy) as bot:
        mention(bot, ts(70), "what do the outage threads say?")
        results = tool_results(bodies(bot)[1])
        assert [r["is_error"] for r in results] == [False] * 4
        refused = ["Not fetched from Slack" in r["content"] for r in results]
        assert refused == [False, False, False, True]
        assert "Reply 2: rolled back" in results[2]["content"]
        assert bot.slack.call_counts()["conversations.replies"] == 3
        (result,) = bot.runtime.runner.results
        assert result.reply == "Four threads."


# -- 3. the context package is attached once; later turns send the delta --------------------


def test_context_is_attached_once_and_later_turns_send_only_the_delta(data_dir: Path) -> None:
    cassette = [
        answer("Roll back to v41 first.", 1),
        answer("Yes, once the fix is merged.", 2),
    ]
    with new_bot(data_dir, cassette=cassette) as bot:
        responses = Responses(fake(bot))
        incident_thread(bot)
        mention(bot, ts(10), "what should we do first?", thread_ts=ROOT)
        echo_answers(bot)  # Slack delivers our own answer as an event too
        turn_one = len(bodies(bot))
        say(bot, ts(20), "Rolled back to v41 at 14:20", thread_ts=ROOT)
        say(bot, ts(21), "Error rate is back to 0.1%", user="U1", thread_ts=ROOT)
        mention(bot, ts(30), "is it safe to redeploy?", thread_ts=ROOT)
        sent = bodies(bot)

        assert turn_one == 1 and len(sent) == 2
        first, second = sent
        # Turn 1: the package (a ChannelSnapshot and a ThreadContext) exactly once.
        assert package_count(first) == 1
        assert sum(t.startswith(THREAD_JSON) for t in all_texts(first)) == 1
        assert sum(SNAPSHOT_JSON in t for t in all_texts(first)) == 1
        _, thread = json_after(THREAD_JSON, next(t for t in all_texts(first) if THREAD_JSON in t))
        assert thread["root"]["text"] == ROOT_TEXT

        # Turn 2: the earlier turn is history (verbatim), the new message only the delta.
        new = second["messages"][-1]
        assert new["role"] == "user" and is_question(new)
        assert unmarked(second["messages"][0]) == unmarked(first["messages"][0])
        assert texts(second["messages"][1]) == ["Roll back to v41 first."]
        assert len(second["messages"]) == 3
        assert not any(CONTEXT_HEADER in t or THREAD_JSON in t for t in texts(new))
        delta, question = texts(new)
        assert delta == (
            DELTA_HEAD
            + f"[{iso_from_ts(ts(20))}] Ana: Rolled back to v41 at 14:20\n"
            + f"[{iso_from_ts(ts(21))}] Sam: Error rate is back to 0.1%"
        )
        assert question.startswith(f"[{iso_from_ts(ts(30))}] Sam: ")
        assert question.endswith("is it safe to redeploy?")
        assert package_count(second) == 1  # only in the first turn's message

        # Cache breakpoints: at most 4 per request; turn 2 reads the package from the cache.
        for body in sent:
            assert 1 <= cache_markers(body) <= 4
        usage = responses.seen[1][1]["usage"]
        assert usage["cache_read_input_tokens"] > 0
        assert [p["text"] for p in bot.slack.posted] == [
            "Roll back to v41 first.",
            "Yes, once the fix is merged.",
        ]


# -- 4. a restarted bot resumes the session from its log -------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("torn", [False, True], ids=["clean", "torn-last-line"])
def test_a_restarted_bot_resumes_from_the_log_with_only_the_delta(
    data_dir: Path, torn: bool
) -> None:
    with new_bot(data_dir, cassette=[answer("Roll back to v41 first.")]) as first_bot:
        incident_thread(first_bot)
        mention(first_bot, ts(10), "what should we do first?", thread_ts=ROOT)
        (before,) = bodies(first_bot)
        slack_then = first_bot.slack.messages(CHANNEL)
    path = SessionStore(data_dir).open(SessionKey(TEAM, CHANNEL, ROOT)).path
    logged = path.read_bytes()
    if torn:  # a crash in the middle of an append
        path.write_bytes(logged + b'{"type": "message", "at": 1781020900.0, "role": "us')

    # While the bot was down, two replies were posted; Slack has them, the new bot does not.
    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: slack_then}
    with new_bot(data_dir, state, cassette=[answer("Yes, redeploy after the fix.")]) as bot:
        for at, user, text in ((ts(20), "U2", "Rolled back at 14:20"), (ts(21), "U1", "All green")):
            bot.slack.add_message(
                CHANNEL,
                {"type": "message", "user": user, "text": text, "ts": at, "thread_ts": ROOT},
            )
        mention(bot, ts(30), "is it safe to redeploy?", thread_ts=ROOT)
        (after,) = bodies(bot)
        (result,) = bot.runtime.runner.results

        assert result.error is None
        assert [(p["thread_ts"], p["text"]) for p in bot.slack.posted] == [
            (ROOT, "Yes, redeploy after the fix.")
        ]
        # Turn 1 comes back from the log, package included; the new message is the delta only.
        assert unmarked(after["messages"][0]) == unmarked(before["messages"][0])
        assert texts(after["messages"][1]) == ["Roll back to v41 first."]
        new = after["messages"][2]
        assert len(after["messages"]) == 3 and is_question(new)
        delta, question = texts(new)
        assert delta == (
            DELTA_HEAD
            + f"[{iso_from_ts(ts(20))}] Ana: Rolled back at 14:20\n"
            + f"[{iso_from_ts(ts(21))}] Sam: All green"
        )
        assert question.endswith("is it safe to redeploy?")
        assert package_count(after) == 1

    entries = log_entries(data_dir, ROOT)
    kinds = [
        (type(e).__name__, getattr(e, "turn", None), getattr(e, "role", None)) for e in entries
    ]
    assert kinds[0] == ("SessionStarted", None, None)
    messages = [(turn, role) for kind, turn, role in kinds if kind == "MessageEntry"]
    assert messages == [(1, "user"), (1, "assistant"), (2, "user"), (2, "assistant")]
    assert entries[-1] == CustomEntry(
        at=entries[-1].at, custom_type="chanctx:last-seen", data={"ts": ts(30)}
    )
    assert path.read_bytes().startswith(logged)  # appended after turn 1, nothing rewritten
    assert path.with_name(path.name + ".torn").exists() is torn


def test_an_answer_logged_just_before_a_crash_is_posted_without_asking_claude_again(
    data_dir: Path,
) -> None:
    with new_bot(data_dir, cassette=[answer("Roll back to v41 first.")]) as first_bot:
        incident_thread(first_bot)
        mention(first_bot, ts(10), "what should we do first?", thread_ts=ROOT)
        asked = [m for m in first_bot.slack.messages(CHANNEL) if not m.get("bot_id")]
    # The crash: the session log holds the answer, the journal only the queued question.
    journal = data_dir / "turns.jsonl"
    queued = [line for line in journal.read_text().splitlines() if '"op": "queued"' in line]
    journal.write_text("\n".join(queued) + "\n")
    logged = log_entries(data_dir, ROOT)

    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: asked}  # Slack never saw the answer
    with new_bot(data_dir, state, cassette=[answer("A different answer.")]) as bot:
        assert bot.runtime.recover() == 1
        bot.runtime.runner.drain(10)
        assert [(p["thread_ts"], p["text"]) for p in bot.slack.posted] == [
            (ROOT, "Roll back to v41 first.")
        ]
        assert bodies(bot) == []  # no second request, no second bill
    assert log_entries(data_dir, ROOT) == logged  # and no second turn in the log


# -- 5. compaction ---------------------------------------------------------------------------

SMALL_WINDOW = {"context_window": 5_000, "compaction_threshold": 0.8, "keep_turns": 1}


def run_turns(bot: OfflineBot, count: int) -> list[int]:
    """``count`` mentions in one thread, a reply by someone else before each; returns the
    index into ``bodies(bot)`` of each turn's first request."""
    incident_thread(bot)
    starts = []
    for number in range(count):
        base = 10 + 10 * number
        say(
            bot, ts(base), f"Update {number}: checkout error rate now {9 - number}%", thread_ts=ROOT
        )
        starts.append(len(bodies(bot)))
        mention(bot, ts(base + 5), f"question {number}: is checkout healthy?", thread_ts=ROOT)
        echo_answers(bot, since=len(bot.slack.posted) - 1)
    return starts


def compactions(data_dir: Path) -> list[CompactionEntry]:
    return [e for e in log_entries(data_dir, ROOT) if isinstance(e, CompactionEntry)]


def test_trim_compaction_writes_a_digest_and_reattaches_fresh_context(data_dir: Path) -> None:
    with new_bot(data_dir, session_settings=SessionSettings(**SMALL_WINDOW)) as bot:
        starts = run_turns(bot, 3)
        sent = bodies(bot)
        assert all(result.error is None for result in bot.runtime.runner.results)

    done = compactions(data_dir)
    assert done, "a 5,000-token window must compact within three turns"
    first = done[0]
    assert first.strategy == "trim" and first.replaced_through_turn == 1
    assert first.digest.startswith("[Earlier in this thread (turn 1, compacted): ")
    assert "question 0" in first.digest
    # The turn after it starts with the digest, and its new message carries a fresh package.
    after = sent[starts[2]]
    assert texts(after["messages"][0])[0] == first.digest
    new = after["messages"][-1]
    assert is_question(new) and CONTEXT_HEADER in texts(new)[0]
    assert package_count(after) == 1  # the turn-1 package was folded away, not re-sent
    _, thread = json_after(THREAD_JSON, next(t for t in texts(new) if THREAD_JSON in t))
    replies = [r["text"] for r in thread["replies"]]
    assert "Update 2: checkout error rate now 7%" in replies  # fresh: posted after turn 2
    assert not any(t.startswith(DELTA_HEAD) for t in texts(new))  # the package has it all
    attached = [
        e.data["turn"]
        for e in log_entries(data_dir, ROOT)
        if isinstance(e, CustomEntry) and e.custom_type == "chanctx:context-attached"
    ]
    assert attached == [1, 3]
    for body in sent:
        assert cache_markers(body) <= 4


@pytest.mark.slow
def test_summarize_compaction_asks_claude_and_its_text_becomes_the_digest(data_dir: Path) -> None:
    settings = SessionSettings(compaction="summarize", **SMALL_WINDOW)
    with new_bot(data_dir, session_settings=settings) as bot:
        responses = Responses(fake(bot))
        starts = run_turns(bot, 3)
        sent = bodies(bot)

    summaries = [(b, r) for b, r in responses.seen if b.get("system") == SUMMARIZE_SYSTEM]
    done = compactions(data_dir)
    assert summaries and len(summaries) == len(done)
    body, response = summaries[0]
    assert "tools" not in body and len(body["messages"]) == 1
    request_text = body["messages"][0]["content"]
    assert "<transcript>" in request_text and "question 0: is checkout healthy?" in request_text
    assert "[channel context package, omitted]" in request_text
    summary = response["content"][0]["text"]
    assert done[0].strategy == "summarize"
    assert done[0].digest == f"[Earlier in this thread (turn 1, summarized): {summary}]"
    assert texts(sent[starts[2]]["messages"][0])[0] == done[0].digest


@pytest.mark.slow
def test_compaction_off_never_compacts(data_dir: Path) -> None:
    settings = SessionSettings(compaction="off", **SMALL_WINDOW)
    with new_bot(data_dir, session_settings=settings) as bot:
        starts = run_turns(bot, 3)
        sent = bodies(bot)
    assert compactions(data_dir) == []
    assert not [b for b in sent if b.get("system") == SUMMARIZE_SYSTEM]
    last = sent[starts[-1]]
    assert CONTEXT_HEADER in texts(last["messages"][0])[0]  # turn 1's package, still there
    assert package_count(last) == 1


@pytest.mark.slow
def test_a_failed_summarize_call_does_not_cost_the_answer(data_dir: Path) -> None:
    """Compaction runs after the turn is logged; its own failure must not eat the reply."""
    settings = SessionSettings(compaction="summarize", **SMALL_WINDOW)
    with new_bot(data_dir, session_settings=settings) as bot:
        api = fake(bot)

        def fail_the_summary(body: dict[str, Any], response: dict[str, Any]) -> None:
            # Right after the answer of a turn that will compact: the summarize call (and
            # both of the SDK's retries) fail.
            if response.get("stop_reason") == "end_turn" and len(bot.runtime.runner.results):
                api.fail_next(3, status=500, retry_after=0.01)

        Responses(api, after=fail_the_summary)
        run_turns(bot, 2)
        summarize_calls = [b for b in bodies(bot) if b.get("system") == SUMMARIZE_SYSTEM]
        assert len(summarize_calls) == 3  # turn 2 compacts; the call and two retries failed
        results = bot.runtime.runner.results
        second = results[1]
        assert second.reply and OFFLINE_MARK in second.reply
        posted = [p["text"] for p in bot.slack.posted]
        assert not [t for t in posted if t.startswith("Sorry")], posted
        assert len(posted) == 2 and second.error is None


# -- 6. API failures -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("status", "retry_after"), [(529, None), (429, 0.05)])
def test_an_overloaded_or_rate_limited_api_is_retried_and_the_answer_posted(
    data_dir: Path, status: int, retry_after: float | None
) -> None:
    with new_bot(data_dir, cassette=[answer("Roll back to v41.")]) as bot:
        incident_thread(bot)
        fake(bot).fail_next(1, status=status, retry_after=retry_after)
        mention(bot, ts(10), "what should we do?", thread_ts=ROOT)
        sent = bodies(bot)
        (result,) = bot.runtime.runner.results
        assert len(sent) == 2 and sent[0] == sent[1]  # the SDK's retry, the same request
        assert result.error is None and result.usage["requests"] == 1
        assert [(p["thread_ts"], p["text"]) for p in bot.slack.posted] == [
            (ROOT, "Roll back to v41.")
        ]


@pytest.mark.slow
def test_a_failed_turn_posts_an_honest_note_loses_nothing_and_the_next_turn_catches_up(
    data_dir: Path,
) -> None:
    cassette = [answer("Roll back to v41.", 1), answer("Both: the rollback worked.", 2)]
    with new_bot(data_dir, cassette=cassette) as bot:
        incident_thread(bot)
        mention(bot, ts(10), "what should we do?", thread_ts=ROOT)
        echo_answers(bot)
        logged = log_entries(data_dir, ROOT)
        count = len(bodies(bot))

        # More failures than the client retries (2): the turn fails.
        fake(bot).fail_next(5, status=500, retry_after=0.01)
        mention(bot, ts(20), "did the rollback fix the eu-west-1 errors?", thread_ts=ROOT)
        failed = bot.runtime.runner.results[-1]
        assert len(bodies(bot)) == count + 3  # the request and two retries
        assert failed.error is not None and failed.reply is None
        note = bot.slack.posted[-1]
        assert note["thread_ts"] == ROOT
        assert note["text"].startswith("Sorry, I couldn't answer this one")
        assert len(note["text"]) < 200
        assert log_entries(data_dir, ROOT) == logged  # no half turn in the log

        # The next mention is answered (after the two faults left over) and catches up.
        say(bot, ts(25), "Errors are gone", user="U1", thread_ts=ROOT)
        mention(bot, ts(30), "and now?", thread_ts=ROOT)
        last = bot.runtime.runner.results[-1]
        assert last.error is None and last.reply == "Both: the rollback worked."
        assert bot.slack.posted[-1]["text"] == "Both: the rollback worked."
        sent = bodies(bot)
        assert len(sent) == count + 6
        new = sent[-1]["messages"][-1]
        delta, question = texts(new)
        assert delta.startswith(DELTA_HEAD)
        lines = delta.removeprefix(DELTA_HEAD).splitlines()
        assert len(lines) == 2
        assert lines[0].startswith(f"[{iso_from_ts(ts(20))}] Sam: ")
        assert lines[0].endswith("did the rollback fix the eu-west-1 errors?")
        assert lines[1] == f"[{iso_from_ts(ts(25))}] Sam: Errors are gone"
        assert question.endswith("and now?")
        assert len(sent[-1]["messages"]) == 3  # turn 1 + the new message: no trace of the failure

    turns = [e.turn for e in log_entries(data_dir, ROOT) if isinstance(e, MessageEntry)]
    assert turns == [1, 1, 2, 2]


# -- 7. the context recipe -------------------------------------------------------------------

# The snapshot's frame (the anchor, never cut) alone counts ~205 tokens here, so a budget of
# 200 could only ever hold the anchor; 400 leaves room for a few adjacent messages, not all 12.
SNAPSHOT_BUDGET = 400
RUNBOOK = "RUNBOOK: every checkout rollback needs the on-call lead's approval in #incidents."


def busy_thread(bot: OfflineBot) -> None:
    """A thread and a channel too big for the recipe's small budgets."""
    say(bot, ROOT, ROOT_TEXT, user="U1")
    for i in range(12):
        say(
            bot,
            ts(2 + i),
            f"Reply {i}: checked the load balancer logs for region {i}, the 502s come from "
            "the new payment adapter timing out after thirty seconds under load.",
            thread_ts=ROOT,
        )
    for i in range(12):
        say(bot, ts(20 + i), f"Channel chatter {i} about the quarterly planning offsite.")


def recipe_in(tmp_path: Path, yaml_text: str) -> RecipeRunner:
    """A recipe written to a fresh home directory, loaded as the bot loads it."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "context.yaml").write_text(yaml_text)
    return RecipeRunner(load_recipe(home), home=home, cwd=home)


@pytest.mark.slow
def test_a_recipe_journal_sends_only_its_last_turns_and_a_fresh_package(
    tmp_path: Path, data_dir: Path
) -> None:
    recipe = recipe_in(
        tmp_path,
        "sources:\n"
        "  - type: journal\n"
        "    max_iterations: 1\n"
        "  - type: channel_snapshot\n"
        "  - type: thread_context\n",
    )
    cassette = [answer("First.", 1), answer("Second.", 2), answer("Third.", 3)]
    with new_bot(data_dir, recipe=recipe, cassette=cassette) as bot:
        incident_thread(bot)
        for number, question in enumerate(["what broke?", "who is on it?", "is it fixed?"]):
            mention(bot, ts(10 + 10 * number), question, thread_ts=ROOT)
        first, second, third = bodies(bot)
    assert len(first["messages"]) == 1 and package_count(first) == 1
    assert len(second["messages"]) == 3 and package_count(second) == 1  # turn 1 is the last one
    # Turn 1, which carried the package, slid out of the journal: only turn 2 goes, and this
    # turn carries a fresh package.
    assert [m["role"] for m in third["messages"]] == ["user", "assistant", "user"]
    assert texts(third["messages"][0])[-1].endswith("who is on it?")
    assert texts(third["messages"][1]) == ["Second."]
    assert package_count(third) == 1 and CONTEXT_HEADER in texts(third["messages"][2])[0]


def test_a_recipe_adds_its_file_after_the_builtin_prompt_and_sets_the_budgets(
    tmp_path: Path, data_dir: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "runbook.md").write_text(RUNBOOK + "\n")
    (home / "context.yaml").write_text(
        "sources:\n"
        "  - type: file\n"
        "    id: runbook\n"
        "    path: runbook.md\n"
        "  - type: channel_snapshot\n"
        f"    budget_tokens: {SNAPSHOT_BUDGET}\n"
        "  - type: thread_context\n"
        "    budget_tokens: 300\n"
    )
    recipe = RecipeRunner(load_recipe(home), home=home, cwd=home)
    with new_bot(data_dir, recipe=recipe, cassette=[answer("Ask the on-call lead.")]) as bot:
        busy_thread(bot)
        mention(bot, ts(40), "can I roll back the payment adapter?", thread_ts=ROOT)
        (body,) = bodies(bot)
        (result,) = bot.runtime.runner.results

    assert result.error is None
    system = body["system"]
    assert [b["text"] for b in system] == [
        system_prompt(bot_user=BOT_USER),
        f"# Context Block: runbook\n\n{RUNBOOK}\n",
    ]
    assert system[0]["text"].startswith("CHANNEL CONTEXT")
    counter = default_counter()
    package = texts(body["messages"][0])
    snapshot_raw, snapshot = json_after(SNAPSHOT_JSON, package[0])
    thread_raw, thread = json_after(THREAD_JSON, package[1])
    assert counter.count(snapshot_raw) <= SNAPSHOT_BUDGET
    assert counter.count(thread_raw) <= 300
    # The budgets bit: the defaults (1,500 / 8,000) would have kept all of it.
    assert thread["truncation"]["total_replies"] == 12
    assert thread["truncation"]["included_replies"] < 12
    assert 0 < len(snapshot["adjacent"]) < 12
    # One build, with the recipe's budgets known first: the context the turn keeps (the
    # inspector's) is the one that was sent.
    assert result.context is not None and result.context.thread is not None
    assert len(result.context.thread.replies) == thread["truncation"]["included_replies"]


def test_a_recipes_snapshot_window_limits_the_adjacent_messages(
    tmp_path: Path, data_dir: Path
) -> None:
    """docs/recipe.md: ``window`` is "how many nearby messages to consider"."""
    recipe = recipe_in(
        tmp_path, "sources:\n  - type: channel_snapshot\n    window: 2\n  - type: thread_context\n"
    )
    with new_bot(data_dir, recipe=recipe, cassette=[answer("ok")]) as bot:
        for i in range(6):
            say(bot, ts(1 + i), f"Short note {i}", user="U1")
        mention(bot, ts(10), "anything new?")
        (body,) = bodies(bot)
    _, snapshot = json_after(SNAPSHOT_JSON, texts(body["messages"][0])[0])
    assert [a["snippet"] for a in snapshot["adjacent"]] == ["Short note 4", "Short note 5"]


def test_recipe_sources_are_loaded_at_session_start_not_on_every_turn(
    tmp_path: Path, data_dir: Path
) -> None:
    """docs/recipe.md: "Sources are loaded when a Claude session starts for a thread, and
    again when its context is re-attached after compaction." A system prompt that changes
    between turns also invalidates the whole prompt cache (system comes before messages)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "runbook.md").write_text("Runbook, first version.")
    (home / "context.yaml").write_text(
        "sources:\n  - type: file\n    path: runbook.md\n"
        "  - type: channel_snapshot\n  - type: thread_context\n  - type: journal\n"
    )
    recipe = RecipeRunner(load_recipe(home), home=home, cwd=home)
    with new_bot(data_dir, recipe=recipe, cassette=[answer("one", 1), answer("two", 2)]) as bot:
        incident_thread(bot)
        mention(bot, ts(10), "first question", thread_ts=ROOT)
        (home / "runbook.md").write_text("Runbook, second version.")
        mention(bot, ts(20), "second question", thread_ts=ROOT)
        first, second = bodies(bot)
    assert first["system"][1]["text"] == "# Context Block: runbook.md\n\nRunbook, first version."
    assert second["system"] == first["system"]


def test_an_invalid_recipe_names_the_source_and_the_field(tmp_path: Path) -> None:
    (tmp_path / "context.yaml").write_text(
        "sources:\n"
        "  - type: channel_snapshot\n"
        "    budget_tokens: 200\n"
        "  - type: thread_context\n"
        "    budget_tokens: -5\n"
    )
    with pytest.raises(RecipeError) as caught:
        load_recipe(tmp_path)
    assert str(caught.value).startswith(str(tmp_path / "context.yaml"))
    assert "sources[1].budget_tokens: must be a positive integer, got -5" in str(caught.value)


# -- 8. long replies -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_long_markdown_answer_is_posted_as_markdown_in_several_messages(
    data_dir: Path,
) -> None:
    sections = [
        f"## Step {n}\n\n**Check {n}**: "
        + " ".join(f"verify item {n}.{k} on the checkout dashboard." for k in range(40))
        for n in range(1, 17)
    ]
    markdown = "\n\n".join(sections)
    assert 25_000 <= len(markdown) <= 40_000
    with new_bot(data_dir, cassette=[answer(markdown)]) as bot:
        incident_thread(bot)
        mention(bot, ts(10), "give me the full checklist", thread_ts=ROOT)
        posts = bot.slack.posted  # each part streamed as its own message
        assert bot.slack.call_counts()["chat.stopStream"] == 3

    assert len(posts) == 3
    assert all(p.get("thread_ts") == ROOT for p in posts)
    chunks = [str(p["markdown_text"]) for p in posts]
    assert all(len(chunk) <= MARKDOWN_LIMIT for chunk in chunks)
    assert all(chunk.startswith("## Step") for chunk in chunks)  # split between sections
    assert "\n\n".join(chunks) == markdown  # nothing converted, nothing lost


# -- 9. the offline model --------------------------------------------------------------------


def offline_run(data_dir: Path) -> tuple[list[str], list[Any]]:
    with new_bot(data_dir) as bot:
        incident_thread(bot)
        mention(bot, ts(10), "is the staging database read-only?")
        return [p["text"] for p in bot.slack.posted], bot.runtime.runner.results


def test_the_offline_model_answers_from_channel_context_deterministically(tmp_path: Path) -> None:
    posted, results = offline_run(tmp_path / "one")
    again, _ = offline_run(tmp_path / "two")

    (result,) = results
    (call,) = result.tool_calls
    assert call.name == "channel_context" and not call.is_error
    found = read_context_output(call.output)
    assert found and found[0]["held"]  # in the snapshot: the model answers from its copy
    (text,) = posted
    assert "Staging database is read-only until Friday" in text
    assert text.endswith(OFFLINE_MARK)
    assert again == posted


# -- sanity of the helpers themselves ------------------------------------------------------


def test_log_entries_helper_reads_what_the_session_wrote(data_dir: Path) -> None:
    with new_bot(data_dir, cassette=[answer("ok")]) as bot:
        incident_thread(bot)
        mention(bot, ts(10), "status?", thread_ts=ROOT)
    entries = log_entries(data_dir, ROOT)
    assert isinstance(entries[0], SessionStarted) and entries[0].thread_ts == ROOT
    assert re.fullmatch(r"C0GENERAL1-\d+\.\d+", entries[0].session_id)
