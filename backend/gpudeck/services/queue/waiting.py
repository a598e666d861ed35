"""The waiting jobs in the database: which jobs wait, read as the pass takes them (with the
scheduler's cache of unchanged rows), and in queue order for the views. Takes a Session, never
commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Select,
    String,
    and_,
    any_,
    bindparam,
    exists,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Job, JobStatus, Sweep
from gpudeck.schemas.jobs import QueueInfo, node_counts
from gpudeck.services.queue.plan import Waiting


def has_live_allocation() -> ColumnElement[bool]:
    return exists().where(Allocation.job_id == Job.id, Allocation.released_at.is_(None))


def is_waiting() -> ColumnElement[bool]:
    """Queued for GPUDeck's own nodes and holding nothing: the scheduler's to place (a job on
    a Slurm cluster is Slurm's to place: services/executors)."""
    return and_(Job.status == JobStatus.queued, Job.cluster_id.is_(None), ~has_live_allocation())


_NODES = bindparam("nodes", type_=ARRAY(String))


# Built once: every submit asks (building the statement costs more CPU than running it).
_WAITING_ON_NODES = select(
    exists().where(
        is_waiting(),
        or_(
            Job.node == any_(_NODES),
            Job.requested_nodes.has_any(_NODES),
            Job.spread_nodes.is_not(None),
            Job.devices_per_node.is_not(None),
        ),
    )
)


def waiting_on_nodes(session: Session, nodes: Sequence[str]) -> bool:
    """A job waits that may use one of `nodes`: its node is one of them, it names devices on
    one, or it is a count spread over nodes (which may use any)."""
    return bool(session.scalar(_WAITING_ON_NODES, {"nodes": list(nodes)}))


def queued_count(session: Session, owner: str) -> int:
    query = select(func.count()).where(Job.owner == owner, Job.status == JobStatus.queued)
    return int(session.scalar(query) or 0)


# The common job's `[]` dependencies come back as SQL NULL (as its unnamed devices and nodes
# are stored), which the driver need not parse: parsing three JSON values a job took half of a
# pass over 5,000 waiting jobs (bench/scheduler.py submit leaves such a queue).
_NO_DEPENDENCIES_AS_NULL = func.nullif(
    Job.depends_on, literal_column("'[]'::jsonb"), type_=JSONB
).label("depends_on")


# The version Postgres gives every row (the transaction that wrote it, xmin): any update of a
# job's row (hold, release, priority, a requeue) changes it.
_VERSION: Any = literal_column("jobs.xmin::text::bigint").label("version")


# Columns, not ORM rows: a queue of 10,000 jobs is read on every pass and every queue view.
_WAITING_COLUMNS: tuple[Any, ...] = (
    Job.id,
    _VERSION,
    Job.owner,
    Job.node,
    Job.world_size,
    Job.created_at,
    Job.time_limit_s,
    Job.priority,
    Job.requested_devices,
    Job.estimate_bytes_per_device,
    Job.held,
    _NO_DEPENDENCIES_AS_NULL,
    Job.requested_nodes,
    Job.spread_nodes,
    Job.devices_per_node,
    Job.sweep_id,
    Sweep.max_parallel,
    Job.reserved_bytes_per_device,
)


# A sweep's member carries its sweep's max_parallel (a change to it touches the waiting
# members' rows, so the cache below reads it again: sweeps/control.set_max_parallel).
_WAITING_FROM = Job.__table__.outerjoin(Sweep.__table__, Sweep.id == Job.sweep_id)


_WAITING = select(*_WAITING_COLUMNS).select_from(_WAITING_FROM).where(is_waiting())


_WAITING_BY_ID = (
    select(*_WAITING_COLUMNS)
    .select_from(_WAITING_FROM)
    .where(Job.id == any_(bindparam("ids", type_=ARRAY(BigInteger))), is_waiting())
)


_WAITING_VERSIONS: Select[Any] = select(Job.id, _VERSION).where(is_waiting())


@dataclass
class WaitingCache:
    """The waiting jobs as the scheduler's last pass read them, by id: (row version, the job
    as the pass takes it, its dependencies). A pass then reads two numbers a waiting job and
    the full row only of jobs new or changed since: 10,000 waiting jobs cost a pass ~100 ms
    read in full (bench/scheduler.py snapshot)."""

    jobs: dict[int, tuple[int, Waiting, tuple[int, ...]]] = field(default_factory=dict)


def waiting_jobs(session: Session, now: float, cache: WaitingCache | None = None) -> list[Waiting]:
    """The waiting jobs, in no particular order (the pass orders them); with `cache`, read in
    full only where their row is new or changed (the cache is updated to this read)."""
    if cache is None:
        built = [_waiting_of(row, now) for row in session.execute(_WAITING)]
        return _with_dependencies(session, built)
    versions = session.execute(_WAITING_VERSIONS).all()
    stale = [
        job_id for job_id, version in versions if cache.jobs.get(job_id, (None,))[0] != version
    ]
    if stale:
        for row in session.execute(_WAITING_BY_ID, {"ids": stale}):
            cache.jobs[row.id] = _waiting_of(row, now)
    cache.jobs = {job_id: cache.jobs[job_id] for job_id, _ in versions if job_id in cache.jobs}
    return _with_dependencies(session, list(cache.jobs.values()))


def _waiting_of(row: Any, now: float) -> tuple[int, Waiting, tuple[int, ...]]:
    """(row version, the job as the pass takes it, the ids it depends on) of a waiting row.
    Unpacked by position: a Row's attribute access by name cost more than the query (0.4 µs
    each, 14 a job)."""
    (
        job_id,
        version,
        owner,
        node,
        world_size,
        created_at,
        time_limit_s,
        priority,
        requested,
        bytes_per_device,
        held,
        depends_on,
        requested_nodes,
        spread_nodes,
        devices_per_node,
        sweep,
        sweep_max_parallel,
        share_bytes,
    ) = row
    waiting = Waiting(
        id=job_id,
        owner=owner,
        node=node,
        world_size=world_size,
        submitted_at=created_at.timestamp() if created_at is not None else now,
        time_limit_s=time_limit_s,
        priority=priority,
        requested=tuple(requested) if requested is not None else None,
        bytes_per_device=bytes_per_device,
        held=held,
        requested_nodes=tuple(requested_nodes) if requested_nodes else None,
        node_counts=node_counts(world_size, spread_nodes, devices_per_node),
        sweep=sweep,
        sweep_max_parallel=sweep_max_parallel,
        share_bytes=share_bytes,
    )
    return version, waiting, tuple(int(d) for d in depends_on or ())


def _with_dependencies(
    session: Session, jobs: list[tuple[int, Waiting, tuple[int, ...]]]
) -> list[Waiting]:
    """The jobs, those with dependencies given their current statuses (read now: another
    job's end does not change this job's row)."""
    dep_ids = {d for _, _, deps in jobs for d in deps}
    if not dep_ids:
        return [waiting for _, waiting, _ in jobs]
    rows = session.execute(select(Job.id, Job.status).where(Job.id.in_(dep_ids))).all()
    statuses = {job_id: str(status) for job_id, status in rows}
    return [
        replace(waiting, dependencies={d: statuses.get(d, "cancelled") for d in deps})
        if deps
        else waiting
        for _, waiting, deps in jobs
    ]


def ordered_waiting(session: Session, infos: dict[int, QueueInfo], owner: str | None) -> list[Job]:
    # Slurm's jobs have no position (Slurm orders its own queue): after GPUDeck's.
    ids = sorted(infos, key=lambda i: (infos[i].position is None, infos[i].position or 0))
    if not ids:
        return []
    query = select(Job).where(Job.id.in_(ids), is_waiting())
    if owner is not None:
        query = query.where(Job.owner == owner)
    by_id = {j.id: j for j in session.scalars(query)}
    return [by_id[i] for i in ids if i in by_id]


def jobs_waiting(session: Session, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    return set(session.scalars(select(Job.id).where(Job.id.in_(list(ids)), is_waiting())))
