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
from slurm.cluster import SlurmCluster
from slurm.executor_cases import SAE_CONFIG, PassContext
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.scheduler.slurm_pass import SlurmExecutor


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
    executor = SlurmExecutor()
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
