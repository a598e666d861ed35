"""A job across several nodes, as the workers see it: its parts, their rendezvous, leases and ends.

Node rank 0 (the job's `node`) claims the job as a single-node worker does (queued -> starting)
and opens one `job_nodes` row per node; it then publishes the rendezvous endpoint (its advertised
address and a free port). The other nodes' workers wait for that endpoint, claim their part and
start their ranks with the global layout. Each node renews its part's lease: the reaper takes
the whole job as lost when any part stops beating. A part that fails fails the whole job at once
(the other nodes see it gone and kill their ranks); otherwise the job ends when its last part
ends. Takes a Session, never commits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, delete, exists, func, literal, select, update
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Job, JobNode, JobStatus
from gpudeck.services.jobs import state as job_state


@dataclass(frozen=True)
class Part:
    """One node's share of a job: its node rank and its ranks' place in the whole."""

    node: str
    node_rank: int
    rank_offset: int
    local_world_size: int


def layout(rank_nodes: Sequence[str]) -> list[Part]:
    """The parts of a job from its allocations' nodes in rank order (ranks contiguous per node,
    as placement_request._resolve_named orders them)."""
    parts: list[Part] = []
    for rank, node in enumerate(rank_nodes):
        if parts and parts[-1].node == node:
            last = parts[-1]
            parts[-1] = Part(node, last.node_rank, last.rank_offset, last.local_world_size + 1)
        elif any(p.node == node for p in parts):
            raise ValueError(f"the ranks on node {node} are not contiguous")
        else:
            parts.append(Part(node, len(parts), rank, 1))
    return parts


def open_parts(session: Session, job_id: int, parts: Sequence[Part]) -> None:
    """One row per node, its lease starting now: a node that never claims its part loses the
    job after the lease, as a worker that stops heartbeating does. A job started again (it was
    preempted and waited) may land on other nodes: its earlier run's rows go first."""
    session.execute(delete(JobNode).where(JobNode.job_id == job_id))
    session.add_all(
        JobNode(
            job_id=job_id,
            node=p.node,
            node_rank=p.node_rank,
            rank_offset=p.rank_offset,
            local_world_size=p.local_world_size,
        )
        for p in parts
    )
    session.flush()


def publish_endpoint(session: Session, job_id: int, node: str, address: str, port: int) -> None:
    """Node rank 0's rendezvous address and port, for the other nodes to join."""
    session.execute(
        update(JobNode)
        .where(JobNode.job_id == job_id, JobNode.node == node)
        .values(address=address, port=port, claimed_at=func.now(), heartbeat_at=func.now())
    )


@dataclass(frozen=True)
class Joined:
    """What a node other than the first needs to start its ranks."""

    part: Part
    total_world_size: int
    nnodes: int
    master_addr: str
    master_port: int
    job: dict[str, Any]  # kind, config, resume_from_job_id, time_limit_s


WAIT = "wait"


def claim_part(session: Session, job_id: int, node: str) -> Joined | str | None:
    """Claim this node's part of a job that the first node has started: WAIT while the first
    node has not published its endpoint yet, None when there is nothing (left) to claim."""
    job = job_state.lock_job(session, job_id)
    status = JobStatus(job.status)
    if status in job_state.TERMINAL or job.node == node:
        return None
    rows = session.scalars(select(JobNode).where(JobNode.job_id == job_id)).all()
    mine = next((r for r in rows if r.node == node), None)
    first = next((r for r in rows if r.node_rank == 0), None)
    if status is JobStatus.queued:
        # Not claimed by its first node yet: wait only if this node holds some of its devices.
        return WAIT if _holds_devices(session, job_id, node) else None
    if first is None or first.port is None or first.address is None:
        return WAIT
    if mine is None or mine.claimed_at is not None:
        return None
    mine.claimed_at = func.now()
    mine.heartbeat_at = func.now()
    session.flush()
    return Joined(
        part=Part(mine.node, mine.node_rank, mine.rank_offset, mine.local_world_size),
        total_world_size=sum(r.local_world_size for r in rows),
        nnodes=len(rows),
        master_addr=first.address,
        master_port=first.port,
        job={
            "job_id": job.id,
            "kind": job.kind,
            "config": dict(job.config),
            "resume_from_job_id": job.resume_from_job_id,
            "time_limit_s": float(job.time_limit_s),
        },
    )


def _holds_devices(session: Session, job_id: int, node: str) -> bool:
    held = exists().where(
        Allocation.job_id == job_id, Allocation.node == node, Allocation.released_at.is_(None)
    )
    return bool(session.scalar(select(held)))


def renew_parts(session: Session, job_ids: Sequence[int], node: str) -> None:
    """This node's lease on its parts of `job_ids` (none for single-node jobs: no rows). The
    worker commits it on its own, before `lifecycle.heartbeat`: a peer hung inside its heartbeat
    (SIGSTOP, its link down) holds the job rows' locks until Postgres ends its session, and this
    node's lease must not wait behind them (it did: the reaper then named both nodes silent)."""
    session.execute(
        update(JobNode)
        .where(JobNode.job_id.in_(list(job_ids)), JobNode.node == node)
        .values(heartbeat_at=func.now())
    )


def stale_part(lease_s: float) -> ColumnElement[bool]:
    """A job one of whose unfinished parts has not beaten within the lease."""
    return exists().where(
        JobNode.job_id == Job.id,
        JobNode.finished_at.is_(None),
        JobNode.heartbeat_at < func.now() - timedelta(seconds=lease_s),
    )


def confirm_part(session: Session, job_id: int, node: str) -> int:
    """This node's ranks of an ended job are gone (its worker killed them on learning of the
    end): its part is finished and its devices released. Returns how many were released."""
    session.execute(
        update(JobNode)
        .where(JobNode.job_id == job_id, JobNode.node == node, JobNode.finished_at.is_(None))
        .values(finished_at=func.now(), outcome="stopped")
    )
    return _release_ended_on(session, job_id, [node])


def release_silent_parts(session: Session, lease_s: float) -> list[tuple[int, str]]:
    """The devices of ended jobs' parts whose node has neither confirmed nor renewed its lease
    for `lease_s`: by then its worker has stopped its ranks, or has not launched anything since
    (a worker settles its ended jobs before it starts another: worker/runtime.py). Returns the
    (job, node) parts released."""
    silent = session.execute(
        select(JobNode.job_id, JobNode.node)
        .join(Job, Job.id == JobNode.job_id)
        .where(
            Job.status.in_(list(job_state.TERMINAL)),
            JobNode.claimed_at.is_not(None),
            JobNode.finished_at.is_(None),
            JobNode.heartbeat_at < func.now() - timedelta(seconds=lease_s),
        )
        .with_for_update(of=JobNode, skip_locked=True)
    ).all()
    for job_id, node in silent:
        session.execute(
            update(JobNode)
            .where(JobNode.job_id == job_id, JobNode.node == node)
            .values(finished_at=func.now(), outcome="silent")
        )
        _release_ended_on(session, job_id, [node])
    return [(job_id, node) for job_id, node in silent]


def _release_ended_on(session: Session, job_id: int, nodes: Sequence[str]) -> int:
    ended = select(Job.id).where(Job.id == job_id, Job.status.in_(list(job_state.TERMINAL)))
    return _release_on(session, ended, nodes)


def _release_on(session: Session, job_id: int | Select[Any], nodes: Sequence[str]) -> int:
    """Free the job's devices on `nodes`, whose ranks are gone; `job_id` may be a query."""
    jobs = job_id if not isinstance(job_id, int) else select(literal(job_id))
    released = session.execute(
        update(Allocation)
        .where(
            Allocation.job_id.in_(jobs),
            Allocation.node.in_(list(nodes)),
            Allocation.released_at.is_(None),
        )
        .values(released_at=func.now())
        .returning(Allocation.id)
    ).all()
    if released:
        job_state.wake_scheduler(session)
    session.flush()
    return len(released)


def silent_nodes(session: Session, job_id: int, lease_s: float) -> list[str]:
    """The nodes whose unfinished part of `job_id` has not beaten within the lease."""
    return list(
        session.scalars(
            select(JobNode.node)
            .where(
                JobNode.job_id == job_id,
                JobNode.finished_at.is_(None),
                JobNode.heartbeat_at < func.now() - timedelta(seconds=lease_s),
            )
            .order_by(JobNode.node_rank)
        )
    )


# What a rank says when a peer of its collective went away (its node died, froze or lost its
# link): the effect of another node's failure, never the cause of the job's.
PEER_LOST = re.compile(
    r"Connection reset by peer|Connection closed by peer|connectFullMesh failed|"
    r"\[gloo\][^\n]*(Read error|Write error|Timed out)|DistNetworkError|Broken pipe|"
    r"NCCL[^\n]*(remote process exited|unhandled system error)"
)


def parts(session: Session, job_id: int) -> list[JobNode]:
    return list(session.scalars(select(JobNode).where(JobNode.job_id == job_id)))


def then(cause: str, rows: Sequence[JobNode]) -> str:
    """The job's cause, followed by what the other parts saw after it (their lost peers)."""
    return "; then ".join([cause, *(r.error for r in rows if r.error and r.error != cause)])


def finish_part(
    session: Session, job_id: int, node: str, target: JobStatus, *, error: str | None = None
) -> Job | None:
    """Record this node's end. A single-node job ends here; a multi-node one ends `failed` at
    once when a part fails, else when its last part ends (with the first non-success outcome).
    Returns the job if it ended now, None if it already had or other parts still run."""
    job = job_state.lock_job(session, job_id)
    if JobStatus(job.status) in job_state.TERMINAL:
        return None
    rows = session.scalars(select(JobNode).where(JobNode.job_id == job_id)).all()
    if not rows:
        return job_state.transition(session, job_id, target, error=error)
    mine = next((r for r in rows if r.node == node), None)
    if mine is not None:
        mine.finished_at = func.now()
        mine.outcome = target.value
    if target in (JobStatus.failed, JobStatus.lost):
        text = f"on node {node}: {error}" if error else f"its part on node {node} {target.value}"
        running = [r for r in rows if r is not mine and r.finished_at is None]
        if error and PEER_LOST.search(error) and running and mine is not None:
            # Its ranks only lost a peer: the cause is elsewhere. The part that has it reports
            # it, or the reaper names the node that went silent, within the lease. This
            # node's ranks are gone (its worker reports after killing them): its devices free.
            mine.error = text
            _release_on(session, job_id, [node])
            return None
        return job_state.transition(session, job_id, JobStatus.failed, error=then(text, rows))
    session.flush()
    if any(r.finished_at is None for r in rows if r is not mine):
        return None
    outcomes = [JobStatus(r.outcome or target) for r in sorted(rows, key=lambda r: r.node_rank)]
    final = next((o for o in outcomes if o is not JobStatus.succeeded), JobStatus.succeeded)
    if not job_state.can_transition(JobStatus(job.status), final):
        # Every part ended before the first node marked the job running (a very short job).
        job_state.transition(session, job_id, JobStatus.running)
    return job_state.transition(session, job_id, final, error=error)
