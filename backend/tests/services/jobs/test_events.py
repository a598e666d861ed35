"""services/jobs/events: what ranks report, made durable. Metric rows in step order (a batch sent
again replaces its rows, not doubles them) and each metric's newest value on the job; progress
whose peak memory only grows; checkpoint rows upserted by step and marked deleted when pruned."""

from __future__ import annotations

from harness import make_job
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Checkpoint, Job, JobStatus
from gpudeck.services.jobs import events

GiB = 1024**3


def steps_of(db: Session, job_id: int, **query: int | None) -> list[int]:
    limit = query.pop("limit", None) or 1000
    return [m.step for m in events.list_metrics(db, job_id, limit=limit, **query)]


def checkpoints(db: Session, job_id: int) -> dict[int, Checkpoint]:
    db.expire_all()
    rows = db.scalars(select(Checkpoint).where(Checkpoint.job_id == job_id))
    return {c.step: c for c in rows}


def record(step: int, **extra: object) -> events.CheckpointRecord:
    fields: dict = {"path": f"jobs/1/step_{step}", "files": ["sae.pt"], "size_bytes": 10}
    return events.CheckpointRecord(step=step, **({"loss": None} | fields | extra))


def test_metrics_list_in_step_order_after_a_step_and_up_to_a_limit(
    db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0], status=JobStatus.running)
    other = make_job(db, devices=[1], status=JobStatus.running)
    events.record_metrics(db, job.id, [(30, {"loss": 3.0}), (10, {"loss": 1.0})])
    events.record_metrics(db, job.id, [(20, {"loss": 2.0})])
    events.record_metrics(db, other.id, [(15, {"loss": 9.0})])
    db.commit()
    assert steps_of(db, job.id, after_step=None) == [10, 20, 30]
    assert steps_of(db, job.id, after_step=10) == [20, 30]
    assert steps_of(db, job.id, after_step=None, limit=2) == [10, 20]
    assert steps_of(db, other.id, after_step=None) == [15]


def test_a_batch_sent_again_with_replace_keeps_one_row_a_step(db: Session, devices: str) -> None:
    """The worker resends a batch whose commit's answer was lost: it may be stored already."""
    job = make_job(db, devices=[0], status=JobStatus.running)
    batch = [(10, {"loss": 1.0}), (20, {"loss": 2.0})]
    events.record_metrics(db, job.id, batch)
    events.record_metrics(db, job.id, [(20, {"loss": 2.5}), (30, {"loss": 3.0})], replace=True)
    db.commit()
    rows = events.list_metrics(db, job.id, after_step=None, limit=100)
    assert [(m.step, m.metrics) for m in rows] == [
        (10, {"loss": 1.0}),
        (20, {"loss": 2.5}),
        (30, {"loss": 3.0}),
    ]
    # Without replace, a step reported twice (a preempted job's second run) keeps both rows.
    events.record_metrics(db, job.id, [(30, {"loss": 2.9})])
    db.commit()
    assert steps_of(db, job.id, after_step=20) == [30, 30]


def test_the_job_keeps_each_metrics_newest_value_across_partial_reports(
    db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0], status=JobStatus.running)
    events.record_metrics(db, job.id, [(10, {"l0": 8.0, "loss": 1.0})])
    events.record_metrics(db, job.id, [(20, {"loss": 0.5}), (20, {"heldout_l0": 7.0})])
    db.commit()
    db.expire_all()
    stored = db.get(Job, job.id)
    assert stored is not None
    assert stored.latest_metrics == {"l0": 8.0, "loss": 0.5, "heldout_l0": 7.0}


def test_progress_sets_what_it_is_given_and_the_peak_only_grows(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0], status=JobStatus.running)
    events.record_progress(db, job.id, step=5, total=100, rate=2.5, peak_memory_bytes=3 * GiB)
    events.record_progress(db, job.id, step=6, peak_memory_bytes=2 * GiB)  # a lower reading
    events.record_progress(db, job.id)  # nothing given: nothing changes
    db.commit()
    db.expire_all()
    stored = db.get(Job, job.id)
    assert stored is not None
    assert stored.progress_step == 6 and stored.progress_total == 100
    assert stored.progress_rate == 2.5
    assert stored.peak_memory_bytes == 3 * GiB


def test_a_checkpoint_written_again_at_its_step_replaces_its_row(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0], status=JobStatus.running)
    events.record_checkpoint(db, job.id, record(10, loss=1.0))
    events.mark_pruned(db, job.id, kept_steps=[])  # pruned, then the step is written again
    again = record(10, loss=0.9, files=["sae.pt", "state.pt"], size_bytes=20, node="n1")
    events.record_checkpoint(db, job.id, again)
    db.commit()
    rows = checkpoints(db, job.id)
    assert list(rows) == [10]
    row = rows[10]
    assert (row.loss, row.files, row.size_bytes, row.node) == (0.9, again.files, 20, "n1")
    assert row.deleted_at is None  # it exists again


def test_pruned_checkpoints_are_marked_deleted_once_and_the_kept_ones_stay(
    db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0], status=JobStatus.running)
    for step in (10, 20, 30):
        events.record_checkpoint(db, job.id, record(step))
    events.mark_pruned(db, job.id, kept_steps=[20, 30])
    db.commit()
    first = checkpoints(db, job.id)
    assert first[10].deleted_at is not None
    assert first[20].deleted_at is None and first[30].deleted_at is None
    events.mark_pruned(db, job.id, kept_steps=[30])
    db.commit()
    second = checkpoints(db, job.id)
    assert second[10].deleted_at == first[10].deleted_at  # when it was pruned, not now
    assert second[20].deleted_at is not None and second[30].deleted_at is None
