"""Early stopping of a sweep's hopeless members (schemas/sweeps.EarlyStop): the rules, pure,
and the scheduler's duty that applies them. A member to stop is cancelled with its reason and
`early_stopped_at` set: its worker stops it with a final checkpoint, and it ends
`stopped_early` (services/job_state.py), its devices free for the next member."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobMetric, JobStatus, Sweep
from gpudeck.schemas.sweeps import EarlyStop

# One member's curve of the rule's metric: (step, value), steps ascending.
Curve = Sequence[tuple[int, float]]


def _best(curve: Curve, up_to: int, mode: str) -> float | None:
    values = [v for step, v in curve if step <= up_to and math.isfinite(v)]
    if not values:
        return None
    return min(values) if mode == "min" else max(values)


def _worse(a: float, b: float, mode: str) -> bool:
    return a > b if mode == "min" else a < b


def verdict(
    rule: EarlyStop, member: Curve, peers: Sequence[Curve], finished: Sequence[Curve] = ()
) -> str | None:
    """Why `member` (running) should stop now, or None. `peers`: the sweep's other members'
    curves, running or ended (ASHA's rungs); `finished`: those of the members that succeeded
    (the median rule compares with them only, as Optuna's median pruner does: comparing
    running members with each other would stop half of them at every look)."""
    if not member or member[-1][0] < rule.grace_steps:
        return None
    step = member[-1][0]
    if rule.rule == "median":
        mine = _best(member, step, rule.mode)
        reached = [_best(p, step, rule.mode) for p in finished if p and p[-1][0] >= step]
        theirs = [v for v in reached if v is not None]
        if mine is None or len(theirs) < rule.min_peers:
            return None
        median = statistics.median(theirs)
        if _worse(mine, median, rule.mode):
            return (
                f"stopped early at step {step}: its best {rule.metric} {mine:.4g} is worse than "
                f"the median {median:.4g} of {len(theirs)} members at that step"
            )
        return None
    rung = rule.grace_steps
    while rung * rule.reduction_factor <= step:
        rung *= rule.reduction_factor
    mine = _best(member, rung, rule.mode)
    reached = [_best(p, rung, rule.mode) for p in peers if p and p[-1][0] >= rung]
    theirs = [v for v in reached if v is not None]
    if mine is None or len(theirs) + 1 < rule.reduction_factor:
        return None
    keep = max(1, (len(theirs) + 1) // rule.reduction_factor)
    ranked = sorted([*theirs, mine], reverse=rule.mode == "max")
    if _worse(mine, ranked[keep - 1], rule.mode):
        return (
            f"stopped early at rung {rung} (step {step}): its best {rule.metric} {mine:.4g} is "
            f"not in the best {keep} of the {len(ranked)} members that reached the rung"
        )
    return None


@dataclass(frozen=True)
class Stop:
    job_id: int
    reason: str


def to_stop(
    rule: EarlyStop,
    running: Sequence[int],
    curves: Mapping[int, Curve],
    succeeded: Sequence[int] = (),
) -> list[Stop]:
    out = []
    finished = [curves[j] for j in succeeded if j in curves]
    for job_id in running:
        peers = [c for other, c in curves.items() if other != job_id]
        reason = verdict(rule, curves.get(job_id, ()), peers, finished)
        if reason is not None:
            out.append(Stop(job_id, reason))
    return out


def stop_hopeless(session: Session) -> list[Stop]:
    """One look at every sweep with a rule and a running member; the stops are asked for in
    the caller's transaction."""
    sweeps = session.execute(
        select(Sweep.id, Sweep.spec).where(
            Sweep.spec["early_stop"].isnot(None),
            select(Job.id)
            .where(
                Job.sweep_id == Sweep.id,
                Job.status == JobStatus.running,
                Job.early_stopped_at.is_(None),
            )
            .exists(),
        )
    ).all()
    stops: list[Stop] = []
    for sweep_id, spec in sweeps:
        if not spec.get("early_stop"):
            continue
        rule = EarlyStop.model_validate(spec["early_stop"])
        members = session.execute(
            select(Job.id, Job.status, Job.early_stopped_at).where(Job.sweep_id == sweep_id)
        ).all()
        running = [j for j, status, stopped in members if status == "running" and not stopped]
        succeeded = [j for j, status, _ in members if status == "succeeded"]
        metric = JobMetric.metrics[rule.metric].as_float()
        rows = session.execute(
            select(JobMetric.job_id, JobMetric.step, metric)
            .where(
                JobMetric.job_id.in_([j for j, _, _ in members]),
                JobMetric.metrics.has_key(rule.metric),
            )
            .order_by(JobMetric.job_id, JobMetric.step)
        )
        curves: dict[int, list[tuple[int, float]]] = {}
        for job_id, step, value in rows:
            curves.setdefault(job_id, []).append((int(step), float(value)))
        for stop in to_stop(rule, running, curves, succeeded):
            job = session.get(Job, stop.job_id, with_for_update=True)
            if job is None or job.status != JobStatus.running or job.early_stopped_at:
                continue
            job.early_stopped_at = job.cancel_requested_at = func.now()
            job.error = stop.reason
            stops.append(stop)
    session.flush()
    return stops
