"""The scheduler's pass reads in full only the waiting jobs new or changed since its last pass
(queue_waiting.WaitingCache); what it takes must always equal a full read, whatever changed."""

from __future__ import annotations

from harness import TEST_NODE, make_job, statements_run
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.queue import actions as queue_actions
from gpudeck.services.queue import waiting as queue_waiting
from gpudeck.services.submit import submission


def _read(db: Session, cache: queue_waiting.WaitingCache | None) -> dict[int, object]:
    db.rollback()  # a fresh statement snapshot, as each pass has
    return {w.id: w for w in queue_waiting.waiting_jobs(db, 0.0, cache)}


def _waiting(db: Session, depends_on: list[int] | None = None) -> int:
    spec = JobCreate(
        kind="sae",
        config={"steps": 10, "batch_size": 64},
        devices=[{"index": 0, "node": TEST_NODE}],  # type: ignore[list-item]
        depends_on=depends_on or [],
    )
    job = submission.create_job(db, spec, owner="tester")
    db.commit()
    return int(job.id)


def test_the_cached_read_equals_a_full_read_through_every_change(db: Session, devices: str) -> None:
    holder = make_job(db, devices=[0])  # device 0 held: every job below waits
    first, second, third = _waiting(db), _waiting(db), _waiting(db)
    dependent = _waiting(db, depends_on=[holder.id])
    cache = queue_waiting.WaitingCache()
    assert _read(db, cache) == _read(db, None)
    assert set(_read(db, cache)) == {first, second, third, dependent}

    queue_actions.set_held(db, second, True)  # a row update
    queue_actions.set_priority(db, third, -5, is_admin=True)
    db.commit()
    fourth = _waiting(db)  # a new job
    db.execute(text("UPDATE jobs SET status = 'cancelled' WHERE id = :j"), {"j": first})
    db.execute(text("UPDATE jobs SET status = 'succeeded' WHERE id = :j"), {"j": holder.id})
    db.commit()  # the dependency ended: the dependent's row is unchanged, its wait is not

    cached, full = _read(db, cache), _read(db, None)
    assert cached == full
    assert set(cached) == {second, third, dependent, fourth}
    assert cached[second].held and cached[third].priority == -5  # type: ignore[attr-defined]
    assert cached[dependent].dependencies == {holder.id: JobStatus.succeeded}  # type: ignore[attr-defined]


def test_an_unchanged_queue_is_read_as_versions_only(db: Session, devices: str) -> None:
    make_job(db, devices=[0])
    for _ in range(3):
        _waiting(db)
    cache = queue_waiting.WaitingCache()
    _read(db, cache)
    engine = db.get_bind()
    with statements_run(engine) as statements:
        again = _read(db, cache)
    assert len(again) == 3
    assert len(statements) == 1 and "xmin" in statements[0]  # ids and versions, nothing more
