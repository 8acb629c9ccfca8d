"""The SQLite channel store equals a plain in-memory model after any sequence of events.

Posts (copies of a ts included, some older than an edit already seen), edits, deletions, thread
replies, reactions, forgetting a channel or a user, and restarts (the real file closed and opened
again). After every step every key reads back as the model says; after every restart no text
that was deleted, edited away or forgotten is anywhere in the bytes of the data dir.

The same machine runs on a store that indexes after the commit (``index_after``), its indexing
batches a rule of their own: erased text is never found, whether it was indexed before its
deletion or not, and a live message written since the last batch is found once it has run.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from chanctx.cache import ts_key
from chanctx.cache.channel_store import (
    ChannelForgotten,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    ReactionChanged,
    SqliteChannelStore,
    UserForgotten,
)
from chanctx.context import Message, Reaction
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

BASE = 1_700_000_000
TEAMS = ("T1", "T2")
CHANNELS = ("C1", "C2")
USERS = ("U1", "U2", "U3")

Key = tuple[str, str, int]


def ts_of(second: int) -> str:
    return f"{BASE + second}.000000"


def version(message: Message) -> int:
    return 0 if message.edited_ts is None else ts_key(message.edited_ts)


@dataclass
class Model:
    """What the store should hold: the rules of ``channel_store._records``, plainly."""

    messages: dict[Key, Message] = field(default_factory=dict)  # tombstones: deleted=True
    erased_through: dict[tuple[str, str], int] = field(default_factory=dict)

    def post(self, team: str, message: Message) -> None:
        key = (team, message.channel, ts_key(message.ts))
        through = self.erased_through.get((team, message.channel))
        if through is not None and key[2] <= through:
            return
        old = self.messages.get(key)
        if old is not None and (old.deleted or version(message) < version(old)):
            return
        self.messages[key] = message

    def edit(self, team: str, channel: str, ts: str, text: str, edited_ts: str) -> None:
        key = (team, channel, ts_key(ts))
        old = self.messages.get(key)
        if old is None or old.deleted or ts_key(edited_ts) < version(old):
            return
        self.messages[key] = old.model_copy(update={"text": text, "edited_ts": edited_ts})

    def delete(self, team: str, channel: str, ts: str) -> None:
        key = (team, channel, ts_key(ts))
        old = self.messages.get(key)
        if old is not None and old.deleted:
            return
        stone = Message.model_construct(channel=channel, ts=ts, deleted=True)
        if old is not None and old.thread_ts is not None:
            stone = stone.model_copy(
                update={"thread_ts": old.thread_ts, "reply_count": old.reply_count}
            )
        self.messages[key] = stone

    def react(self, team: str, channel: str, ts: str, name: str, user: str, added: bool) -> None:
        key = (team, channel, ts_key(ts))
        old = self.messages.get(key)
        if old is None or old.deleted:
            return
        users = {r.name: list(r.users) for r in old.reactions}
        if added and user not in users.get(name, []):
            users.setdefault(name, []).append(user)
        elif not added and user in users.get(name, []):
            users[name].remove(user)
        reactions = tuple(
            Reaction(name=n, count=len(u), users=tuple(u)) for n, u in users.items() if u
        )
        self.messages[key] = old.model_copy(update={"reactions": reactions})

    def forget_channel(self, team: str, channel: str) -> None:
        keys = [k for k in self.messages if k[:2] == (team, channel)]
        through = max([k[2] for k in keys] + [self.erased_through.get((team, channel), -1)])
        for key in keys:
            del self.messages[key]
        if through >= 0:
            self.erased_through[(team, channel)] = through

    def forget_user(self, team: str, user: str) -> None:
        for key, message in list(self.messages.items()):
            if key[0] == team and message.user_id == user and not message.deleted:
                self.delete(team, message.channel, message.ts)

    def live(self, team: str, channel: str) -> list[Message]:
        keys = sorted(k for k in self.messages if k[:2] == (team, channel))
        return [self.messages[k] for k in keys if not self.messages[k].deleted]


class StoreMachine(RuleBasedStateMachine):
    index_after: float | None = None  # the store's: None indexes in each write's transaction

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="chanctx-store-model-"))
        self.store = self._open()
        self.model = Model()
        self.counter = 0
        self.erased: set[str] = set()  # unique words of text that must be gone from disk
        self.words: dict[Key, str] = {}  # the unique word of the text each key holds now
        self.unindexed: set[str] = set()  # words written since the last indexing batch

    def _open(self) -> SqliteChannelStore:
        return SqliteChannelStore(self.dir, index_after=self.index_after)

    def _wrote(self, word: str) -> None:
        if self.index_after is not None:
            self.unindexed.add(word)

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir)

    def _word(self) -> str:
        self.counter += 1
        return f"uniq{self.counter}qz"

    def _replaced(self, key: Key) -> None:
        """The text at ``key`` is no longer the stored one: its word must leave the disk."""
        old = self.model.messages.get(key)
        word = self.words.get(key)
        if word is not None and (old is None or old.deleted or word not in old.text):
            self.erased.add(word)
            del self.words[key]

    @rule(
        team=st.sampled_from(TEAMS),
        channel=st.sampled_from(CHANNELS),
        second=st.integers(0, 12),
        root=st.none() | st.integers(0, 12),
        edited=st.none() | st.integers(100, 104),
        user=st.sampled_from(USERS),
        broadcast=st.booleans(),
    )
    def post(
        self,
        team: str,
        channel: str,
        second: int,
        root: int | None,
        edited: int | None,
        user: str,
        broadcast: bool,
    ) -> None:
        word = self._word()
        is_reply = root is not None and root != second
        message = Message(
            channel=channel,
            ts=ts_of(second),
            thread_ts=ts_of(root) if is_reply and root is not None else None,
            user_id=user,
            text=f"note {word} about deploys",
            edited_ts=None if edited is None else ts_of(edited),
            is_broadcast=is_reply and broadcast,
        )
        self.store.write([MessagePosted(team, message)])
        key = (team, channel, ts_key(message.ts))
        self.model.post(team, message)
        if self.model.messages.get(key) == message:
            if key in self.words:
                self.erased.add(self.words[key])
            self.words[key] = word
            self._wrote(word)

    @rule(
        team=st.sampled_from(TEAMS),
        channel=st.sampled_from(CHANNELS),
        second=st.integers(0, 12),
        edited=st.integers(100, 104),
    )
    def edit(self, team: str, channel: str, second: int, edited: int) -> None:
        word = self._word()
        text = f"edited {word}"
        self.store.write([MessageEdited(team, channel, ts_of(second), text, ts_of(edited))])
        key = (team, channel, ts_key(ts_of(second)))
        self.model.edit(team, channel, ts_of(second), text, ts_of(edited))
        stored = self.model.messages.get(key)
        if stored is not None and stored.text == text:
            if key in self.words:
                self.erased.add(self.words[key])
            self.words[key] = word
            self._wrote(word)

    @rule(team=st.sampled_from(TEAMS), channel=st.sampled_from(CHANNELS), second=st.integers(0, 12))
    def delete(self, team: str, channel: str, second: int) -> None:
        self.store.write([MessageDeleted(team, channel, ts_of(second))])
        self.model.delete(team, channel, ts_of(second))
        self._replaced((team, channel, ts_key(ts_of(second))))

    @rule(
        team=st.sampled_from(TEAMS),
        channel=st.sampled_from(CHANNELS),
        second=st.integers(0, 12),
        name=st.sampled_from(["eyes", "tada"]),
        user=st.sampled_from(USERS),
        added=st.booleans(),
    )
    def react(
        self, team: str, channel: str, second: int, name: str, user: str, added: bool
    ) -> None:
        ts = ts_of(second)
        self.store.write([ReactionChanged(team, channel, ts, name, user, added)])
        self.model.react(team, channel, ts, name, user, added)

    @rule(team=st.sampled_from(TEAMS), channel=st.sampled_from(CHANNELS))
    def forget_channel(self, team: str, channel: str) -> None:
        self.store.write([ChannelForgotten(team, channel)])
        self.model.forget_channel(team, channel)
        for key in [k for k in self.words if k[:2] == (team, channel)]:
            self._replaced(key)

    @rule(team=st.sampled_from(TEAMS), user=st.sampled_from(USERS))
    def forget_user(self, team: str, user: str) -> None:
        self.store.write([UserForgotten(team, user)])
        self.model.forget_user(team, user)
        for key in [k for k in self.words if k[0] == team]:
            self._replaced(key)

    @rule()
    def restart(self) -> None:
        self.store.close()
        on_disk = b"".join(p.read_bytes() for p in self.dir.iterdir() if p.is_file())
        for word in self.erased:
            assert word.encode() not in on_disk, f"erased text {word!r} is still on disk"
        for word in self.words.values():
            assert word.encode() in on_disk, f"stored text {word!r} is not on disk"
        self.store = self._open()
        if self.index_after is not None:
            self.unindexed.clear()  # close indexed what waited

    @precondition(lambda self: self.erased)
    @invariant()
    def erased_text_is_not_found(self) -> None:
        for team in TEAMS:
            for channel in CHANNELS:
                found = self.store.search_candidates(team, channel, sorted(self.erased), 50)
                assert not found, f"search found erased text in {team}/{channel}: {found}"

    @invariant()
    def store_equals_model(self) -> None:
        for key, expected in self.model.messages.items():
            assert self.store.get(key[0], key[1], expected.ts) == expected
        for team in TEAMS:
            for channel in CHANNELS:
                live = self.model.live(team, channel)
                assert self.store.messages(team, channel) == live
                for root in {m.thread_ts for m in live if m.is_reply}:
                    assert root is not None
                    expected_replies = [m for m in live if m.is_reply and m.thread_ts == root]
                    assert self.store.replies(team, channel, root) == expected_replies
                    stored_root = self.store.get(team, channel, root)
                    assert self.store.thread(team, channel, root) == (stored_root, expected_replies)
                timeline = [m for m in live if m.in_channel]
                assert self.store.messages(team, channel, scope="timeline") == timeline
        for team, channel in {(k[0], k[1]) for k in self.model.messages}:
            for key in [k for k in self.model.messages if k[:2] == (team, channel)]:
                if not self.model.messages[key].deleted:
                    word = self.words.get(key)
                    if word is not None:
                        ts = self.model.messages[key].ts
                        found = self.store.search_candidates(team, channel, [word], 5)
                        if self.index_after is not None and word in self.unindexed:
                            # its indexing batch has not run: either is right
                            assert [c.ts for c in found] in ([], [ts])
                        else:
                            assert [c.ts for c in found] == [ts]


StoreMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25)
# A state machine over a real SQLite file, restarts included: slow by nature (the fast subset
# keeps the store's example tests, tests/unit/cache/test_channel_store.py).
test_store_equals_its_model = pytest.mark.slow(StoreMachine.TestCase)


class DeferredStoreMachine(StoreMachine):
    """The store indexing after the commit; its batches run when this machine says."""

    index_after = math.inf

    @rule()
    def index(self) -> None:
        self.store.index_pending()
        self.unindexed.clear()


DeferredStoreMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25)
test_deferred_store_equals_its_model = pytest.mark.slow(DeferredStoreMachine.TestCase)
