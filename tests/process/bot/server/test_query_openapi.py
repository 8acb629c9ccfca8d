"""The query API holds to its own OpenAPI description: schemathesis generates requests from
``/openapi.json`` and checks every answer over real HTTP (no 5xx, documented statuses, content
types and bodies that match their schemas)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from chanctx.bot.server.query_api import ApiKeys
from chanctx.bot.stores.profiles.local import LocalProfileStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.query_server import api_server, demo_replayed
from tests.unit.bot.server.test_query_api import ADMIN, INCIDENTS, READER


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    profiles = LocalProfileStore(tmp_path_factory.mktemp("openapi"))
    keys = ApiKeys({READER: [INCIDENTS], ADMIN: "*"})
    with demo_replayed() as bot, api_server(bot, keys, profiles) as server:
        yield server.origin


OPERATIONS = [
    ("POST", "/api/context/query"),
    ("GET", "/api/context/stream"),
    ("GET", "/api/profiles"),
    ("POST", "/api/profiles"),
    ("GET", "/api/profiles/{name}"),
    ("PUT", "/api/profiles/{name}"),
    ("DELETE", "/api/profiles/{name}"),
    ("GET", "/api/turns"),
    ("GET", "/api/playbook"),
]


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_every_answer_matches_the_description(origin: str, method: str, path: str) -> None:
    # schemathesis's own pytest plugin does not load under this pytest; its schema loader,
    # strategies and checks do, driven here by Hypothesis.
    operation = schemathesis.openapi.from_url(f"{origin}/openapi.json")[path][method]

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy())
        case.call_and_validate(headers={"Authorization": f"Bearer {ADMIN}"})

    check()


def test_the_description_names_every_route(origin: str) -> None:
    import json
    import urllib.request

    with urllib.request.urlopen(f"{origin}/openapi.json", timeout=10) as response:
        document = json.loads(response.read())
    assert set(document["paths"]) == {
        "/api/context/query", "/api/context/stream", "/api/profiles", "/api/profiles/{name}",
        "/api/turns", "/api/playbook",
    }  # fmt: skip
    assert "/api/context/ws" in document["info"]["description"]
    assert document["components"]["schemas"]["QueryBody"]["required"] == ["query", "channel"]
