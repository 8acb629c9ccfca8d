"""``post_rows`` on PostgreSQL (one COPY a batch) leaves the store ``write`` leaves, for any
sequence of posts, edits, deletions and forgotten channels: the SQLite bulk test's steps and
state, on two schemas of a real server."""

from __future__ import annotations

import pytest
from chanctx.cache.channel_store import PostgresChannelStore
from hypothesis import HealthCheck, given, settings

from tests.support.postgres_server import PostgresServer, drop_schema, new_schema, postgres
from tests.unit.cache.test_channel_store_bulk import play, steps

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
        play(plan, by_write, in_bulk)
    finally:
        by_write.close()
        in_bulk.close()
        for schema in schemas:
            drop_schema(postgres, schema)
