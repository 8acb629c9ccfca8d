"""Agent profiles over the query API: created, read, replaced, deleted, persisted across a
restart, and taken by queries for the fields they omit (an unknown one says it fell back)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.server.query_api import ApiKeys
from chanctx.bot.stores.profiles.local import LocalProfileStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.query_server import api_server, demo_replayed
from tests.unit.bot.server.test_query_api import ADMIN, INCIDENTS, READER

Served = tuple[str, Path]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("profiles")
    keys = ApiKeys({READER: [INCIDENTS], ADMIN: "*"})
    with demo_replayed() as bot, api_server(bot, keys, LocalProfileStore(data)) as server:
        yield server.origin, data


def call(method: str, url: str, body: Any = None, key: str | None = READER) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return int(response.status), json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        with error:
            text = error.read()
            return int(error.code), json.loads(text) if text else None


def test_a_profile_is_created_read_replaced_and_deleted(served: Served) -> None:
    origin, data = served
    profile = {"name": "triage-bot", "token_budget": 300, "preferred_format": "json",
               "type_filters": ["thread"]}  # fmt: skip
    assert call("POST", f"{origin}/api/profiles", profile)[0] == 201
    assert call("POST", f"{origin}/api/profiles", profile)[0] == 409  # exists: PUT replaces
    status, got = call("GET", f"{origin}/api/profiles/triage-bot")
    assert status == 200 and got["token_budget"] == 300 and got["context_window"] == 200_000
    assert [p["name"] for p in call("GET", f"{origin}/api/profiles")[1]] == ["triage-bot"]
    fields = {k: v for k, v in profile.items() if k != "name"}  # PUT: the path names it
    wider = {**fields, "token_budget": 900}
    assert call("PUT", f"{origin}/api/profiles/triage-bot", wider)[0] == 200
    assert LocalProfileStore(data).get("triage-bot") is not None  # on disk: a restart keeps it
    assert LocalProfileStore(data).get("triage-bot").token_budget == 900  # type: ignore[union-attr]
    named = {**wider, "name": "other"}  # another name in a PUT body is refused, not obeyed
    status, body = call("PUT", f"{origin}/api/profiles/triage-bot", named)
    assert status == 422 and body["fields"][0]["field"] == "name"
    assert "'other'" in body["error"] and "'triage-bot'" in body["error"]
    assert call("GET", f"{origin}/api/profiles/other")[0] == 404
    # GET, edit, PUT: the body repeats its own name, and that is accepted.
    _, fetched = call("GET", f"{origin}/api/profiles/triage-bot")
    status, body = call(
        "PUT", f"{origin}/api/profiles/triage-bot", {**fetched, "token_budget": 700}
    )
    assert status == 200 and body == {**fetched, "token_budget": 700}
    assert call("DELETE", f"{origin}/api/profiles/triage-bot")[0] == 204
    assert call("GET", f"{origin}/api/profiles/triage-bot")[0] == 404
    assert call("DELETE", f"{origin}/api/profiles/triage-bot")[0] == 404
    assert call("GET", f"{origin}/api/profiles", key=None)[0] == 401


def test_a_query_takes_its_profile_for_what_it_omits(served: Served) -> None:
    origin, _ = served
    profile = {"token_budget": 200, "preferred_format": "text"}
    assert call("PUT", f"{origin}/api/profiles/terse", profile)[0] in (200, 201)
    query = {"query": "rollback", "channel": INCIDENTS, "profile": "terse"}
    status, body = call("POST", f"{origin}/api/context/query", query)
    assert status == 200 and body["profile_fallback"] is False
    assert (body["token_budget"], body["format"]) == (200, "text")
    assert body["total_tokens"] <= 200
    own = {**query, "token_budget": 700}  # a field the query gives wins over the profile
    assert call("POST", f"{origin}/api/context/query", own)[1]["token_budget"] == 700
    unknown = {**query, "profile": "nobody"}
    status, body = call("POST", f"{origin}/api/context/query", unknown)
    assert status == 200 and body["profile_fallback"] is True
    assert (body["token_budget"], body["format"]) == (2_000, "markdown")  # the defaults


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget=st.integers(min_value=16, max_value=200_000),
    fmt=st.sampled_from(["json", "markdown", "text"]),
    filters=st.lists(st.sampled_from(["message", "thread"]), unique=True),
    window=st.integers(min_value=1_000, max_value=2_000_000),
)
def test_profiles_round_trip_through_the_api(
    served: Served, budget: int, fmt: str, filters: list[str], window: int
) -> None:
    origin, _ = served
    profile = {"token_budget": budget, "preferred_format": fmt, "type_filters": filters,
               "context_window": window}  # fmt: skip
    assert call("PUT", f"{origin}/api/profiles/rt", profile)[0] in (200, 201)
    assert call("GET", f"{origin}/api/profiles/rt")[1] == {**profile, "name": "rt"}
