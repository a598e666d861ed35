"""Cancel racing the worker's claim never lets two jobs' ranks run on one device.

Each trial submits a job on devices 0 and 1, cancels it 0-50 ms later (while the worker may be
claiming it), then submits a second job on the same devices as soon as the API accepts it. A
monitor thread watches the rank processes themselves (from each job's launch record), not the
allocation table: at no sampled moment may ranks of two jobs be alive.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient

from gpudeck.core.config import Settings

TRIALS = 30  # cancels spread over the 50 ms after a submit: about one every 1.7 ms
DEVICES = [{"index": 0}, {"index": 1}]
TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
LONG = {"steps": 100_000, "step_sleep_s": 0.02}
SHORT = {"steps": 10, "step_sleep_s": 0.02}


def _alive(pid: int) -> bool:
    """Running or sleeping, not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


class RankMonitor(threading.Thread):
    """Samples which jobs have a live rank, every few milliseconds, until stopped."""

    def __init__(self, jobs_dir: Path) -> None:
        super().__init__(daemon=True)
        self.jobs_dir = jobs_dir
        self.pids: dict[int, list[int]] = {}
        self.overlaps: list[set[int]] = []
        self.stopped = threading.Event()

    def _learn_new_launches(self) -> None:
        for record in self.jobs_dir.glob("*/launch.json"):
            job_id = int(record.parent.name)
            if job_id not in self.pids:
                # A record written a moment ago may not parse yet: read it next time.
                with contextlib.suppress(OSError, ValueError):
                    self.pids[job_id] = json.loads(record.read_text())["pids"]

    def run(self) -> None:
        while not self.stopped.wait(0.003):
            self._learn_new_launches()
            live = {job for job, pids in self.pids.items() if any(map(_alive, pids))}
            if len(live) > 1:
                self.overlaps.append(live)


def _submit_when_free(api: TestClient, config: dict[str, object]) -> int:
    deadline = time.monotonic() + 60
    while True:
        body = {"kind": "faulty", "config": config, "devices": DEVICES, "queue": False}
        response = api.post("/api/jobs", json=body)
        if response.status_code == 201:
            return int(response.json()["id"])
        assert response.status_code == 409, response.text
        assert time.monotonic() < deadline, f"devices still held: {response.text}"
        time.sleep(0.005)


@pytest.mark.long
def test_cancel_during_claim_never_double_books(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    monitor = RankMonitor(e2e_settings.data_dir / "jobs")
    monitor.start()
    rng = random.Random(11)
    try:
        for _ in range(TRIALS):
            first = _submit_when_free(api, LONG)
            time.sleep(rng.uniform(0, 0.05))
            assert api.post(f"/api/jobs/{first}/cancel").status_code == 200
            second = _submit_when_free(api, SHORT)
            assert wait_status(api, second, TERMINAL)["status"] == "succeeded"
            assert wait_status(api, first, TERMINAL)["status"] == "cancelled"
    finally:
        monitor.stopped.set()
        monitor.join()
    assert monitor.overlaps == [], f"ranks of two jobs alive at once: {monitor.overlaps[:5]}"
    assert monitor.pids, "the monitor saw no launch at all"
