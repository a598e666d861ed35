"""A real `gpudeck worker`, Postgres and Redis: jobs run to the end, and faults end them cleanly.

Every test checks that no process of the job is left (its process group is empty) and that the
job's devices are free again.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import psutil
from e2e_helpers import LEASE_S, WorkerProcess, launch_record, wait_status
from fastapi.testclient import TestClient
from safetensors.torch import load_file

from gpudeck.core.config import Settings
from gpudeck.engine.launch import group_alive

TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
SAE_CONFIG: dict[str, Any] = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 40,
    "metrics_interval": 5,
    "checkpoint_interval": 10,
    "seed": 1,
    "dataset": {
        "type": "synthetic",
        "num_features": 32,
        "active_features": 3,
        "num_samples": 100_000,
    },
}


def submit(api: TestClient, kind: str, config: dict[str, Any], devices: list[int]) -> int:
    response = api.post(
        "/api/jobs",
        json={"kind": kind, "config": config, "devices": [{"index": i} for i in devices]},
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def assert_nothing_left(settings: Settings, api: TestClient, job_id: int) -> None:
    pgid = launch_record(settings, job_id)["pgid"]
    deadline = time.monotonic() + 5
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(pgid), f"job {job_id}'s process group {pgid} still has processes"
    held = [g for g in api.get("/api/gpus").json() if g["held_by"]]
    assert not held, held


def test_sae_job_succeeds_with_metrics_and_checkpoints(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    job_id = submit(api, "sae", SAE_CONFIG, [0, 1])
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    assert job["progress"]["step"] == 40
    assert_nothing_left(e2e_settings, api, job_id)

    metrics = api.get(f"/api/jobs/{job_id}/metrics").json()["items"]
    assert [m["step"] for m in metrics] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert all("overall_loss" in m["metrics"] for m in metrics)

    checkpoints = api.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert [c["step"] for c in checkpoints] == [20, 30, 40]  # keep_checkpoints = 3
    for ckpt in checkpoints:
        root = e2e_settings.data_dir / ckpt["path"]
        weights = load_file(root / "sae_weights.safetensors")
        cfg = json.loads((root / "cfg.json").read_text())
        assert (cfg["d_in"], cfg["d_sae"]) == (16, 64)
        assert weights["W_enc"].shape == (16, 64) and weights["W_dec"].shape == (64, 16)
        assert weights["b_enc"].shape == (64,) and weights["b_dec"].shape == (16,)


def test_rank_that_raises_fails_the_job_with_its_traceback(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    config = {"steps": 500, "fail_at_step": 5, "fail_rank": 1, "step_sleep_s": 0.01}
    job_id = submit(api, "faulty", config, [2, 3])
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "failed"
    assert job["error"].startswith("rank 1 failed")
    assert "RuntimeError: injected failure at step 5" in job["error"]
    assert "Traceback" in job["error"]
    assert job["error_summary"] == "rank 1: RuntimeError: injected failure at step 5"
    assert_nothing_left(e2e_settings, api, job_id)


def test_a_sigkilled_rank_is_named_and_its_partial_checkpoint_removed(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    job_id = submit(api, "faulty", {"steps": 100_000, "step_sleep_s": 0.02}, [2, 3])
    wait_status(api, job_id, {"running"})
    while api.get(f"/api/jobs/{job_id}").json()["progress"]["step"] < 5:
        time.sleep(0.05)
    # What rank 0 leaves when it dies in the middle of writing a checkpoint.
    partial = e2e_settings.data_dir / "checkpoints" / str(job_id) / ".tmp-step_7-4242"
    partial.mkdir(parents=True)
    (partial / "sae_weights.safetensors").write_bytes(b"\0" * 1024)

    os.kill(launch_record(e2e_settings, job_id)["pids"][1], signal.SIGKILL)
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "failed"
    # Rank 0 then fails in gloo with an error of its own: the cause is rank 1's death.
    assert job["error"].startswith("rank 1 was killed by SIGKILL"), job["error"]
    assert_nothing_left(e2e_settings, api, job_id)
    assert not partial.exists()


def test_cancel_mid_run_writes_a_final_checkpoint(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
    job_id = submit(api, "sae", config, [0, 1])
    wait_status(api, job_id, {"running"})
    while api.get(f"/api/jobs/{job_id}").json()["progress"]["step"] < 10:
        time.sleep(0.1)
    assert api.post(f"/api/jobs/{job_id}/cancel").status_code == 200
    job = wait_status(api, job_id, TERMINAL, timeout_s=60)
    assert job["status"] == "cancelled", job["error"]
    checkpoints = api.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert len(checkpoints) == 1 and checkpoints[0]["step"] >= 10  # the final one
    assert_nothing_left(e2e_settings, api, job_id)


def test_sigkilled_worker_job_is_lost_and_not_run_twice(
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
    e2e_settings: Settings,
) -> None:
    start_scheduler()  # the reaper lives there, not in workers
    first = start_worker()
    job_id = submit(api, "faulty", {"steps": 100_000, "step_sleep_s": 0.02}, [4, 5])
    wait_status(api, job_id, {"running"})
    launched = launch_record(e2e_settings, job_id)
    worker = psutil.Process(first.proc.pid)
    forkservers = [p for p in worker.children() if "forkserver" in " ".join(p.cmdline())]
    ranks = [psutil.Process(pid) for pid in launched["pids"]]
    assert len(forkservers) == 1 and all(r.ppid() == forkservers[0].pid for r in ranks)
    first.proc.send_signal(signal.SIGKILL)  # the worker alone, not its group
    first.proc.wait()
    killed_at = time.monotonic()
    # Ranks watch the worker's lifeline pipe, the forkserver its parent (PR_SET_PDEATHSIG).
    _, alive = psutil.wait_procs([*forkservers, *ranks], timeout=5)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], alive
    job = wait_status(api, job_id, TERMINAL, timeout_s=LEASE_S + 30)
    assert job["status"] == "lost"
    assert time.monotonic() - killed_at < LEASE_S + 10
    assert_nothing_left(e2e_settings, api, job_id)

    restarted = start_worker()  # picks up queued jobs on start; this one is not queued
    time.sleep(2)
    assert api.get(f"/api/jobs/{job_id}").json()["status"] == "lost"
    assert launch_record(e2e_settings, job_id) == launched  # never launched again
    assert f"job {job_id}:" not in restarted.log()
