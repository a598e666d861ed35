"""What ranks report, made durable: metrics rows, checkpoint rows, progress, peak memory.

The worker reads each job's Redis stream (see gpudeck.worker.relay) and calls these in batches.
Stream names live here too: the API's WebSocket reads the same stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import cast, delete, func, insert, select, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from gpudeck.models import Checkpoint, Job, JobMetric

# XREAD's answer (decode_responses=True): [(stream, [(entry id, fields)])], or None.
StreamReply = list[tuple[str, list[tuple[str, dict[str, str]]]]] | None


def job_stream(job_id: int) -> str:
    """The Redis stream a job's ranks publish to and the worker adds status changes to."""
    return f"gpudeck:job:{job_id}:events"


@dataclass(frozen=True)
class CheckpointRecord:
    step: int
    path: str  # relative to the data directory
    files: list[str]
    size_bytes: int
    loss: float | None
    node: str | None = None  # the node that wrote it
    node_path: str | None = None  # its directory on that node
    file_sizes: dict[str, int] | None = None


def record_metrics(
    session: Session,
    job_id: int,
    rows: Sequence[tuple[int, dict[str, float]]],
    *,
    replace: bool = False,
) -> None:
    """Insert metric rows. `replace`: first delete rows of the same steps, for a batch that
    may have been committed already (its commit's answer was lost with the connection)."""
    if rows and replace:
        steps = [step for step, _ in rows]
        session.execute(
            delete(JobMetric).where(JobMetric.job_id == job_id, JobMetric.step.in_(steps))
        )
    if rows:
        session.execute(
            insert(JobMetric),
            [{"job_id": job_id, "step": step, "metrics": metrics} for step, metrics in rows],
        )
        _keep_latest(session, job_id, rows)


def _keep_latest(
    session: Session, job_id: int, rows: Sequence[tuple[int, dict[str, float]]]
) -> None:
    """Each metric's newest value on the job (Job.latest_metrics), in arrival order: a report
    may carry only some metrics (held-out figures at checkpoints; a stopped SAE's final one
    has only those), so its newest row alone is not its newest figures."""
    newest: dict[str, float] = {}
    for _, metrics in rows:
        newest |= metrics
    merged = Job.latest_metrics.op("||")(cast(newest, JSONB))
    session.execute(update(Job).where(Job.id == job_id).values(latest_metrics=merged))


def record_progress(
    session: Session,
    job_id: int,
    *,
    step: int | None = None,
    total: int | None = None,
    rate: float | None = None,
    peak_memory_bytes: int | None = None,
) -> None:
    values: dict[str, object] = {}
    if step is not None:
        values["progress_step"] = step
    if total is not None:
        values["progress_total"] = total
    if rate is not None:
        values["progress_rate"] = rate
    if peak_memory_bytes is not None:
        values["peak_memory_bytes"] = func.greatest(
            func.coalesce(Job.peak_memory_bytes, 0), peak_memory_bytes
        )
    if values:
        session.execute(update(Job).where(Job.id == job_id).values(**values))


def record_checkpoint(session: Session, job_id: int, record: CheckpointRecord) -> None:
    """Insert (or refresh, for a step written again) one checkpoint row."""
    stmt = pg_insert(Checkpoint).values(
        job_id=job_id,
        step=record.step,
        path=record.path,
        files=record.files,
        size_bytes=record.size_bytes,
        loss=record.loss,
        node=record.node,
        node_path=record.node_path,
        file_sizes=record.file_sizes,
    )
    session.execute(
        stmt.on_conflict_do_update(
            constraint="uq_checkpoints_job_step",
            set_={
                "path": stmt.excluded.path,
                "files": stmt.excluded.files,
                "size_bytes": stmt.excluded.size_bytes,
                "loss": stmt.excluded.loss,
                "node": stmt.excluded.node,
                "node_path": stmt.excluded.node_path,
                "file_sizes": stmt.excluded.file_sizes,
                "deleted_at": None,
            },
        )
    )


def mark_pruned(session: Session, job_id: int, kept_steps: Sequence[int]) -> None:
    """Rows whose directory the trainer pruned (it keeps the newest k) are marked deleted."""
    session.execute(
        update(Checkpoint)
        .where(
            Checkpoint.job_id == job_id,
            Checkpoint.deleted_at.is_(None),
            Checkpoint.step.not_in(list(kept_steps)),
        )
        .values(deleted_at=func.now())
    )


def last_metric_step(session: Session, job_id: int) -> int | None:
    """The newest step a job has a metric point for (one index lookup)."""
    return session.scalar(select(func.max(JobMetric.step)).where(JobMetric.job_id == job_id))


def list_metrics(
    session: Session, job_id: int, *, after_step: int | None, limit: int
) -> list[JobMetric]:
    """A job's metric points in step order, after `after_step` if given."""
    query = select(JobMetric).where(JobMetric.job_id == job_id)
    if after_step is not None:
        query = query.where(JobMetric.step > after_step)
    return list(session.scalars(query.order_by(JobMetric.step, JobMetric.id).limit(limit)))
