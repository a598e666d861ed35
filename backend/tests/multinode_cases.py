"""Three nodes and jobs across them, for the tests of the pass over Postgres
(tests/services/queue/test_passes.py) and of the scheduler's pass with its dispatch
(tests/scheduler/test_multinode_queue.py)."""

from __future__ import annotations

from harness import register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.submit import submission

SAE = {"steps": 10, "batch_size": 96}  # splits over 1, 2, 3 or 4 devices


def register_three_nodes(db: Session) -> None:
    """alpha and beta with two devices each, gamma with four."""
    register_devices(db, "2x80GiB", node="alpha")
    register_devices(db, "2x80GiB", node="beta")
    register_devices(db, "4x80GiB", node="gamma")


def submit(db: Session, **body: object) -> Job:
    spec = JobCreate.model_validate({"kind": "sae", "config": SAE, **body})
    job = submission.create_job(db, spec, owner="tester")
    db.commit()
    return job


def on(*refs: tuple[str, int]) -> list[dict[str, object]]:
    return [{"node": node, "index": index} for node, index in refs]


def placed(db: Session, job_id: int) -> list[tuple[int, str, int]]:
    """(rank, node, index) of the job's live allocations."""
    rows = db.execute(
        text(
            "SELECT rank, node, gpu_index FROM allocations WHERE job_id = :j "
            "AND released_at IS NULL ORDER BY rank"
        ),
        {"j": job_id},
    ).all()
    db.rollback()
    return [(r, n, i) for r, n, i in rows]
