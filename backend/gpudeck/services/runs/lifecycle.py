"""A job's run, as its worker sees it: claim, start, heartbeat, finish. Takes a Session, never
commits; every status change goes through job_state.transition (terminal ones release devices).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import cast, func, select, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, JobRun, JobStatus
from gpudeck.schemas.jobs import RankMemory
from gpudeck.services.cluster.telemetry import raise_peaks
from gpudeck.services.jobs import state as job_state
from gpudeck.services.queue.waiting import has_live_allocation
from gpudeck.services.runs import multinode

ACTIVE = (JobStatus.starting, JobStatus.running)


@dataclass(frozen=True)
class LaunchPlan:
    """What a worker needs to start a job's ranks (values only: no session, no ORM objects)."""

    job_id: int
    kind: str
    config: dict[str, Any]
    node: str
    device_indices: list[int]
    device_source: str  # "nvml" | "simulated"
    resume_from_job_id: int | None
    time_limit_s: float
    ran_before: bool = False  # it was preempted: it continues from its own checkpoint
    # A job across nodes (services.runs.multinode): this node's part of it. On one node, the
    # defaults: node rank 0 of 1, its ranks are the whole job, rendezvous chosen locally.
    node_rank: int = 0
    nnodes: int = 1
    rank_offset: int = 0
    total_world_size: int | None = None
    master_addr: str | None = None
    master_port: int = 0
    # A sharing job (docs/sharing.md): its reservation on each device, and the part of it that
    # is not its estimate (the CUDA context reserve it was submitted with). None: whole devices.
    reserved_bytes_per_device: int | None = None
    context_reserve_bytes: int | None = None
    # The node's devices, registered by its sampler: each rank's share of the node's cores is
    # one device's (engine.launch.threads_per_rank). 0: not known.
    node_devices: int = 0

    @property
    def world_size(self) -> int:
        return len(self.device_indices)

    @property
    def leads(self) -> bool:
        """Node rank 0: it runs rank 0, relays the job's events and publishes its status."""
        return self.node_rank == 0


@dataclass(frozen=True)
class Pulse:
    """One heartbeat's answer for a job: is it still ours to run, and should it stop?"""

    status: JobStatus
    cancel_requested_at: datetime | None
    preempt_requested_at: datetime | None = None


def claim_job(session: Session, job_id: int, node: str) -> LaunchPlan | None:
    """queued -> starting under the row lock; None if the job is not queued on this node, or
    still waits for the scheduler to place it (it holds no devices yet).

    The lock makes a second delivery of the same task (a redelivered message, or the start-up
    pick-up racing a dispatch) a no-op: only one worker ever moves a job out of `queued`.
    """
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.queued or job.node != node:
        return None
    rows = session.execute(
        select(Allocation.gpu_index, Device.source, Allocation.node)
        .outerjoin(Device, (Device.node == Allocation.node) & (Device.uuid == Allocation.gpu_uuid))
        .where(Allocation.job_id == job_id, Allocation.released_at.is_(None))
        .order_by(Allocation.rank)
    ).all()
    if not rows:
        return None
    job_state.transition(session, job_id, JobStatus.starting)
    # Ranks run node by node from the job's node: only a job across nodes ends elsewhere.
    parts = multinode.layout([n for _, _, n in rows]) if rows[-1][2] != node else []
    if len(parts) > 1:
        multinode.open_parts(session, job_id, parts)
    reserved, context = _reservation(job)
    return LaunchPlan(
        job_id=job.id,
        kind=job.kind,
        config=dict(job.config),
        node=job.node,
        device_indices=[index for index, _, n in rows if n == node],
        device_source=next((source for _, source, _ in rows if source), "simulated"),
        resume_from_job_id=job.resume_from_job_id,
        time_limit_s=float(job.time_limit_s),
        ran_before=job.started_at is not None,
        nnodes=max(1, len(parts)),
        total_world_size=len(rows) if len(parts) > 1 else None,
        reserved_bytes_per_device=reserved,
        context_reserve_bytes=context,
        node_devices=_device_count(session, node),
    )


def _device_count(session: Session, node: str) -> int:
    return int(session.scalar(select(func.count()).where(Device.node == node)) or 0)


def _reservation(job: Job) -> tuple[int | None, int | None]:
    """A sharing job's reservation per device and its context reserve, as fixed at submit
    (reservation = estimate + context reserve: services/submit/sharing.py); (None, None) for
    a job that holds whole devices."""
    reserved, estimate = job.reserved_bytes_per_device, job.estimate_bytes_per_device
    if reserved is None or estimate is None or estimate >= reserved:
        return reserved, None
    return reserved, reserved - estimate


def join_plan(
    joined: multinode.Joined, node: str, indices: list[int], source: str, node_devices: int
) -> LaunchPlan:
    """The plan of a node other than the first, from the part it claimed."""
    job = joined.job
    return LaunchPlan(
        job_id=int(job["job_id"]),
        kind=str(job["kind"]),
        config=dict(job["config"]),
        node=node,
        device_indices=indices,
        device_source=source,
        resume_from_job_id=job["resume_from_job_id"],
        time_limit_s=float(job["time_limit_s"]),
        node_rank=joined.part.node_rank,
        nnodes=joined.nnodes,
        rank_offset=joined.part.rank_offset,
        total_world_size=joined.total_world_size,
        master_addr=joined.master_addr,
        master_port=joined.master_port,
        node_devices=node_devices,
    )


def claim_part(session: Session, job_id: int, node: str) -> LaunchPlan | str | None:
    """A node other than the job's first claims its part (multinode.claim_part): its plan,
    multinode.WAIT while the first node has not published its rendezvous, or None."""
    joined = multinode.claim_part(session, job_id, node)
    if not isinstance(joined, multinode.Joined):
        return joined
    rows = session.execute(
        select(Allocation.gpu_index, Device.source)
        .outerjoin(Device, (Device.node == Allocation.node) & (Device.uuid == Allocation.gpu_uuid))
        .where(
            Allocation.job_id == job_id,
            Allocation.node == node,
            Allocation.released_at.is_(None),
        )
        .order_by(Allocation.rank)
    ).all()
    source = next((s for _, s in rows if s), "simulated")
    indices = [index for index, _ in rows]
    return join_plan(joined, node, indices, source, _device_count(session, node))


def mark_running(session: Session, job_id: int) -> bool:
    """starting -> running once the ranks exist; False if the job meanwhile left `starting`."""
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.starting:
        return False
    job_state.transition(session, job_id, JobStatus.running)
    return True


def finish_job(
    session: Session, job_id: int, target: JobStatus, *, error: str | None = None
) -> Job | None:
    """Move an active job to a terminal state; None if it already is terminal (e.g. reaped)."""
    job = job_state.lock_job(session, job_id)
    if JobStatus(job.status) in job_state.TERMINAL:
        return None
    return job_state.transition(session, job_id, target, error=error)


def requeue_job(session: Session, job_id: int) -> Job | None:
    """A preempted job, stopped after its final checkpoint, waits again (running -> queued,
    its devices freed): its next start resumes from its own newest complete checkpoint (the
    worker looks there first), so its steps continue. None if it is no longer running
    (cancelled or reaped meanwhile)."""
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.running:
        return None
    by = job.preempted_by_job_id
    job.preempt_requested_at = None
    job.dispatched_at = None
    reason = f"preempted by job {by}" if by is not None else "preempted"
    return job_state.transition(session, job_id, JobStatus.queued, error=reason)


def heartbeat(
    session: Session, job_ids: Sequence[int], *, lock_wait_s: float | None = None
) -> dict[int, Pulse]:
    """Renew the lease of the active jobs among `job_ids` (a node's parts of jobs across nodes
    are `multinode.renew_parts`'); jobs missing from the answer are no longer active (finished,
    or reaped as lost) and must be stopped by their runner. `lock_wait_s` bounds the wait for
    the job rows' locks (Postgres's lock_timeout for this transaction): past it the call
    raises, and the caller beats again at its next interval instead of queueing behind a hung
    peer."""
    if not job_ids:
        return {}
    if lock_wait_s is not None:
        timeout = f"{max(1, round(lock_wait_s * 1000))}ms"
        session.execute(select(func.set_config("lock_timeout", timeout, True)))
    active = Job.status.in_(list(ACTIVE))
    # Row locks in id order, as every multi-row locker takes them (jobs.state.lock_jobs: a
    # sweep's cancel): an UPDATE alone locks in the order it scans the table, which after
    # updates is not id order, and two such orders deadlocked a heartbeat against a cancel.
    in_id_order = (
        select(Job.id).where(Job.id.in_(list(job_ids)), active).order_by(Job.id).with_for_update()
    )
    rows = session.execute(
        update(Job)
        .where(Job.id.in_(in_id_order.scalar_subquery()), active)
        .values(heartbeat_at=func.now())
        .returning(Job.id, Job.status, Job.cancel_requested_at, Job.preempt_requested_at)
    ).all()
    return {
        job_id: Pulse(JobStatus(status), cancel_at, preempt_at)
        for job_id, status, cancel_at, preempt_at in rows
    }


def queued_job_ids(session: Session, node: str) -> list[int]:
    """Queued jobs of a node placed on its devices, oldest first: picked up by its worker on
    start (jobs still waiting for devices are the scheduler's)."""
    return list(
        session.scalars(
            select(Job.id)
            .where(Job.node == node, Job.status == JobStatus.queued, has_live_allocation())
            .order_by(Job.created_at, Job.id)
        )
    )


def segments(session: Session, job_id: int) -> list[JobRun]:
    """The job's stretches on devices, oldest first (one per start: preemption adds some)."""
    query = select(JobRun).where(JobRun.job_id == job_id).order_by(JobRun.started_at, JobRun.id)
    return list(session.scalars(query))


def record_rank_memory(
    session: Session, job_id: int, found: dict[str, Any], *, host_is_device: bool
) -> None:
    """What the job's ranks used on the host (`RankMemory`'s shape), written when it ends. When
    the host is the device (simulated devices), the job's peak per device is raised to the
    highest rank's: the sampler's 1 s look may have missed the last rise."""
    memory = RankMemory.model_validate(found)
    # Merged into what is there: the sampler's device peaks per rank stay.
    host = memory.model_dump(exclude={"device_peak_bytes"})
    merged = func.coalesce(Job.rank_memory, cast({}, JSONB)).op("||")(cast(host, JSONB))
    session.execute(update(Job).where(Job.id == job_id).values(rank_memory=merged))
    if host_is_device and memory.ranks:
        raise_peaks(session, {job_id: max(r.host_peak_rss_bytes for r in memory.ranks)})
    session.flush()
