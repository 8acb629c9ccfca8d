"""The PostgreSQL channel store against the same model as the SQLite one, on a real server.

The state machine is the SQLite store's (``test_channel_store_model.StoreMachine``): the same
rules, the same steps, the same invariants after each step. Only the store differs: each run has
a schema of its own, 'restart' closes the store and opens a new one on the same schema, and
"gone from disk" means gone from every file of the schema's tables, TOAST tables and indexes
(after a CHECKPOINT, so what the server holds in memory is in them).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chanctx.cache.channel_store import PostgresChannelStore
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, rule

from tests.support.postgres_server import PostgresServer, drop_schema, new_schema, postgres
from tests.unit.cache.test_channel_store_model import Model, StoreMachine

__all__ = ["postgres"]

_server: list[PostgresServer] = []


@pytest.fixture(autouse=True)
def _the_server(postgres: PostgresServer) -> Iterator[None]:
    _server[:] = [postgres]
    yield
    _server.clear()


class PostgresStoreMachine(StoreMachine):
    def __init__(self) -> None:
        RuleBasedStateMachine.__init__(self)
        self.server = _server[0]
        self.schema = new_schema(self.server)
        self.store = self._open()
        self.model = Model()
        self.counter = 0
        self.erased = set()
        self.words = {}

    def _open(self) -> PostgresChannelStore:
        # The erase pass runs when the store closes (a restart), where the disk is checked.
        return PostgresChannelStore(
            self.server.url, schema=self.schema, pool_size=2, erase_interval=3600.0
        )

    def teardown(self) -> None:
        self.store.close()
        drop_schema(self.server, self.schema)

    @rule()
    def restart(self) -> None:
        self.store.close()
        on_disk = self.server.relation_bytes(self.schema)
        for word in self.erased:
            assert word.encode() not in on_disk, f"erased text {word!r} is still on disk"
        for word in self.words.values():
            assert word.encode() in on_disk, f"stored text {word!r} is not on disk"
        self.store = self._open()


PostgresStoreMachine.TestCase.settings = settings(
    max_examples=15, stateful_step_count=20, deadline=None
)
test_postgres_store_equals_its_model = PostgresStoreMachine.TestCase
