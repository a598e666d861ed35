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

import pytest
from e2e_helpers import DeviceMonitor, WorkerProcess, wait_status
from fastapi.testclient import TestClient

from gpudeck.core.config import Settings

TRIALS = 30  # cancels spread over the 50 ms after a submit: about one every 1.7 ms
LANES = ((0, 1), (2, 3))  # two jobs at most in each: within the worker's 4 slots
TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
LONG = {"steps": 100_000, "step_sleep_s": 0.02}
SHORT = {"steps": 10, "step_sleep_s": 0.02}


def _submit_when_free(api: TestClient, config: dict[str, object], lane: tuple[int, ...]) -> int:
    deadline = time.monotonic() + 60
    devices = [{"index": i} for i in lane]
    while True:
        body = {"kind": "faulty", "config": config, "devices": devices, "queue": False}
        response = api.post("/api/jobs", json=body)
        if response.status_code == 201:
            return int(response.json()["id"])
        assert response.status_code == 409, response.text
        assert time.monotonic() < deadline, f"devices still held: {response.text}"
        time.sleep(0.005)


def _trials(api: TestClient, lane: tuple[int, ...], trials: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(trials):
        first = _submit_when_free(api, LONG, lane)
        time.sleep(rng.uniform(0, 0.05))
        assert api.post(f"/api/jobs/{first}/cancel").status_code == 200
        second = _submit_when_free(api, SHORT, lane)
        assert wait_status(api, second, TERMINAL)["status"] == "succeeded"
        assert wait_status(api, first, TERMINAL)["status"] == "cancelled"


@pytest.mark.long
def test_cancel_during_claim_never_double_books(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    monitor = DeviceMonitor(e2e_settings.data_dir / "jobs", every_s=0.003)
    monitor.start()
    try:
        with ThreadPoolExecutor(len(LANES)) as pool:
            lanes = [
                pool.submit(_trials, api, lane, TRIALS // len(LANES), seed)
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
