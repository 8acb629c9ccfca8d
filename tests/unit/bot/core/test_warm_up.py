"""A channel's first load runs in the background: the answer waits at most its budget, the load
goes on, and answers meanwhile join the one load instead of starting another."""

from __future__ import annotations

import threading

from chanctx.bot.core.warm_up import BackgroundWarmUps


def test_an_answer_waits_at_most_its_budget_and_the_load_goes_on() -> None:
    warm_ups = BackgroundWarmUps()
    release, loaded = threading.Event(), threading.Event()
    loads: list[str] = []

    def load() -> None:
        loads.append("C1")
        release.wait(10)
        loaded.set()

    try:
        warm_ups.run("C1", load, wait=0.05)
        assert not loaded.is_set()  # answered before the load finished
        warm_ups.run("C1", load, wait=0.0)  # a second answer joins the load in flight
        release.set()
        assert loaded.wait(10)
        assert loads == ["C1"]
    finally:
        release.set()
        warm_ups.close()


def test_a_failed_load_does_not_fail_the_answer_and_the_next_use_loads_again() -> None:
    warm_ups = BackgroundWarmUps()
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise ConnectionError("slack down")

    try:
        warm_ups.run("C1", failing, wait=5.0)  # returns: the answer goes on with what it has
        warm_ups.run("C1", failing, wait=5.0)
        assert len(calls) == 2
    finally:
        warm_ups.close()
