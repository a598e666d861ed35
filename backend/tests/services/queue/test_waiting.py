"""services/queue/waiting.py: which jobs wait, read from the real database. The scheduler's pass
reads in full only the waiting jobs new or changed since its last pass (WaitingCache), and what
it takes must always equal a full read, whatever changed (moved from
tests/scheduler/test_waiting_cache.py); a dependency gone from the table reads as cancelled; the
submit's "anyone waiting on these nodes", the queued count a quota limits, and the views' reads
in queue order."""

from __future__ import annotations

from harness import TEST_NODE, make_job, register_devices, statements_run
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.schemas.jobs import JobCreate, QueueInfo
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


def test_a_dependency_gone_from_the_table_reads_as_cancelled(db: Session, devices: str) -> None:
    holder = make_job(db, devices=[0])
    dependent = _waiting(db, depends_on=[holder.id])
    db.execute(
        text("UPDATE jobs SET depends_on = '[987654]'::jsonb WHERE id = :j"), {"j": dependent}
    )
    db.commit()
    (read,) = _read(db, None).values()
    # Cancelled is a failed dependency: the pass cancels the job rather than wait forever.
    assert read.dependencies == {987654: "cancelled"}  # type: ignore[attr-defined]


def test_waiting_on_nodes_sees_only_jobs_that_wait_and_may_use_those_nodes(
    db: Session, devices: str
) -> None:
    register_devices(db, "2x80GiB", node="beta")
    make_job(db, devices=[0, 1])  # placed at once: holds its devices, waits for nothing
    assert not queue_waiting.waiting_on_nodes(db, [TEST_NODE, "beta"])
    _waiting(db)  # waits for device 0 of the test node
    assert queue_waiting.waiting_on_nodes(db, [TEST_NODE])
    assert queue_waiting.waiting_on_nodes(db, ["beta", TEST_NODE])
    assert not queue_waiting.waiting_on_nodes(db, ["beta"])


def test_the_queued_count_a_quota_limits_counts_placed_and_waiting_jobs_of_one_owner(
    db: Session, devices: str
) -> None:
    make_job(db, devices=[0])  # placed, not started: still queued
    _waiting(db)
    make_job(db, devices=[1], status=JobStatus.running)
    db.execute(text("UPDATE jobs SET owner = 'bob' WHERE id = :j"), {"j": _waiting(db)})
    db.commit()
    assert queue_waiting.queued_count(db, "tester") == 2
    assert queue_waiting.queued_count(db, "bob") == 1
    assert queue_waiting.queued_count(db, "carol") == 0


def _place(position: int) -> QueueInfo:
    return QueueInfo(position=position, reason_code="priority", reason="", expected_start_at=None)


def test_the_views_read_waiting_jobs_in_queue_order_and_by_owner(db: Session, devices: str) -> None:
    placed = make_job(db, devices=[0])
    first, second, third = _waiting(db), _waiting(db), _waiting(db)
    db.execute(text("UPDATE jobs SET owner = 'bob' WHERE id = :j"), {"j": second})
    db.commit()
    # The pass's positions, not ids, order the view; a job placed since the pass drops out.
    infos = {first: _place(3), second: _place(1), third: _place(2), placed.id: _place(4)}
    in_order = queue_waiting.ordered_waiting(db, infos, None)
    assert [j.id for j in in_order] == [second, third, first]
    assert [j.id for j in queue_waiting.ordered_waiting(db, infos, "tester")] == [third, first]
    assert queue_waiting.ordered_waiting(db, {}, None) == []
    assert queue_waiting.jobs_waiting(db, [first, placed.id, 987654]) == {first}
    assert queue_waiting.jobs_waiting(db, []) == set()
