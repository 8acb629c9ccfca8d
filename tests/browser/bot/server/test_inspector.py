"""The inspector in a real headless Chromium: the demo's turns newest first with their token
bars, cache share, tool calls and replies, and the query box running the context API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server.query_api import ApiKeys
from playwright.sync_api import Page, sync_playwright

from tests.support.chromium import ensure_chromium
from tests.support.query_server import api_server, demo_replayed
from tests.unit.bot.server.test_query_api import INCIDENTS, READER


@pytest.fixture(scope="module")
def page_of() -> Iterator[Any]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=ensure_chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def demo_bot() -> Iterator[OfflineBot]:
    with demo_replayed(claude=True) as bot:
        yield bot


def test_the_inspector_shows_the_turns_and_runs_a_query(page_of: Any, demo_bot: OfflineBot) -> None:
    with api_server(demo_bot, None) as server:
        page: Page = page_of.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{server.origin}/inspector")
        page.wait_for_selector(".turn")
        turns = page.locator(".turn")
        assert turns.count() == 2
        newest, oldest = (turns.nth(i).inner_text() for i in (0, 1))
        results = demo_bot.runtime.runner.results
        # Newest first: the second mention's turn leads.
        assert results[1].turn.anchor_ts in newest and results[0].turn.anchor_ts in oldest
        assert "#incidents" in newest and "from the prompt cache" in newest
        assert "<@" not in newest and "@chanctx" in newest  # mentions as Slack shows them
        # Per turn: snapshot, thread, recipe, tools and total, each against its budget.
        assert page.locator(".turn .bar").count() == 10
        for name in ("snapshot", "thread", "recipe", "tools", "total"):
            assert page.locator(f".turn .bar.{name}").count() == 2
            assert f"{name}: " in newest
        assert "recipe: 0 (no budget) tokens" in newest  # the demo has no context.yaml
        # Slack reads: the first mention warmed the channel; the second was served from memory.
        assert "conversations.history (1)" in oldest and "pins.list" not in oldest
        assert "Slack reads: none (served from the caches)" in newest
        assert "sent: snapshot" in newest and "thread (" in oldest
        assert page.locator(".turn details.tool").count() >= 1  # the tool calls, openable
        assert "(offline model" in page.locator(".turn .reply").first.inner_text()
        page.fill("#query", "rollback checkout")
        page.select_option("#channel", INCIDENTS)
        page.click("button[type=submit]")
        page.wait_for_selector("tr.chunk")
        assert page.locator("tr.chunk").count() >= 1
        assert "tokens" in page.locator("#answer").inner_text()
        # The playbook panel: what #incidents learned during the replay, each with its state.
        page.wait_for_selector("#playbook .bullet")
        bullets = page.locator("#playbook .bullet")
        assert bullets.count() == len(demo_bot.playbooks.store.bullets(INCIDENTS)) >= 1  # type: ignore[union-attr]
        assert (
            "unverified" in bullets.first.inner_text()
            and "[conventions-" in bullets.first.inner_text()
        )
        assert errors == []
        page.close()


def test_with_keys_the_page_asks_for_one_and_shows_only_its_channels(
    page_of: Any, demo_bot: OfflineBot
) -> None:
    keys = ApiKeys({READER: ["C0NOTHING1"]})  # a key for a channel with no turns
    with api_server(demo_bot, keys) as server:
        page: Page = page_of.new_page()
        page.on("dialog", lambda dialog: dialog.accept(READER))
        page.goto(f"{server.origin}/inspector")
        page.wait_for_function("document.getElementById('turns').textContent !== 'Loading…'")
        assert page.locator(".turn").count() == 0
        assert page.locator("#turns").inner_text() == "No turns yet."
        page.close()
