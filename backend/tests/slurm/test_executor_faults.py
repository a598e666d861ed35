"""What the executor does when Slurm half-answers, against the real test cluster: an sbatch
that timed out after Slurm had queued the job is found by name, never submitted twice; and a
cluster jobs ran on cannot be removed from under them."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from slurm.cluster import GPU_TYPE, PARTITION, SlurmCluster
from slurm.executor_cases import SAE_CONFIG, PassContext
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.models import Job
from gpudeck.scheduler.slurm_pass import SlurmExecutor
from gpudeck.services.submit import cluster_target


def slow_sbatch(bin_dir: Path) -> None:
    """An sbatch that queues the job, then hangs past the executor's command timeout."""
    real = shutil.which("sbatch")
    assert real is not None
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "sbatch"
    wrapper.write_text(f'#!/bin/sh\n{real} "$@"\nsleep 5\n')
    wrapper.chmod(0o755)


def test_an_sbatch_that_timed_out_after_queueing_is_adopted_not_submitted_twice(
    client: TestClient,
    lab: str,
    pass_context: PassContext,
    slurm_cluster: SlurmCluster,
    db: Session,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bare_executor: SlurmExecutor,
) -> None:
    config = {**SAE_CONFIG, "steps": 1_000_000}
    job_id = client.post(
        "/api/jobs", json={"kind": "sae", "config": config, "count": 1, "cluster": lab}
    ).json()["id"]
    slow_sbatch(tmp_path / "bin")
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{path}")
    hasty = dataclasses.replace(
        pass_context, settings=pass_context.settings.model_copy(
            update={"slurm_command_timeout_s": 2.0})
    )  # fmt: skip
    executor = bare_executor
    executor.run_pass(hasty)
    job = db.get(Job, job_id)
    assert job is not None and job.slurm_job_id is None and job.slurm["sbatch_unanswered"]
    monkeypatch.setenv("PATH", path)
    executor.run_pass(pass_context)
    db.expire_all()
    queued = slurm_cluster.run(
        ["squeue", "--noheader", "--states=all", f"--name=gpudeck-{job_id}", "-o", "%i"]
    ).stdout.split()
    assert len(queued) == 1
    assert db.scalar(select(Job.slurm_job_id).where(Job.id == job_id)) == queued[0]
    assert client.post(f"/api/jobs/{job_id}/cancel").status_code in (200, 202)
    executor.run_pass(pass_context)


def test_a_cluster_jobs_ran_on_is_not_removed(client: TestClient, lab: str) -> None:
    sent = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE_CONFIG, "count": 1, "cluster": lab}
    )
    assert sent.status_code == 201
    refused = client.delete(f"/api/clusters/{lab}")
    assert refused.status_code == 409
    detail = refused.json()["detail"]
    assert detail["field"] == "name" and "has 1 jobs, 1 of them not ended" in detail["message"]
    assert client.get(f"/api/clusters/{lab}").status_code == 200


def test_a_job_whose_estimate_fits_no_gpu_type_is_refused_before_slurm_sees_it(
    client: TestClient, slurm_cluster: SlurmCluster, settings: Settings, db: Session
) -> None:
    cluster_target.FACTS.forget()
    body = {
        "name": "typed", "partitions": [PARTITION], "shared_dir": str(settings.data_dir),
        "slurm_conf": str(slurm_cluster.conf), "gpu_memory": {GPU_TYPE: 2 * 1024**3},
    }  # fmt: skip
    assert client.post("/api/clusters", json=body).status_code == 201
    big = {**SAE_CONFIG, "d_in": 1024, "d_sae": 131_072, "batch_size": 4096}
    before = slurm_cluster.job_ids()
    refused = client.post(
        "/api/jobs", json={"kind": "sae", "config": big, "count": 1, "cluster": "typed"}
    )
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["detail"]
    assert error["loc"][-1] == "config"
    assert f"no GPU type of partition {PARTITION} fits it ({GPU_TYPE} (2 GiB" in error["msg"]
    assert db.scalar(select(func.count()).select_from(Job)) == 0
    assert slurm_cluster.job_ids() <= before  # nothing new in Slurm
    # A job that fits is taken, asking Slurm for no particular type (the only one fits).
    fits = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE_CONFIG, "count": 1, "cluster": "typed"}
    )
    assert fits.status_code == 201 and fits.json()["slurm"]["gpu_type"] is None
