"""A sweep on the real test cluster, run by the real scheduler (its every duty: the Slurm pass,
early stopping): 2,500 members go as three job arrays (MaxArraySize 1001), Slurm's throttle
holds max_parallel at every poll, ASHA stops hopeless members through their array task, and a
cancel ends every member right. The cluster has 4 (fake) GPUs: max_parallel 3 is below them, so
the throttle, not the GPUs, is what limits the members running; raised to 4 live, all 4 run."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient
from slurm.cluster import SlurmCluster
from slurm.executor_cases import SAE_CONFIG
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.models import Job
from gpudeck.scheduler.service import Scheduler

MAX_PARALLEL = 3
SEEDS, RATES = 50, 50  # 2,500 members
RISING = [10 ** (-5 + 4 * k / RATES) for k in range(RATES)]  # 1e-5 .. 0.08


def one_high_two_low(rising: list[float]) -> list[float]:
    """The grid runs lr fastest and members start in its order. Rising, each member reached its
    rung with about the best loss yet (40 steps here: best to step 20 1.18 at lr 1e-5, 0.78 at
    1e-3, 0.27-0.31 at 0.016-0.08), so ASHA had none to stop unless a later member overtook an
    earlier one while that one still ran: a race a loaded machine lost (27 succeeded, 0
    stopped in 150 s). Here a high lr comes first, then two low ones, each lower than the last:
    a low one arrives worse than every member before it (stopped from the second member on),
    and the high ones are a third of the members, within the half a rung keeps, whatever their
    order among themselves."""
    falling = rising[::-1]
    third = -(-len(falling) // 3)
    high, low = falling[:third], falling[third:]
    return [lr for i, first in enumerate(high) for lr in (first, *low[2 * i : 2 * i + 2])]


LRS = one_high_two_low(RISING)
TERMINAL = {"succeeded", "failed", "cancelled", "timeout", "lost", "stopped_early"}


@pytest.fixture
def scheduler(
    settings: Settings, migrated_engine: Engine, redis_client: redis.Redis
) -> Iterator[Scheduler]:
    fast = settings.model_copy(update={"slurm_poll_s": 1.0})
    running = Scheduler(fast, migrated_engine, redis_client)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()
    yield running
    stop.set()
    thread.join(timeout=60)


def slurm_running(cluster: SlurmCluster, sweep_id: int) -> int:
    """The sweep's array tasks Slurm has running. Not those COMPLETING: Slurm's throttle
    frees a task's slot when its batch script returns (slurmctld's log: task 5 "done" at
    :53.34, task 6 allocated at :53.96) while the ended task's clean-up (COMPLETING, its GPU
    still held by Slurm) can last seconds on a loaded machine: counting it would read one
    member over the throttle that Slurm never ran."""
    listed = cluster.run(
        ["squeue", "--noheader", "--array", f"--name=gpudeck-sweep-{sweep_id}",
         "--states=RUNNING", "-o", "%i"]
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    return len(listed.stdout.split())


@pytest.mark.long
def test_a_sweep_of_2500_members_runs_as_arrays_throttled_early_stopped_and_cancelled(
    client: TestClient,
    lab: str,
    scheduler: Scheduler,
    slurm_cluster: SlurmCluster,
    db: Session,
) -> None:
    config = {**SAE_CONFIG, "steps": 40, "metrics_interval": 10, "checkpoint_interval": 40}
    body = {
        "job": {"kind": "sae", "config": config, "count": 1, "cluster": lab},
        "parameters": {"grid": {"seed": list(range(SEEDS)),
                                "lr": LRS}},
        "max_parallel": MAX_PARALLEL,
        "early_stop": {"rule": "asha", "metric": "overall_loss", "grace_steps": 20,
                       "reduction_factor": 2},
    }  # fmt: skip
    created = client.post("/api/sweeps", json=body)
    assert created.status_code == 201, created.text
    sweep_id = created.json()["id"]

    # Split into arrays of at most MaxArraySize tasks, chained.
    deadline = time.monotonic() + 60
    while db.scalar(select(func.count()).where(Job.sweep_id == sweep_id,
                                               Job.slurm_job_id.is_(None))):  # fmt: skip
        assert time.monotonic() < deadline
        time.sleep(0.5)
        db.expire_all()
    arrays = Counter(
        slurm_id.split("_")[0]
        for slurm_id in db.scalars(select(Job.slurm_job_id).where(Job.sweep_id == sweep_id))
    )
    assert sorted(arrays.values(), reverse=True) == [1001, 1001, 498]

    # Members run, never more than max_parallel at any poll (Slurm's own count: GPUDeck's rows
    # follow within a poll or two, so a member Slurm has just ended may still read running
    # there while its successor starts), some end, and ASHA stops some at its first rung.
    ended: Counter[str] = Counter()
    deadline = time.monotonic() + 150
    while ended["succeeded"] < 2 or ended["stopped_early"] < 1:
        assert slurm_running(slurm_cluster, sweep_id) <= MAX_PARALLEL
        db.expire_all()
        ended = Counter(db.scalars(select(Job.status).where(Job.sweep_id == sweep_id)))
        assert time.monotonic() < deadline, ended
        time.sleep(0.5)
    assert ended["failed"] == 0

    # max_parallel raised live: the arrays' throttle follows (Slurm's own record says so) and
    # 4 members run at once, all the cluster's GPUs.
    raised = client.patch(f"/api/sweeps/{sweep_id}", json={"max_parallel": 4})
    assert raised.status_code == 200, raised.text
    deadline, most = time.monotonic() + 90, 0
    while most < 4:
        running = slurm_running(slurm_cluster, sweep_id)
        assert running <= 4
        most = max(most, running)
        assert time.monotonic() < deadline, most
        time.sleep(0.5)
    first_array = min(arrays, key=int)
    shown = slurm_cluster.run(["scontrol", "show", "job", first_array]).stdout
    assert "ArrayTaskThrottle=4" in shown

    # Cancel: every member ends, none failed; the ones that never started are cancelled.
    assert client.post(f"/api/sweeps/{sweep_id}/cancel").status_code in (200, 202)
    deadline = time.monotonic() + 120
    while True:
        db.expire_all()
        final = Counter(db.scalars(select(Job.status).where(Job.sweep_id == sweep_id)))
        if set(final) <= TERMINAL:
            break
        left = db.execute(select(Job.slurm_job_id, Job.slurm, Job.cancel_requested_at).where(
            Job.sweep_id == sweep_id, Job.status == "queued").limit(3)).all()  # fmt: skip
        assert time.monotonic() < deadline, (final, left)
        time.sleep(1)
    assert final["failed"] == 0 and final["cancelled"] > 2000, final
    assert slurm_running(slurm_cluster, sweep_id) == 0
