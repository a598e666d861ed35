"""A server process is ready when warm: /api/health answers 503 `warming` until the warm-up
(the memory estimate of the defaults, the database path) is done, then 200, so the first
submit after health does not wait for torch's import and the first trace. An app built for
tests does not wait. The warm-up is held back by holding the estimator's own lock, on empty
caches."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from gpudeck.core.config import Settings
from gpudeck.kinds.sae import memory
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.main import create_app


@pytest.fixture
def held_warm_up() -> Iterator[None]:
    """The warm-up's first trace waits until the test lets go; at the end, the warm-ups
    started are let go and finished (none is left running into the interpreter's exit)."""
    memory.clear_cache()
    with memory._TRACE_LOCK:
        yield
    for thread in threading.enumerate():
        if thread.name == "warm-up":
            thread.join(timeout=120)


def test_health_says_warming_until_the_process_is_warm(
    settings: Settings, held_warm_up: None
) -> None:
    with TestClient(create_app(settings, ready_when_warm=True)) as client:
        warming = client.get("/api/health")
        assert warming.status_code == 503 and warming.headers["retry-after"] == "1"
        assert warming.json()["status"] == "warming"
        memory._TRACE_LOCK.release()  # the warm-up traces the default config now
        try:
            assert client.app.state.warm.wait(timeout=120)  # type: ignore[attr-defined]
            ready = client.get("/api/health")
            assert ready.status_code == 200 and ready.json()["status"] == "ok"
        finally:
            memory._TRACE_LOCK.acquire()
    # what it warmed is what a submit of the defaults needs: no trace is left for it
    assert memory.estimate_key(SaeConfig(), 1, "cuda") in memory._ESTIMATES


def test_an_app_for_tests_is_healthy_while_it_warms(settings: Settings, held_warm_up: None) -> None:
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/health").status_code == 200
