"""Fair share counts a job that shares a device by its share of it: device-seconds times its
reservation over the device's usable memory (4 members sharing one GPU cost about one GPU's
hours), and a whole-device job as before."""

from __future__ import annotations

import pytest
from harness import TEST_NODE, make_job, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.jobs import state as job_state
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.queue.snapshot import usage_by_owner
from gpudeck.services.submit import submission

GiB = 1024**3
NO_DECAY = 1e9


def _ran_100_s(db: Session, job_id: int) -> None:
    for target in (JobStatus.starting, JobStatus.running, JobStatus.succeeded):
        job_state.transition(db, job_id, target)
    db.execute(
        text("UPDATE job_runs SET started_at = ended_at - interval '100 s' WHERE job_id = :j"),
        {"j": job_id},
    )
    db.commit()


def test_a_sharing_job_counts_its_share_of_the_device(db: Session) -> None:
    register_devices(db, "2x8GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    config = {"entrypoint": "train.py", "memory_per_device_bytes": 3 * GiB}
    spec = JobCreate(kind="script", config=config, count=1, node=TEST_NODE, share="memory")
    shared = submission.create_job(db, spec, owner="ada")
    db.commit()
    _ran_100_s(db, shared.id)
    share = (3 * GiB + 500 * 1024**2) / usable_when_idle(8 * GiB)  # 3.5 of 7.5 GiB
    assert usage_by_owner(db, NO_DECAY)["ada"] == pytest.approx(100 * share, rel=0.01)
    whole = make_job(db, devices=[1])  # owner "tester": a whole device, as before
    _ran_100_s(db, whole.id)
    assert usage_by_owner(db, NO_DECAY)["tester"] == pytest.approx(100, rel=0.01)
