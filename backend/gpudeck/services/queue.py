"""The queue in the database: read the cluster into the pure pass (services.queue_plan), apply
its decisions, and show why each waiting job waits. Takes a Session, never commits.

A waiting job is `queued` with no live allocation; a placed one is `queued` with allocations,
dispatched to its worker. A start goes through `allocation.reserve`, the same insert as an
explicit request: the partial unique index still decides every race.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
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
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, JobRun, JobStatus, Node, Sweep, UserQuota
from gpudeck.schemas.jobs import QueueInfo, node_counts
from gpudeck.services import job_state
from gpudeck.services.allocation import Chosen, reserve
from gpudeck.services.errors import GpuBusy
from gpudeck.services.inventory import OFFLINE_AFTER_S
from gpudeck.services.placement import Readings, usable
from gpudeck.services.queue_plan import Dev, Holding, Plan, Policy, Quota, Start, Waiting, plan


def has_live_allocation() -> ColumnElement[bool]:
    return exists().where(Allocation.job_id == Job.id, Allocation.released_at.is_(None))


def is_waiting() -> ColumnElement[bool]:
    """Queued and holding nothing: the scheduler's to place."""
    return and_(Job.status == JobStatus.queued, ~has_live_allocation())


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


def queued_count(session: Session, owner: str) -> int:
    query = select(func.count()).where(Job.owner == owner, Job.status == JobStatus.queued)
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
        select(Job.owner, func.sum(Job.world_size * seconds * weight))
        .join(JobRun, JobRun.job_id == Job.id)
        .where(age < 20 * half_life_s)
        .group_by(Job.owner)
    ).all()
    return {owner: float(total or 0.0) for owner, total in rows}


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


def plan_device(
    device: Device,
    holders: dict[tuple[str, str], int],
    live: Readings | None,
    *,
    online: bool = True,
    releasing: Collection[int] = (),
) -> Dev:
    """An inventory row as the planner sees it: who holds it, whether an outside process runs
    on it, and its usable free memory (None without a reading)."""
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
    )


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
)
# A sweep's member carries its sweep's max_parallel (set once, at the sweep's creation).
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
    holds = session.execute(
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
        )
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.released_at.is_(None))
    ).all()
    holder: dict[tuple[str, str], int] = {}
    held: dict[int, list[tuple[str, str]]] = defaultdict(list)
    meta: dict[int, tuple[str, float, int, bool, bool, bool, int | None]] = {}
    releasing: set[int] = set()
    for row in holds:
        node, uuid, job_id, owner, started_at, limit, priority, preemptible, stopping = row[:9]
        ended, step, total, rate, sweep = row[9:]
        holder[(node, uuid)] = job_id
        held[job_id].append((node, uuid))
        # An ended job's devices free as soon as their node confirms its ranks are gone.
        if ended:
            ends, estimated = now, True
            releasing.add(job_id)
        else:
            ends, estimated = expected_end(now, _epoch(started_at, now) + limit, step, total, rate)
        meta[job_id] = (owner, ends, priority, preemptible, stopping, estimated, sweep)
    holding = [
        Holding(
            j, owner, tuple(held[j]), ends, priority, preemptible, stopping, estimated, sweep,
            ended=j in releasing,
        )
        for j, (owner, ends, priority, preemptible, stopping, estimated, sweep) in meta.items()
    ]  # fmt: skip
    # Only nodes whose sampler reports take new jobs (an offline node's worker may be gone).
    fresh = Node.last_seen_at >= func.now() - func.make_interval(0, 0, 0, 0, 0, 0, OFFLINE_AFTER_S)
    devices = []
    inventory = session.execute(
        select(Device, fresh.label("online")).outerjoin(Node, Node.name == Device.node)
    ).all()
    for d, online in inventory:
        devices.append(plan_device(d, holder, live, online=bool(online), releasing=releasing))
    waiting = waiting_jobs(session, now, cache)
    return now, devices, holding, waiting


@dataclass(frozen=True)
class PassResult:
    """One pass over the database's state: its decisions, and what it was taken over (the
    waiting jobs and each owner's fair-share usage, which the queue summary reads)."""

    plan: Plan
    waiting: list[Waiting]
    usage: dict[str, float]


def run_pass(
    session: Session,
    live: Readings | None,
    *,
    half_life_s: float,
    policy: Policy | None = None,
    explain: bool = True,
    cache: WaitingCache | None = None,
) -> PassResult:
    """Read the state (snapshot, usage, quotas) and plan over it: the one read-then-plan
    sequence of the scheduler's pass, the queue view and the queue summary. `explain=False`:
    a deciding-only pass (queue_plan.plan), which needs no run shares."""
    now, devices, holding, waiting = snapshot(session, live, cache)
    usage = usage_by_owner(session, half_life_s)
    decided = plan(
        devices,
        holding,
        waiting,
        now=now,
        usage=usage,
        quotas=quotas(session),
        policy=policy,
        explain=explain,
        run_shares=run_shares(session) if explain else None,
    )
    return PassResult(decided, waiting, usage)


def compute_plan(
    session: Session,
    live: Readings | None,
    *,
    half_life_s: float,
    policy: Policy | None = None,
) -> Plan:
    return run_pass(session, live, half_life_s=half_life_s, policy=policy).plan


def queue_infos(plan_: Plan) -> dict[int, QueueInfo]:
    return {
        job_id: QueueInfo(
            position=info.position,
            reason_code=info.reason_code,
            reason=info.reason,
            expected_start_at=(
                datetime.fromtimestamp(info.expected_start, UTC)
                if info.expected_start is not None
                else None
            ),
            expected_start_from_time_limits=info.from_time_limits,
        )
        for job_id, info in plan_.infos.items()
    }


def start(session: Session, decision: Start) -> bool:
    """Place one job as the pass decided: False when the state moved meanwhile (it was
    cancelled, held, or placed; or another request took a device first: the index said no)."""
    job = job_state.lock_job(session, decision.job_id)
    if job.status != JobStatus.queued or job.held:
        return False
    live = exists().where(Allocation.job_id == job.id, Allocation.released_at.is_(None))
    if session.scalar(select(live)):
        return False
    try:
        reserve(session, job, [Chosen(d.node, d.uuid, d.index) for d in decision.devices])
    except GpuBusy:
        return False
    # A count spread over nodes learns its nodes now: the first is node rank 0, whose worker
    # claims the job (services.runs.claim_job).
    job.node = decision.devices[0].node
    return True


def preempt(session: Session, victim_id: int, for_job_id: int) -> bool:
    """Ask the worker of a running preemptible job to stop it (SIGTERM, a final checkpoint)
    and queue it again (services.runs.requeue_job); False if it is no longer one to stop."""
    job = job_state.lock_job(session, victim_id)
    if job.status != JobStatus.running or not job.preemptible or job.cancel_requested:
        return False
    if job.preempt_requested_at is None:
        job.preempt_requested_at = func.now()
        job.preempted_by_job_id = for_job_id
    return True


def cancel_waiting(session: Session, job_id: int, reason: str) -> bool:
    """Cancel a waiting job whose dependency failed; False if it is no longer waiting."""
    job = job_state.lock_job(session, job_id)
    if job.status != JobStatus.queued:
        return False
    job_state.transition(session, job_id, JobStatus.cancelled, error=reason)
    return True


def ordered_waiting(session: Session, infos: dict[int, QueueInfo], owner: str | None) -> list[Job]:
    ids = sorted(infos, key=lambda i: infos[i].position)
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
