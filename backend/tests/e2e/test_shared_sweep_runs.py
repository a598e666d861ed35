"""Acceptance 2 of issue 37, run end to end: a sweep of 8 small SAE members with `share` on 2
simulated 80 GiB devices runs 4 members a device at once and all succeed; without `share`, 2 at
once (one a device). Through the API, a real scheduler and a real worker (8 job slots, so the
worker is not what limits them); every 10 ms the test reads which members have a live rank
process on which device (DeviceMonitor: their launch records and contracts), not the table.

The members run on CPU, where an SAE whose estimate is a quarter of an 80 GiB GPU would need as
much host memory each. So the members are tiny and the API's CUDA context reserve is set to
15 GiB: each reserves its estimate (1.25 GiB) + 15 GiB = 16.25 GiB, 4 of which fit in the
device's usable 76 GiB and 5 do not, as small SAEs of 16-19 GiB would on a real 80 GiB GPU.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from e2e_helpers import DeviceMonitor, WorkerProcess, spawn_part, wait_status, worker_env
from fastapi.testclient import TestClient
from harness import TEST_NODE
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.engine.launch import threads_per_rank
from gpudeck.services.placement.recommend import usable_when_idle

GiB = 1024**3
CONTEXT_RESERVE = 15 * GiB
MEMBER = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 100,  # sharing: 1-2 s alone, 5-20 s for 8 on 2 cores; all 8 start within 2 s
    "metrics_interval": 1000,
    "checkpoint_interval": 100_000,
}
TERMINAL = {"succeeded", "failed", "cancelled", "lost", "timeout"}


class Occupancy(DeviceMonitor):
    """DeviceMonitor's reading every 10 ms, kept as the most members seen at once on each
    device and on both together."""

    def __init__(self, jobs_dir: Path) -> None:
        super().__init__(jobs_dir)
        self.most_per_device: Counter[int] = Counter()
        self.most_at_once = 0

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            on_device = self.sample()
            for index, jobs in on_device.items():
                self.most_per_device[index] = max(self.most_per_device[index], len(jobs))
            self.most_at_once = max(self.most_at_once, len(set().union(*on_device.values())))


@pytest.fixture
def two_shared_devices(api: TestClient, db: Session) -> None:
    """The test node keeps devices 0 and 1 (80 GiB each) and allows sharing them."""
    db.execute(text("DELETE FROM devices WHERE node = :n AND index >= 2"), {"n": TEST_NODE})
    db.execute(text("UPDATE nodes SET share_memory = true WHERE name = :n"), {"n": TEST_NODE})
    db.commit()


@pytest.fixture
def eight_slot_worker(
    e2e_settings: Settings, redis_client: redis.Redis, tmp_path: Path
) -> Iterator[WorkerProcess]:
    env = worker_env(e2e_settings, GPUDECK_SIMULATED_DEVICES="2x80GiB")
    worker = spawn_part(["worker", "--concurrency", "8"], env, tmp_path / "worker.log")
    worker.wait_ready()
    yield worker
    worker.stop(timeout_s=60)


def submit_sweep(api: TestClient, share: str) -> list[int]:
    # Whole devices: the pass starts two at once whatever their length; shorter runs keep the
    # four rounds brief.
    config = MEMBER if share == "memory" else {**MEMBER, "steps": 20}
    body = {
        "name": f"eight small {share}",
        "job": {"kind": "sae", "config": config, "count": 1, "share": share},
        "parameters": {"grid": {"seed": list(range(8))}},
        "max_parallel": 8,
    }
    created = api.post("/api/sweeps", json=body)
    assert created.status_code == 201, created.text
    return [int(m["job_id"]) for m in created.json()["members"]]


@pytest.mark.long
@pytest.mark.parametrize(
    ("share", "per_device", "at_once"), [("memory", 4, 8), ("exclusive", 1, 2)]
)
def test_a_sweep_of_eight_small_sae_members_runs_four_a_device_when_it_shares(
    api: TestClient,
    db: Session,
    e2e_settings: Settings,
    two_shared_devices: None,
    eight_slot_worker: WorkerProcess,
    start_scheduler: object,
    share: str,
    per_device: int,
    at_once: int,
) -> None:
    e2e_settings.cuda_context_reserve_bytes = CONTEXT_RESERVE  # the API's Submitter reads it
    start_scheduler()  # type: ignore[operator]
    occupancy = Occupancy(e2e_settings.data_dir / "jobs")
    occupancy.start()
    try:
        members = submit_sweep(api, share)
        for job_id in members:
            job = wait_status(api, job_id, TERMINAL, timeout_s=300)
            assert job["status"] == "succeeded", job["error"]
    finally:
        occupancy.stopped.set()
        occupancy.join()
    assert occupancy.most_per_device == {0: per_device, 1: per_device}
    assert occupancy.most_at_once == at_once
    contract = json.loads(
        (e2e_settings.data_dir / "jobs" / str(members[0]) / "contract.json").read_text()
    )
    if share == "memory":  # what each rank was held to (on CPU: the sampler's watchdog only)
        reserved = contract["reserved_bytes_per_device"]
        assert usable_when_idle(80 * GiB) // 5 < reserved <= usable_when_idle(80 * GiB) // 4
        assert contract["context_reserve_bytes"] == CONTEXT_RESERVE and contract["num_threads"] == 1
    else:  # one device's share of the cores: the member on the other device gets the rest
        assert contract["reserved_bytes_per_device"] is None
        assert contract["num_threads"] == threads_per_rank(1, node_devices=2)
