"""A sharing job's launch contract carries its reservation per device and its context reserve,
as fixed at submit (the job's row, through claim_job's LaunchPlan), on simulated (CPU) devices
too; an exclusive job's carries neither. The ranks read them from here (engine/rank.py), and
their thread budget: one thread beside neighbours on a shared device, one device's share of
the node's cores on whole devices."""

from __future__ import annotations

import os
from types import SimpleNamespace

from harness import TEST_NODE, make_job, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.engine.contract import JobLaunch
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.submit import submission
from gpudeck.worker.runner import JobRunner

MiB = 1024**2
CONTEXT = 500 * MiB  # the configured default context reserve


def contract_of(db: Session, settings: Settings, job_id: int) -> JobLaunch:
    plan = runs.claim_job(db, job_id, TEST_NODE)
    db.commit()
    assert plan is not None
    runner = JobRunner(SimpleNamespace(settings=settings), job_id)
    return JobLaunch.from_json(runner._contract(plan).to_json())  # as the ranks read it


def test_a_sharing_cpu_jobs_contract_carries_its_reservation(
    db: Session, settings: Settings
) -> None:
    register_devices(db, "2x8GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    db.commit()
    spec = JobCreate(
        kind="sae", config={"steps": 10, "batch_size": 64}, count=1, node=TEST_NODE, share="memory"
    )
    job = submission.create_job(db, spec, owner="ada")
    db.commit()
    assert job.estimate_bytes_per_device is not None
    contract = contract_of(db, settings, job.id)
    assert contract.device_type == "cpu"
    assert contract.reserved_bytes_per_device == job.estimate_bytes_per_device + CONTEXT
    assert contract.context_reserve_bytes == CONTEXT
    assert contract.num_threads == 1  # its device has neighbours


def test_an_exclusive_jobs_contract_carries_no_reservation(db: Session, settings: Settings) -> None:
    register_devices(db, "2x8GiB")
    job = make_job(db, devices=[0])
    contract = contract_of(db, settings, job.id)
    assert contract.reserved_bytes_per_device is None and contract.context_reserve_bytes is None


def test_an_exclusive_jobs_ranks_get_one_devices_share_of_the_cores(
    db: Session, settings: Settings
) -> None:
    """Not the node's every core for a job of one rank: the jobs on its other devices run too."""
    cores = len(os.sched_getaffinity(0))
    register_devices(db, "4x8GiB")
    alone = contract_of(db, settings, make_job(db, devices=[0]).id)
    pair = contract_of(db, settings, make_job(db, devices=[1, 2]).id)
    assert alone.num_threads == pair.num_threads == max(1, cores // 4)
