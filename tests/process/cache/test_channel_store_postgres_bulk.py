"""``post_rows`` on PostgreSQL (one COPY a batch) leaves the store ``write`` leaves, for any
sequence of posts, edits, deletions and forgotten channels: the SQLite bulk test's steps and
state, on two schemas of a real server."""

from __future__ import annotations

import pytest
from chanctx.cache.channel_store import (
    ChannelForgotten,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PostgresChannelStore,
    StoreEvent,
    post_rows,
    row_of,
)
from hypothesis import HealthCheck, given, settings

from tests.support.postgres_server import PostgresServer, drop_schema, new_schema, postgres
from tests.unit.cache.test_channel_store_bulk import CHANNELS, TEAM, counts, state, steps, ts_of

__all__ = ["postgres"]


@pytest.mark.slow
@settings(
    deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=steps)
def test_post_rows_leaves_the_store_write_leaves(
    postgres: PostgresServer, plan: list[tuple[str, object]]
) -> None:
    schemas = new_schema(postgres), new_schema(postgres)
    by_write, in_bulk = (
        PostgresChannelStore(postgres.url, schema=s, pool_size=1, erase_interval=None)
        for s in schemas
    )
    try:
        for kind, arg in plan:
            if kind == "posts":
                assert isinstance(arg, list)
                for channel in CHANNELS:
                    mine = [m for m in arg if m.channel == channel]
                    if not mine:
                        continue
                    expected = by_write.write([MessagePosted(TEAM, m) for m in mine])
                    got = post_rows(in_bulk, TEAM, channel, [row_of(m) for m in mine])
                    assert counts(got) == counts(expected)
                    assert got.erased == expected.erased
                continue
            event: StoreEvent
            if kind == "edit":
                assert isinstance(arg, tuple)
                channel, second, word, at = arg
                event = MessageEdited(TEAM, channel, ts_of(second), word, ts_of(at))
            elif kind == "delete":
                assert isinstance(arg, tuple)
                channel, second = arg
                event = MessageDeleted(TEAM, channel, ts_of(second))
            else:
                event = ChannelForgotten(TEAM, str(arg))
            assert counts(by_write.write([event])) == counts(in_bulk.write([event]))
            assert state(in_bulk) == state(by_write)  # type: ignore[arg-type]
        assert state(in_bulk) == state(by_write)  # type: ignore[arg-type]
    finally:
        by_write.close()
        in_bulk.close()
        for schema in schemas:
            drop_schema(postgres, schema)
