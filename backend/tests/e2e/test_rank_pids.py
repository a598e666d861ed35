"""While a job runs, its ranks' PIDs are registered for the sampler (so NVML's process list
counts them as GPUDeck's, not external); when the job ends they are gone."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis
from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient
from test_job_lifecycle import SAE_CONFIG, submit

from gpudeck.core.config import Settings
from gpudeck.telemetry.stream import managed_pids


def test_rank_pids_are_registered_while_the_job_runs(
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    e2e_settings: Settings,
    redis_client: redis.Redis,
) -> None:
    start_worker()
    job_id = submit(api, "sae", {**SAE_CONFIG, "steps": 100_000}, [2, 5])
    wait_status(api, job_id, {"running"})
    node = e2e_settings.node_name
    deadline = time.monotonic() + 30
    while len(managed_pids(redis_client, node)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(managed_pids(redis_client, node).values()) == [
        (job_id, 0, "sae"),
        (job_id, 1, "sae"),
    ]
    api.post(f"/api/jobs/{job_id}/cancel")
    wait_status(api, job_id, {"cancelled"})
    assert managed_pids(redis_client, node) == {}
