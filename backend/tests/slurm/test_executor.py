"""Jobs on the real test cluster through GPUDeck: submitted through the API, handed to Slurm by
the executor's pass (scheduler/slurm_pass.py), followed to their end, with their ranks' metrics,
logs and checkpoints stored as on GPUDeck's own nodes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch
from engine.rankrunner import make_spec, run_ranks
from fastapi.testclient import TestClient
from saelens_check import SaeLens
from safetensors.torch import load_file
from slurm.cluster import PARTITION, SHORT_MAX_MINUTES, SHORT_PARTITION, SlurmCluster
from slurm.executor_cases import SAE_CONFIG, TERMINAL, wait_job
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.models import Job
from gpudeck.scheduler.slurm_pass import SlurmExecutor


def test_an_sae_job_on_two_slurm_gpus_runs_to_success_with_its_metrics_logs_and_checkpoint(
    client: TestClient, lab: str, executor: SlurmExecutor, settings: Settings, sae_lens: SaeLens
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
    assert job["progress"]["step"] == 30
    points = client.get(f"/api/jobs/{job_id}/metrics").json()["items"]
    assert [p["step"] for p in points] == [10, 20, 30]
    assert all(p["metrics"]["overall_loss"] > 0 for p in points)
    checkpoints = client.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert [c["step"] for c in checkpoints] == [30]
    # The real SAELens loads the checkpoint the Slurm job's rank 0 wrote, as it is.
    step_dir = Path(settings.data_dir, "checkpoints", str(job_id), "step_30")
    loaded = sae_lens.check("load_any", step_dir)
    assert loaded.ok, loaded.error[-2000:]
    assert loaded.output.startswith("loaded TopKSAE 16 64"), loaded.output
    assert rank_processes(settings, job_id) == []


LONG_CONFIG = {**SAE_CONFIG, "steps": 1_000_000, "checkpoint_interval": 20}


def submit_long(client: TestClient, lab: str, **fields: Any) -> int:
    sent = client.post(
        "/api/jobs",
        json={"kind": "sae", "config": LONG_CONFIG, "count": 2, "cluster": lab, **fields},
    )
    assert sent.status_code == 201, sent.text
    return int(sent.json()["id"])


def wait_progress(client: TestClient, job_id: int, step: int, timeout_s: float = 90) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        assert job["status"] in ("queued", "starting", "running"), job
        if job["progress"]["step"] >= step:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def rank_processes(settings: Settings, job_id: int) -> list[int]:
    """The job's rank processes on any node (the nodes are namespaces of this machine), by
    their contract's whole path: another test process's job may have the same id."""
    contract = str(settings.data_dir / "jobs" / str(job_id) / "contract.json")
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info["cmdline"] or []
        # The ranks themselves, not srun's own processes (whose argv holds the same words).
        if argv[1:3] == ["-m", "gpudeck.engine.srun"] and argv[-1] == contract:
            found.append(proc.info["pid"])
    return found


def steps_of(client: TestClient, job_id: int) -> list[int]:
    return [c["step"] for c in client.get(f"/api/jobs/{job_id}/checkpoints").json()]


def test_cancel_mid_run_writes_a_final_checkpoint_and_leaves_no_rank(
    client: TestClient, lab: str, executor: SlurmExecutor, settings: Settings
) -> None:
    job_id = submit_long(client, lab)
    job = wait_progress(client, job_id, 25)
    assert len(rank_processes(settings, job_id)) == 2
    # The Clusters page's read: the node Slurm put it on holds it, with its 2 GPUs in use.
    nodes = client.get(f"/api/clusters/{lab}/state").json()["nodes"]
    [holder] = [n for n in nodes if n["jobs"]]
    assert holder["name"] == job["slurm"]["nodes"]
    assert holder["jobs"] == [
        {
            "job_id": job_id,
            "name": "sae-job",
            "owner": "admin",
            "slurm_job_id": job["slurm_job_id"],
            "gpus_per_node": 2,
        }
    ]
    assert holder["gpus"][0]["used"] == 2
    asked = client.post(f"/api/jobs/{job_id}/cancel")
    assert asked.status_code in (200, 202), asked.text
    job = wait_job(client, job_id, TERMINAL, timeout_s=60)
    assert job["status"] == "cancelled", job["error"]
    # The final checkpoint is the step it stopped at, past the last interval's.
    final = max(steps_of(client, job_id))
    assert final == job["progress"]["step"] and final > 25
    assert rank_processes(settings, job_id) == []


@pytest.mark.long
def test_the_time_limit_ends_it_as_timeout_after_a_final_checkpoint(
    client: TestClient,
    lab: str,
    executor: SlurmExecutor,
    slurm_cluster: SlurmCluster,
    settings: Settings,
) -> None:
    job_id = submit_long(client, lab, time_limit_s=600)
    job = wait_progress(client, job_id, 5)
    # Slurm keeps limits in minutes and checks them every 30 s: the end moved 31 s ahead
    # comes through the same check as a real limit (tests/slurm/test_cancel.py).
    moved = slurm_cluster.run(
        ["scontrol", "update", f"JobId={job['slurm_job_id']}", "EndTime=now+31"]
    )
    assert moved.returncode == 0, moved.stderr
    job = wait_job(client, job_id, TERMINAL, timeout_s=120)
    assert job["status"] == "timeout", job["error"]
    assert max(steps_of(client, job_id)) == job["progress"]["step"]
    assert rank_processes(settings, job_id) == []


@pytest.mark.long
def test_a_requeued_job_is_one_job_with_two_attempts_resumed_from_its_checkpoint(
    client: TestClient, lab: str, executor: SlurmExecutor, slurm_cluster: SlurmCluster
) -> None:
    config = {**SAE_CONFIG, "steps": 120, "checkpoint_interval": 20}
    sent = client.post(
        "/api/jobs", json={"kind": "sae", "config": config, "count": 2, "cluster": lab}
    )
    job_id = sent.json()["id"]
    job = wait_progress(client, job_id, 45)
    requeued = slurm_cluster.run(["scontrol", "requeue", job["slurm_job_id"]])
    assert requeued.returncode == 0, requeued.stderr
    # GPUDeck sees it wait again, as the same job (its first attempt ended).
    waiting = wait_job(client, job_id, {"queued"}, timeout_s=60)
    assert waiting["slurm"]["attempts"] == 1 and waiting["slurm_job_id"] == job["slurm_job_id"]
    # slurmctld holds a requeued job back for 2 minutes (its begin time); let it go now.
    slurm_cluster.run(["scontrol", "update", f"JobId={job['slurm_job_id']}", "StartTime=now"])
    job = wait_job(client, job_id, TERMINAL, timeout_s=120)
    assert job["status"] == "succeeded", job["error"]
    assert job["slurm"]["attempts"] == 2
    log = client.get(f"/api/jobs/{job_id}/logs", params={"rank": 0, "tail": 100_000}).text
    assert "resuming from its own checkpoint step_" in log
    assert max(steps_of(client, job_id)) == 120
    runs = [r["outcome"] for r in client.get(f"/api/jobs/{job_id}/segments").json()]
    assert runs == ["preempted", "succeeded"]


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"partition": "nosuch"}, "partition", "not one of cluster lab's partitions (gpu, short)"),
        ({"count": 4}, "count", "partition gpu's nodes have at most 2 each; spread it: nodes=2"),
        ({"count": 3}, "count", "3 GPUs on one node: partition gpu's nodes have at most 2 each"),
        ({"count": 6, "nodes": 3}, "nodes", "3 nodes with 2 GPUs each: partition gpu has 2"),
        ({"partition": SHORT_PARTITION, "time_limit_s": 3600}, "time_limit_s",
         f"over partition short's time limit of {SHORT_MAX_MINUTES * 60} s"),
        ({"cluster": "elsewhere"}, "cluster", "no cluster 'elsewhere'"),
        ({"devices": [{"index": 0}], "count": None}, "body", "takes a count"),
    ],
)  # fmt: skip
def test_what_the_cluster_cannot_run_is_refused_naming_the_field_and_nothing_is_submitted(
    client: TestClient,
    lab: str,
    slurm_cluster: SlurmCluster,
    db: Session,
    fields: dict[str, Any],
    field: str,
    words: str,
) -> None:
    before = slurm_cluster.job_ids()
    body = {"kind": "sae", "config": SAE_CONFIG, "count": 2, "cluster": lab, **fields}
    refused = client.post("/api/jobs", json={k: v for k, v in body.items() if v is not None})
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["detail"]
    assert field in error["loc"] and words in error["msg"], error
    assert db.scalar(select(func.count()).select_from(Job)) == 0
    assert slurm_cluster.job_ids() <= before  # nothing new in Slurm


def final_weights(checkpoints: Path) -> dict[str, torch.Tensor]:
    steps = sorted(checkpoints.glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    return load_file(steps[-1] / "sae_weights.safetensors")


@pytest.mark.long
def test_a_job_across_the_two_slurm_nodes_ends_with_the_weights_of_one_node_of_four(
    client: TestClient, lab: str, executor: SlurmExecutor, settings: Settings, tmp_path: Path
) -> None:
    sent = client.post(
        "/api/jobs",
        json={"kind": "sae", "config": SAE_CONFIG, "count": 4, "nodes": 2, "cluster": lab},
    )
    assert sent.status_code == 201, sent.text
    job_id = sent.json()["id"]
    job = wait_job(client, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    assert job["slurm"]["nodes"] == "n[1-2]"
    logs = [client.get(f"/api/jobs/{job_id}/logs", params={"rank": r}).text for r in range(4)]
    assert [("node 0 of 2" in log, "node 1 of 2" in log) for log in logs] == [
        (True, False), (True, False), (False, True), (False, True)
    ]  # fmt: skip
    across = final_weights(settings.data_dir / "checkpoints" / str(job_id))
    # The same job on one node of four ranks, launched as GPUDeck's own nodes launch ranks.
    reference = make_spec(tmp_path, SAE_CONFIG, job_id=999)
    assert run_ranks(reference, 4) == [0, 0, 0, 0]
    alone = final_weights(Path(reference.checkpoint_dir))
    assert sorted(across) == sorted(alone)
    for name, tensor in across.items():
        assert (tensor - alone[name]).abs().max().item() <= 1e-5, name
