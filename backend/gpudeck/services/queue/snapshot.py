"""The cluster as the pass takes it, read from the database: devices and who holds them, when
running jobs are expected to end, each owner's fair-share usage, quotas and run shares. Takes a
Session, never commits."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Float,
    bindparam,
    case,
    cast,
    exists,
    func,
    select,
    text,
)
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Checkpoint, Device, Job, JobRun, JobStatus, Node, UserQuota
from gpudeck.services.cluster.inventory import OFFLINE_AFTER_S
from gpudeck.services.jobs import state as job_state
from gpudeck.services.placement.live_memory import Readings, usable
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.queue.plan import Dev, Holding, Quota, Waiting
from gpudeck.services.queue.waiting import WaitingCache, waiting_jobs


def free_devices(session: Session, node: str) -> int:
    """Devices of the node with no live allocation and no external process (unlocked)."""
    held = exists().where(
        Allocation.node == Device.node,
        Allocation.gpu_uuid == Device.uuid,
        Allocation.released_at.is_(None),
    )
    query = select(func.count()).where(
        Device.node == node, ~held, func.jsonb_array_length(Device.external_processes) == 0
    )
    return int(session.scalar(query) or 0)


def usage_by_owner(session: Session, half_life_s: float) -> dict[str, float]:
    """Each user's recent device-seconds, halved every `half_life_s` since the use ended (the
    idea of Slurm's multifactor fair share). Counted per segment on devices (`job_runs`), so a
    preempted job's earlier stretches count while it waits again; running ones up to now."""
    end = func.coalesce(JobRun.ended_at, func.now())
    seconds = func.extract("epoch", end - JobRun.started_at)
    age = func.extract("epoch", func.now() - end)
    weight = func.power(0.5, age / half_life_s)
    rows = session.execute(
        select(Job.owner, func.sum(Job.world_size * seconds * weight * _device_share()))
        .join(JobRun, JobRun.job_id == Job.id)
        .where(age < 20 * half_life_s)
        .group_by(Job.owner)
    ).all()
    return {owner: float(total or 0.0) for owner, total in rows}


def _device_share() -> Any:
    """The share of each device a job held: 1 when whole; a sharing job's reservation over
    the device's usable memory (a 20 GiB share of a 76 GiB device counts 0.26 device)."""
    capacity = (
        select(func.max(func.gpudeck_usable_when_idle(Device.memory_total_bytes)))
        .join(
            Allocation,
            (Allocation.node == Device.node) & (Allocation.gpu_uuid == Device.uuid),
        )
        .where(Allocation.job_id == Job.id)
        .scalar_subquery()
    )
    reserved = cast(Job.reserved_bytes_per_device, Float)  # not bigint / bigint: whole numbers
    share = func.least(1.0, reserved / func.nullif(capacity, 0))
    return case((Job.reserved_bytes_per_device.is_(None), 1.0), else_=func.coalesce(share, 1.0))


def quotas(session: Session) -> dict[str, Quota]:
    return {
        q.user_name: Quota(q.max_devices, q.max_queued_jobs)
        for q in session.scalars(select(UserQuota))
    }


_QUOTA_OF = select(UserQuota.max_devices, UserQuota.max_queued_jobs).where(
    UserQuota.user_name == bindparam("owner")
)


def quota_of(session: Session, owner: str) -> Quota:
    """One user's quota (no row: no limits); every submit reads it."""
    row = session.execute(_QUOTA_OF, {"owner": owner}).first()
    return Quota(row.max_devices, row.max_queued_jobs) if row is not None else Quota()


def _epoch(value: datetime | None, default: float) -> float:
    return value.timestamp() if value is not None else default


@dataclass(frozen=True)
class Sharing:
    """Sharing by memory on one device, as the pass takes it: the bytes live shared
    allocations reserve there and their owners, and whether a job holds it whole."""

    shared_bytes: int = 0
    owners: frozenset[str] = frozenset()
    whole: bool = False


NO_SHARING = Sharing()


def plan_device(
    device: Device,
    holders: dict[tuple[str, str], int],
    live: Readings | None,
    *,
    online: bool = True,
    releasing: Collection[int] = (),
    sharing: Sharing = NO_SHARING,
    node_policy: tuple[bool, bool] = (False, False),
) -> Dev:
    """An inventory row as the planner sees it: who holds it, whether an outside process runs
    on it, its usable free memory (None without a reading), and what sharing jobs reserve on
    it under its node's sharing policy ((allows sharing, across users))."""
    memory = (live or {}).get((device.node, device.uuid))
    return Dev(
        device.node,
        device.uuid,
        device.index,
        holder=(holder := holders.get((device.node, device.uuid))),
        releasing=holder is not None and holder in releasing,
        external=bool(device.external_processes),
        usable_bytes=usable(memory) if memory is not None else None,
        online=online,
        capacity_bytes=usable_when_idle(device.memory_total_bytes),
        shared_bytes=sharing.shared_bytes,
        share_owners=sharing.owners,
        whole=sharing.whole,
        shareable=node_policy[0],
        share_across_users=node_policy[1],
    )


def expected_end(
    now: float, limit_at: float, step: int, total: int | None, rate: float | None
) -> tuple[float, bool]:
    """(when a running job is expected to end, whether that is an estimate): the steps left at
    its measured rate, never past its time limit; without a rate, its time limit (a bound: a
    job of 5,070 of 6,000 steps was counted for the rest of its 24 h, and the job waiting
    behind it told "expected start in ~24 h" a minute before it started)."""
    if rate is not None and rate > 0 and total is not None:
        return min(limit_at, now + max(0, total - step) / rate), True
    return limit_at, False


def unsaved_s(now: float, started_at: datetime | None, checkpointed_at: datetime | None) -> float:
    """The seconds a running job has run since the point a resume restarts it from: its newest
    checkpoint, or its start (of this run: a preempted job's start is set again when it runs
    again) when it has none since. Not started: none."""
    if started_at is None:
        return 0.0
    restore_at = max(_epoch(started_at, now), _epoch(checkpointed_at, 0.0))
    return max(0.0, now - restore_at)


# The last this many succeeded jobs of an owner, from the last RUN_SHARE_DAYS, tell how much
# of their time limit that owner's jobs run; fewer than RUN_SHARE_MIN: none is assumed.
RUN_SHARE_JOBS = 20


RUN_SHARE_DAYS = 30


RUN_SHARE_MIN = 3


_RUN_SHARES = text(
    """
    SELECT owner, percentile_cont(0.5) WITHIN GROUP (ORDER BY share) FROM (
        SELECT owner,
               LEAST(1.0, EXTRACT(EPOCH FROM finished_at - started_at) / time_limit_s) AS share,
               row_number() OVER (PARTITION BY owner ORDER BY finished_at DESC) AS n
        FROM jobs
        WHERE status = 'succeeded' AND started_at IS NOT NULL AND time_limit_s > 0
          AND finished_at > now() - make_interval(days => :days)
    ) recent
    WHERE n <= :jobs
    GROUP BY owner
    HAVING count(*) >= :least
    """
)


def run_shares(session: Session) -> dict[str, float]:
    """Per owner, the median share of its time limit their recent jobs ran: how long a job of
    theirs that has not started yet is expected to hold its devices (for the expected starts
    of the jobs behind it; Tsafrir et al., 2007, use the user's recent runtimes the same way)."""
    rows = session.execute(
        _RUN_SHARES, {"days": RUN_SHARE_DAYS, "jobs": RUN_SHARE_JOBS, "least": RUN_SHARE_MIN}
    )
    return {owner: float(share) for owner, share in rows}


def snapshot(
    session: Session,
    live: Readings | None,
    cache: WaitingCache | None = None,
) -> tuple[float, list[Dev], list[Holding], list[Waiting]]:
    """(now, devices, jobs holding devices, waiting jobs) as the pass takes them; with a
    `cache` (the scheduler's), only waiting jobs new or changed since its last pass are read
    in full."""
    now = _epoch(session.scalar(select(func.now())), 0.0)
    holder, holding, sharing = _holdings(session, now)
    releasing = {h.id for h in holding if h.ended}
    # Only nodes whose sampler reports take new jobs (an offline node's worker may be gone).
    fresh = Node.last_seen_at >= func.now() - func.make_interval(0, 0, 0, 0, 0, 0, OFFLINE_AFTER_S)
    inventory = session.execute(
        select(
            Device,
            fresh.label("online"),
            func.coalesce(Node.share_memory, False),
            func.coalesce(Node.share_across_users, False),
        ).outerjoin(Node, Node.name == Device.node)
    ).all()
    devices = [
        plan_device(
            d,
            holder,
            live,
            online=bool(online),
            releasing=releasing,
            sharing=sharing.get((d.node, d.uuid), NO_SHARING),
            node_policy=(bool(shares), bool(across)),
        )
        for d, online, shares, across in inventory
    ]
    return now, devices, holding, waiting_jobs(session, now, cache)


# When a holding job last checkpointed: a resume restarts there (pruned ones are gone).
_NEWEST_CHECKPOINT = (
    select(func.max(Checkpoint.created_at))
    .where(Checkpoint.job_id == Job.id, Checkpoint.deleted_at.is_(None))
    .scalar_subquery()
)
_HOLDS = (
    select(
        Allocation.node,
        Allocation.gpu_uuid,
        Job.id,
        Job.owner,
        Job.started_at,
        Job.time_limit_s,
        Job.priority,
        Job.preemptible & (Job.status == JobStatus.running),
        Job.preempt_requested_at.is_not(None),
        Job.status.in_(list(job_state.TERMINAL)),
        Job.progress_step,
        Job.progress_total,
        Job.progress_rate,
        Job.sweep_id,
        Allocation.reserved_bytes,
        _NEWEST_CHECKPOINT,
    )
    .join(Job, Job.id == Allocation.job_id)
    .where(Allocation.released_at.is_(None))
)


def _holdings(
    session: Session, now: float
) -> tuple[dict[tuple[str, str], int], list[Holding], dict[tuple[str, str], Sharing]]:
    """(a job holding each held device, each holding job as the pass takes it, what sharing
    jobs reserve on each device)."""
    holder: dict[tuple[str, str], int] = {}
    sharing: dict[tuple[str, str], Sharing] = {}
    held: dict[int, list[tuple[str, str]]] = defaultdict(list)
    meta: dict[int, tuple[str, float, int, bool, bool, bool, int | None, bool, float | None]] = {}
    unsaved: dict[int, float] = {}  # the seconds each has run since its restore point
    share: dict[int, int] = {}  # a sharing job's reservation on each of its devices
    for row in session.execute(_HOLDS):
        node, uuid, job_id, owner, started_at, limit, priority, preemptible, stopping = row[:9]
        ended, step, total, rate, sweep, reserved, checkpointed_at = row[9:]
        holder[(node, uuid)] = job_id
        was = sharing.get((node, uuid), NO_SHARING)
        if reserved is None:
            sharing[(node, uuid)] = Sharing(was.shared_bytes, was.owners, whole=True)
        else:
            # A sharing job may be preempted too: for the bytes it frees (a sharing job), or
            # with every job beside it on its device (a whole-device job): queue.plan.preempt.
            sharing[(node, uuid)] = Sharing(
                was.shared_bytes + reserved, was.owners | {owner}, was.whole
            )
        held[job_id].append((node, uuid))
        if reserved is not None:
            share[job_id] = reserved
        # An ended job's devices free as soon as their node confirms its ranks are gone.
        if ended:
            ends, estimated = now, True
        else:
            ends, estimated = expected_end(now, _epoch(started_at, now) + limit, step, total, rate)
        run_s = total / rate if rate and total else None  # its whole run at its rate
        unsaved[job_id] = unsaved_s(now, started_at, checkpointed_at)
        meta[job_id] = (
            owner, ends, priority, preemptible, stopping, estimated, sweep, ended, run_s
        )  # fmt: skip
    holding = [
        Holding(
            j, owner, tuple(held[j]), ends, priority, preemptible, stopping, estimated, sweep,
            ended=ended, run_s=run_s, share_bytes=share.get(j), unsaved_s=unsaved[j],
        )
        for j, (owner, ends, priority, preemptible, stopping, estimated, sweep, ended, run_s)
        in meta.items()
    ]  # fmt: skip
    return holder, holding, sharing
