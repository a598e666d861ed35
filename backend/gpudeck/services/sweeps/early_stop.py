"""Early stopping of a sweep's hopeless members (schemas/sweeps.EarlyStop): the rules, pure,
and the scheduler's duty that applies them. A member to stop is cancelled with its reason and
`early_stopped_at` set: its worker stops it with a final checkpoint, and it ends
`stopped_early` (services/jobs/state.py), its devices free for the next member."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import BigInteger, and_, column, func, select, values
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobMetric, JobStatus, Sweep
from gpudeck.schemas.sweeps import EarlyStop
from gpudeck.services.jobs.state import TERMINAL

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
    rule: EarlyStop,
    member: Curve,
    peers: Sequence[Curve],
    finished: Sequence[Curve] = (),
    total: int | None = None,
) -> str | None:
    """Why `member` (running) should stop now, or None. `peers`: the sweep's other members'
    curves, running or ended (ASHA's rungs); `finished`: those of the members that succeeded
    (the median rule compares with them only, as Optuna's median pruner does: comparing
    running members with each other would stop half of them at every look). `total`: the
    member's steps, when its kind says: a member that has reported its last step has done its
    work, and stopping it would save nothing and call a finished run stopped."""
    if not member or member[-1][0] < rule.grace_steps:
        return None
    step = member[-1][0]
    if total is not None and step >= total:
        return None
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
    totals: Mapping[int, int | None] | None = None,
) -> list[Stop]:
    out = []
    finished = [curves[j] for j in succeeded if j in curves]
    for job_id in running:
        peers = [c for other, c in curves.items() if other != job_id]
        total = (totals or {}).get(job_id)
        reason = verdict(rule, curves.get(job_id, ()), peers, finished, total)
        if reason is not None:
            out.append(Stop(job_id, reason))
    return out


@dataclass
class SweepCurves:
    """One sweep's curves of its rule's metric as the looks read them. A member's curve is
    complete once it is read a look after the member was seen ended (rows its worker sent
    just before it ended may be committed just after)."""

    metric: str
    curves: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)
    complete: set[int] = field(default_factory=set)
    used_at: float = 0.0


@dataclass
class CurveCache:
    """The scheduler's curves by sweep, so that a look (every second) reads only the metric
    rows written since the last: per member, those past the newest step it has. A member
    re-run from a checkpoint under the same job (preempted and requeued) writes again steps
    the cache has: they are not read again (its best so far already counts them). A sweep
    not looked at for `keep_s` is forgotten."""

    sweeps: dict[int, SweepCurves] = field(default_factory=dict)
    keep_s: float = 600.0

    def of(self, sweep_id: int, metric: str) -> SweepCurves:
        now = time.monotonic()
        for old in [s for s, c in self.sweeps.items() if now - c.used_at > self.keep_s]:
            del self.sweeps[old]
        entry = self.sweeps.get(sweep_id)
        if entry is None or entry.metric != metric:
            entry = self.sweeps[sweep_id] = SweepCurves(metric)
        entry.used_at = now
        return entry


SEEN = values(column("job_id", BigInteger), column("step", BigInteger), name="seen")


def read_curves(
    session: Session, entry: SweepCurves, members: Sequence[tuple[int, str]]
) -> dict[int, list[tuple[int, float]]]:
    """`entry`'s curves brought up to date with the rows written since it was last read, for
    the members (job id, status) not complete and not queued (a queued member has no new rows
    yet; any it has are read when it runs)."""
    entry.complete |= entry.ended
    stale = [(j, c[-1][0] if (c := entry.curves.get(j)) else -1) for j, status in members
             if j not in entry.complete and status != JobStatus.queued]  # fmt: skip
    if stale:
        seen = SEEN.data(stale)
        rows = session.execute(
            select(JobMetric.job_id, JobMetric.step, JobMetric.metrics[entry.metric].as_float())
            .join(seen, and_(JobMetric.job_id == seen.c.job_id, JobMetric.step > seen.c.step))
            .where(JobMetric.metrics.has_key(entry.metric))
            .order_by(JobMetric.job_id, JobMetric.step)
        )
        for job_id, step, value in rows:
            entry.curves.setdefault(job_id, []).append((int(step), float(value)))
    entry.ended = {j for j, status in members if status in TERMINAL}
    return entry.curves


def stop_hopeless(session: Session, cache: CurveCache | None = None) -> list[Stop]:
    """One look at every sweep with a rule and a running member; the stops are asked for in
    the caller's transaction. With `cache` (the scheduler's), only new metric rows are read."""
    cache = cache or CurveCache()
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
            select(Job.id, Job.status, Job.early_stopped_at, Job.progress_total).where(
                Job.sweep_id == sweep_id
            )
        ).all()
        running = [j for j, status, stopped, _ in members if status == "running" and not stopped]
        succeeded = [j for j, status, _, _ in members if status == "succeeded"]
        totals = {j: total for j, _, _, total in members}
        entry = cache.of(sweep_id, rule.metric)
        curves = read_curves(session, entry, [(j, status) for j, status, _, _ in members])
        for stop in to_stop(rule, running, curves, succeeded, totals):
            job = session.get(Job, stop.job_id, with_for_update=True)
            if job is None or job.status != JobStatus.running or job.early_stopped_at:
                continue
            job.early_stopped_at = job.cancel_requested_at = func.now()
            job.error = stop.reason
            stops.append(stop)
    session.flush()
    return stops
