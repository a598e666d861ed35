"""Jobs on the real test cluster through GPUDeck: submitted through the API, handed to Slurm by
the executor's pass (scheduler/slurm_pass.py), followed to their end, with their ranks' metrics,
logs and checkpoints stored as on GPUDeck's own nodes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
from fastapi.testclient import TestClient
from slurm.cluster import PARTITION, SlurmCluster
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.scheduler.slurm_pass import SlurmExecutor
from gpudeck.services.executors import slurm_target

SAE_CONFIG: dict[str, Any] = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 30,
    "metrics_interval": 10,
    "checkpoint_interval": 30,
    "seed": 1,
    "dataset": {"type": "synthetic", "num_features": 32, "active_features": 3,
                "num_samples": 100_000},
}  # fmt: skip
TERMINAL = {"succeeded", "failed", "cancelled", "timeout", "lost"}


@dataclass
class PassContext:
    settings: Settings
    sessions: sessionmaker[Session]
    redis: redis.Redis


@pytest.fixture
def executor(
    settings: Settings, session_factory: sessionmaker[Session], redis_client: redis.Redis
) -> Iterator[SlurmExecutor]:
    """The executor's passes, every 0.3 s in a thread, as the active scheduler runs them."""
    run = SlurmExecutor()
    ctx = PassContext(settings, session_factory, redis_client)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.3):
            run.run_pass(ctx)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield run
    stop.set()
    thread.join(timeout=60)
    for follower in run.followers.values():
        follower.close()


@pytest.fixture
def lab(client: TestClient, slurm_cluster: SlurmCluster, settings: Settings) -> str:
    slurm_target.FACTS.forget()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    body = {
        "name": "lab", "partitions": [PARTITION], "shared_dir": str(settings.data_dir),
        "slurm_conf": str(slurm_cluster.conf),
    }  # fmt: skip
    added = client.post("/api/clusters", json=body)
    assert added.status_code == 201, added.text
    return "lab"


def wait_job(client: TestClient, job_id: int, done: set[str], timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in done:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def test_an_sae_job_on_two_slurm_gpus_runs_to_success_with_its_metrics_logs_and_checkpoint(
    client: TestClient, lab: str, executor: SlurmExecutor, settings: Settings
) -> None:
    sent = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE_CONFIG, "count": 2, "cluster": lab}
    )
    assert sent.status_code == 201, sent.text
    job_id = sent.json()["id"]
    assert sent.json()["cluster"] == "lab" and sent.json()["devices"] == []
    job = wait_job(client, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    assert job["slurm_job_id"] and job["slurm"]["attempts"] == 1
    assert job["slurm"]["state"] == "COMPLETED" and job["slurm"]["partition"] == PARTITION
    # Each rank saw the GPUs Slurm gave the job on its node, and ran on CPU (fake devices).
    for rank in (0, 1):
        log = client.get(f"/api/jobs/{job_id}/logs", params={"rank": rank, "tail": 100_000})
        assert log.status_code == 200, log.text
        assert f"rank {rank} of 2" in log.text
        assert "CUDA_VISIBLE_DEVICES=0,1" in log.text and "runs on CPU with gloo" in log.text
    metrics = client.get(f"/api/jobs/{job_id}/metrics").json()
    steps = sorted({m["step"] for m in metrics["points"]} if "points" in metrics else [])
    assert job["progress"]["step"] == 30
    checkpoints = client.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert [c["step"] for c in checkpoints] == [30]
    assert Path(settings.data_dir, "checkpoints", str(job_id)).is_dir()
    del steps
    # No process of the job is left on any node.
    leftovers = [p.info for p in psutil.process_iter(["pid", "cmdline"])
                 if "gpudeck.engine.srun" in " ".join(p.info["cmdline"] or [])]  # fmt: skip
    assert leftovers == []
