"""The pass: each waiting job, in order, goes through four named steps.

    gate -> try_start -> try_preempt -> reserve_ahead

`gate` settles what needs no device (a failed dependency, held, a sweep's cap, a quota);
`try_start` places it now when that cannot delay the reservation (EASY backfill);
`try_preempt` stops lower-priority preemptible jobs for it (whole devices, or room for a
sharing job); `reserve_ahead` says when it could start and, for the first such job, protects
that reservation from later ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from gpudeck.schemas.jobs import ReasonCode
from gpudeck.services.queue.plan.backfill import may_backfill, quota_delays
from gpudeck.services.queue.plan.choose import choose_now, choose_spread_now
from gpudeck.services.queue.plan.model import (
    EMPTY,
    Dev,
    Holding,
    Info,
    Key,
    Plan,
    Policy,
    Quota,
    Reservation,
    Start,
    Waiting,
    dependency_state,
    order_key,
)
from gpudeck.services.queue.plan.preempt import claim, find_preemption
from gpudeck.services.queue.plan.share_preempt import claim_share, find_share_preemption
from gpudeck.services.queue.plan.sharing import choose_shared
from gpudeck.services.queue.plan.state import DeviceState
from gpudeck.services.queue.plan.sweep_slots import SweepSlots, started, sweep_slots, take_slot

_NO_DEPS = ("ok", "")


@dataclass
class Pass:
    """What one pass carries from job to job besides the devices: its decisions so far, the
    reservation (once a job could not start), and the queue position of the next job."""

    state: DeviceState
    now: float
    policy: Policy = field(default_factory=Policy)
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    run_shares: Mapping[str, float] = field(default_factory=dict)
    explain: bool = True
    out: Plan = field(default_factory=Plan)
    reservation: Reservation | None = None
    first_blocked: Waiting | None = None  # the job holding the reservation
    position: int = 0
    slots: SweepSlots = field(default_factory=SweepSlots)  # each sweep's slots under its cap

    @property
    def protected(self) -> Set[Key]:
        return self.reservation.devices if self.reservation is not None else EMPTY

    def wait(self, job: Waiting, code: ReasonCode, reason: str, at: float | None = None) -> None:
        self.out.infos[job.id] = Info(self.position, code, reason, at)


def plan(
    devices: Sequence[Dev],
    holding: Sequence[Holding],
    waiting: Iterable[Waiting],
    *,
    now: float,
    usage: Mapping[str, float] | None = None,
    quotas: Mapping[str, Quota] | None = None,
    policy: Policy | None = None,
    explain: bool = True,
    run_shares: Mapping[str, float] | None = None,
) -> Plan:
    """Decide which waiting jobs start now, which are cancelled, and why the others wait.

    `explain=False` (the scheduler's latency-critical passes) decides the same starts,
    cancels and preemptions but skips what only explains: past the first blocked job (the
    reservation backfill protects), a job that cannot start gets no expected start, and the
    devices are not reserved ahead for it (only `infos` and `free_at` differ).

    `run_shares`: per owner, the share of its time limit a job of theirs is expected to run
    (services.queue.snapshot.run_shares), for the expected starts of the jobs behind a waiting one;
    an owner without one: the whole limit."""
    policy = policy or Policy()
    state = DeviceState(devices, holding, now)
    p = Pass(state, now, policy, quotas or {}, run_shares or {}, explain)
    p.slots = sweep_slots(holding)
    for job in sorted(waiting, key=lambda j: order_key(j, usage or {}, policy)):
        decide(p, job)
    p.out.free_at = state.avail
    p.out.room = {
        k: (state.devs[k].index, room) for k, room in state.room.items() if state.devs[k].shareable
    }
    return p.out


def decide(p: Pass, job: Waiting) -> None:
    """One waiting job through the pass's steps; each step that settles it ends the walk."""
    if not gate(p, job) or _only_explains(p, job):
        return
    devs = p.state.candidates(job)
    if devs is None:  # a named device left the inventory: it waits for its return
        p.wait(job, "devices_busy", "devices busy: gone")
        return
    blocked = try_start(p, job, devs)
    if blocked is None:
        return
    code, why = blocked
    # A sharing job may also make room where it is short of memory (plan/share_preempt.py).
    may_preempt = code == "devices_busy" or (
        job.share_bytes is not None and code == "insufficient_memory"
    )
    if may_preempt and try_preempt(p, job, devs):
        return
    if not p.explain and p.reservation is not None:
        return
    reserve_ahead(p, job, devs, code, why)


def gate(p: Pass, job: Waiting) -> bool:
    """What needs no device: False when the job is settled here (cancelled for a failed
    dependency, or waiting while held, for a dependency, its sweep's cap or its quota)."""
    deps, dep_reason = dependency_state(job.dependencies) if job.dependencies else _NO_DEPS
    if deps == "failed":
        p.out.cancels.append((job.id, dep_reason))
        return False
    p.position += 1
    if job.held:
        p.wait(job, "held", "held: release it to let it start")
    elif deps == "wait":
        p.wait(job, "dependency", dep_reason)
    elif (reason := _sweep_cap(p.state, job)) is not None:
        # Slurm's job array %N: one starts as another ends, here at that end's estimate
        slot = take_slot(p.slots, job, p.now, p.run_shares.get(job.owner))
        at, from_limits = slot if slot is not None else (None, False)
        p.out.infos[job.id] = Info(p.position, "sweep", reason, at, from_limits)
    elif (reason := _over_quota(p, job)) is not None:
        p.wait(job, "quota", reason)
    else:
        return True
    return False


def _sweep_cap(state: DeviceState, job: Waiting) -> str | None:
    cap = job.sweep_max_parallel
    if job.sweep is None or cap is None or state.sweep_running[job.sweep] < cap:
        return None
    running = state.sweep_running[job.sweep]
    return f"sweep {job.sweep}: {running} members running (max_parallel {cap})"


def _over_quota(p: Pass, job: Waiting) -> str | None:
    quota = p.quotas.get(job.owner)
    limit = quota.max_devices if quota else None
    held = p.state.used[job.owner]
    if limit is None or held + job.world_size <= limit:
        return None
    return (
        f"quota: {job.owner} may hold {limit} devices at once, "
        f"holds {held}, this job needs {job.world_size}"
    )


def _only_explains(p: Pass, job: Waiting) -> bool:
    """Past the reservation, a job that cannot start and preempts nobody: the rest of the
    pass would only explain why, which `explain=False` skips."""
    return (
        not p.explain
        and p.reservation is not None
        and p.state.cannot_start(job)
        and job.priority <= p.state.preemptible_floor
    )


def try_start(p: Pass, job: Waiting, devs: list[Dev]) -> tuple[ReasonCode, str | None] | None:
    """Start the job now if devices are free and starting cannot delay the reservation;
    None when it started, else why it cannot (its reason code and words)."""
    if job.share_bytes is not None:
        chosen, why = choose_shared(p.state, job, devs, p.protected)
    elif job.node_counts is not None:
        chosen, why = choose_spread_now(p.state, job, p.protected)
    else:
        chosen, why = choose_now(p.state, job, devs, p.protected)
    if not chosen:
        memory = why is not None and why.startswith("insufficient memory")
        return ("insufficient_memory" if memory else "devices_busy"), why
    ends = p.now + job.time_limit_s
    if p.reservation is not None and not (
        may_backfill(p.policy, p.reservation, ends, chosen)
        and not quota_delays(p.state, p.quotas, job, p.first_blocked)
    ):
        return "priority", f"priority: its devices are reserved for job {p.reservation.job_id}"
    if job.share_bytes is not None:
        p.state.take_shared(job.id, job.owner, chosen, job.share_bytes, ends)
    else:
        p.state.take(job.id, chosen, ends)
    p.state.used[job.owner] += len(chosen)
    if job.sweep is not None:
        p.state.sweep_running[job.sweep] += 1
        started(p.slots, job, p.now, p.run_shares.get(job.owner))
    p.out.starts.append(Start(job.id, tuple(chosen)))
    p.position -= 1  # a started job holds no place in the queue
    return None


def try_preempt(p: Pass, job: Waiting, devs: list[Dev]) -> bool:
    """Stop lower-priority preemptible jobs whose devices let this one start; True when it
    will start once they have stopped (their devices are claimed for the rest of the pass)."""
    if job.priority <= p.state.preemptible_floor:
        return False
    sharing = job.share_bytes is not None
    find = find_share_preemption if sharing else find_preemption
    victims, devs = find(p.state, job, devs, p.protected)
    if not victims:
        return False
    (claim_share if sharing else claim)(p.state, job, victims, devs, p.now + job.time_limit_s)
    p.out.preempts.extend((h.id, job.id) for h in victims if not h.stopping)
    names = ", ".join(f"job {h.id}" for h in victims)
    reason = f"preempting {names} (preemptible, lower priority): starts once stopped"
    p.wait(job, "preempting", reason, p.now)
    return True


def reserve_ahead(
    p: Pass, job: Waiting, devs: list[Dev], code: ReasonCode, why: str | None
) -> None:
    """When the job could start at the soonest, and its devices taken from then on for as
    long as it is expected to run, so later jobs' expected starts count it. The first job
    here holds the reservation backfill protects (from `when` on, whatever the estimate)."""
    state = p.state
    when, keys = state.earliest(job, devs)
    if p.reservation is None:
        p.reservation = Reservation(job.id, when, frozenset(keys))
        p.first_blocked = job
    from_limits = any(k in state.bound for k in keys)
    share = p.run_shares.get(job.owner)
    run = job.time_limit_s * (share if share is not None else 1.0)
    for k in keys:
        if state.avail[k] < when + run:
            state.set_avail(state.devs[k], when + run, bound=from_limits or share is None)
    expected = None if math.isinf(when) else when
    p.out.infos[job.id] = Info(p.position, code, why or "devices busy", expected, from_limits)
