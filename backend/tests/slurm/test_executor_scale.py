"""The executor's cost to the cluster and its word when Slurm is silent, against the real test
cluster: 5,000 tracked jobs cost one squeue and one sacct a poll (counted by wrappers on PATH,
as a site's admin would see them), a change shows within two polls, and slurmctld stopped for
30 s under a running job reads unknown with the cause, never failed, then right again."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from slurm.cluster import SlurmCluster
from slurm.executor_cases import SAE_CONFIG, TERMINAL, PassContext, wait_job
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from gpudeck.models import Cluster, Job, JobStatus
from gpudeck.scheduler.slurm_pass import SlurmExecutor
from gpudeck.slurm import ArraySpec, BatchSpec, SlurmClient, render

ARRAYS, TASKS = 5, 1000  # 5,000 tracked jobs; tasks 0..999 stay below MaxArraySize 1001


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], dict[str, int]]:
    """squeue and sacct on PATH as wrappers that count each call, then run the real one."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for name in ("squeue", "sacct"):
        real = shutil.which(name)
        assert real is not None
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\necho {name} >> {log}\nexec {real} "$@"\n')
        wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def calls() -> dict[str, int]:
        lines = log.read_text().split() if log.exists() else []
        return {name: lines.count(name) for name in ("squeue", "sacct")}

    return calls


@pytest.fixture
def held_arrays(slurm: SlurmClient, spec_for: Callable[..., BatchSpec]) -> Iterator[list[str]]:
    ids = [
        slurm.submit(render(spec_for(["true"], held=True, array=ArraySpec(count=TASKS,
                                                                          max_parallel=8))))
        for _ in range(ARRAYS)
    ]  # fmt: skip
    yield ids  # scancelled after the test, as every job it leaves (tests/slurm/conftest.py)


def track(db: Session, cluster_id: int, array_ids: list[str]) -> None:
    """GPUDeck's rows for every task, as if its sweeps had submitted them."""
    rows = [
        {"name": f"member-{a}-{t}", "kind": "sae", "config": SAE_CONFIG, "owner": "admin",
         "node": "lab", "world_size": 1, "status": JobStatus.queued, "cluster_id": cluster_id,
         "slurm_job_id": f"{a}_{t}", "slurm": {"partition": "gpu"}}
        for a in array_ids for t in range(TASKS)
    ]  # fmt: skip
    db.execute(insert(Job), rows)
    db.commit()


def test_five_thousand_jobs_cost_one_squeue_and_one_sacct_a_poll_and_changes_show_in_two(
    lab: str,
    db: Session,
    held_arrays: list[str],
    counted: Callable[[], dict[str, int]],
    pass_context: PassContext,
    slurm: SlurmClient,
    bare_executor: SlurmExecutor,
) -> None:
    cluster_id = db.scalar(select(Cluster.id).where(Cluster.name == lab))
    assert cluster_id is not None
    track(db, cluster_id, held_arrays)
    executor = bare_executor
    took = []
    for k in range(3):
        if k == 1:
            first = set(db.scalars(select(Job.slurm["polled_at"].astext)))
        before, started = counted(), time.monotonic()
        executor.run_pass(pass_context)
        took.append(time.monotonic() - started)
        after = counted()
        assert after["squeue"] - before["squeue"] == 1
        assert after["sacct"] - before["sacct"] <= 1
    db.expire_all()
    held = db.scalars(select(Job.slurm).where(Job.cluster_id == cluster_id)).all()
    assert len(held) == ARRAYS * TASKS
    assert all(v["state"] == "PENDING" and v["reason_code"] == "held" for v in held)
    # The first pass wrote every job's view; the next two found nothing changed and wrote
    # nothing: each view still carries the first pass's time.
    assert {v["polled_at"] for v in held} == first
    print(f"passes over {ARRAYS * TASKS} jobs: " + ", ".join(f"{t:.2f} s" for t in took))

    # Ten tasks cancelled in Slurm (an admin's scancel): cancelled in GPUDeck within 2 polls
    # at the poll interval (Slurm keeps no record of a pending task cancelled: it only shrinks
    # the array's range, which slurmdbd learns within seconds).
    gone = [f"{held_arrays[1]}_{t}" for t in range(10)]
    for task in gone:
        array_id, index = task.split("_")
        slurm.cancel(array_id, int(index))
    for _ in range(2):
        time.sleep(pass_context.settings.slurm_poll_s)
        executor.run_pass(pass_context)
    db.expire_all()
    rows = db.execute(select(Job.slurm_job_id, Job.status).where(Job.slurm_job_id.in_(gone)))
    ended = {slurm_id: status for slurm_id, status in rows}
    assert ended == dict.fromkeys(gone, "cancelled")
    still = db.scalar(select(Job.status).where(Job.slurm_job_id == f"{held_arrays[1]}_10"))
    assert still == "queued"


@pytest.mark.long
def test_slurmctld_stopped_for_30_s_reads_unknown_never_failed_then_right_again(
    client: TestClient, lab: str, executor: SlurmExecutor, slurm_cluster: SlurmCluster
) -> None:
    config = {**SAE_CONFIG, "steps": 1_000_000, "checkpoint_interval": 1_000_000}
    sent = client.post(
        "/api/jobs", json={"kind": "sae", "config": config, "count": 2, "cluster": lab}
    )
    job_id = sent.json()["id"]
    wait_job(client, job_id, {"running"}, timeout_s=60)
    slurm_cluster.stop_controller()
    try:
        stopped_at, seen_unknown = time.monotonic(), None
        while time.monotonic() - stopped_at < 30:
            job = client.get(f"/api/jobs/{job_id}").json()
            assert job["status"] == "running", job  # never a false failure
            if job["slurm"]["unknown"]:
                seen_unknown = job["slurm"]["reason"]
            time.sleep(0.5)
    finally:
        slurm_cluster.start_controller()
    assert seen_unknown is not None and "slurmctld did not answer" in seen_unknown
    deadline = time.monotonic() + 60
    while (job := client.get(f"/api/jobs/{job_id}").json())["slurm"]["unknown"]:
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job["status"] == "running" and job["slurm"]["state"] == "RUNNING"
    client.post(f"/api/jobs/{job_id}/cancel")
    assert wait_job(client, job_id, TERMINAL, timeout_s=60)["status"] == "cancelled"
