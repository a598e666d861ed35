"""Cancel racing the worker's claim never lets two jobs' ranks run on one device.

Each trial submits a job on a pair of devices, cancels it 0-50 ms later (while the worker may be
claiming it), then submits a second job on the same devices as soon as the API accepts it. The
trials run in two lanes side by side, one on devices 0 and 1 and one on devices 2 and 3 (a trial
is mostly waiting on its ranks to start and stop, so two lanes take half the time of one and
keep the worker busier while it claims). A monitor samples the rank processes themselves (each
job's launch record and its devices from its launch contract), not the allocation table: at no
sampled moment may ranks of two jobs be alive on one device.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from e2e_helpers import DeviceMonitor, WorkerProcess, wait_status
from fastapi.testclient import TestClient

from gpudeck.core.config import Settings
from gpudeck.scheduler.wake import conninfo
from gpudeck.services.jobs.state import WAKE_CHANNEL

TRIALS = 30  # cancels spread over the 50 ms after a submit: about one every 1.7 ms
LANES = ((0, 1), (2, 3))  # two jobs at most in each: within the worker's 4 slots
TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
LONG = {"steps": 100_000, "step_sleep_s": 0.02}
SHORT = {"steps": 10, "step_sleep_s": 0.02}
# A bound on a wait for a release (each comes within a second or two): a wake-up lost to a
# dropped connection costs a retry, never the test.
WAKE_TIMEOUT_S = 1.0


def _submit_when_free(
    api: TestClient, wakes: psycopg.Connection, config: dict[str, object], lane: tuple[int, ...]
) -> int:
    """Submitted the moment the API accepts it: after a 409, again as soon as a release commits.
    The product NOTIFYs the scheduler's channel in the transaction that frees devices, and
    `wakes` LISTENs on it from before the first try, so no release is missed; a retry every
    5 ms instead spent ~20 s of the test's CPU on 409s (other lanes' wake-ups only cost a try)."""
    deadline = time.monotonic() + 60
    devices = [{"index": i} for i in lane]
    while True:
        body = {"kind": "faulty", "config": config, "devices": devices, "queue": False}
        response = api.post("/api/jobs", json=body)
        if response.status_code == 201:
            return int(response.json()["id"])
        assert response.status_code == 409, response.text
        assert time.monotonic() < deadline, f"devices still held: {response.text}"
        for _ in wakes.notifies(timeout=WAKE_TIMEOUT_S, stop_after=1):
            pass


def _trials(api: TestClient, lane: tuple[int, ...], trials: int, seed: int, url: str) -> None:
    rng = random.Random(seed)
    with psycopg.connect(conninfo(url), autocommit=True) as wakes:
        wakes.execute(f"LISTEN {WAKE_CHANNEL}")
        for _ in range(trials):
            _trial(api, wakes, lane, rng)


def _trial(
    api: TestClient, wakes: psycopg.Connection, lane: tuple[int, ...], rng: random.Random
) -> None:
    first = _submit_when_free(api, wakes, LONG, lane)
    time.sleep(rng.uniform(0, 0.05))
    assert api.post(f"/api/jobs/{first}/cancel").status_code == 200
    second = _submit_when_free(api, wakes, SHORT, lane)
    assert wait_status(api, second, TERMINAL)["status"] == "succeeded"
    assert wait_status(api, first, TERMINAL)["status"] == "cancelled"


@pytest.mark.long
def test_cancel_during_claim_never_double_books(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    url = e2e_settings.sqlalchemy_url
    monitor = DeviceMonitor(e2e_settings.data_dir / "jobs", every_s=0.003)
    monitor.start()
    try:
        with ThreadPoolExecutor(len(LANES)) as pool:
            lanes = [
                pool.submit(_trials, api, lane, TRIALS // len(LANES), seed, url)
                for seed, lane in enumerate(LANES, start=11)
            ]
            for lane in lanes:
                lane.result()  # a failed assertion in a lane fails the test here
    finally:
        monitor.stopped.set()
        monitor.join()
    assert monitor.overlaps == [], f"ranks of two jobs on one device: {monitor.overlaps[:5]}"
    assert monitor.ranks, "the monitor saw no launch at all"
    seen = {index for _, indices in monitor.ranks.values() for index in indices}
    assert seen == {i for lane in LANES for i in lane}, f"launches seen on devices {seen} only"
