"""When a sweep's waiting members may start under its cap (max_parallel): each starts as a
running member ends, at the end its measured rate gives, and then holds its slot for as long as
its running siblings are measured to take. Slurm's job array %N answers "unknown" here; the
running members' rates are known, so their queue need not be. Pure: values in, values out."""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpudeck.services.queue.plan.model import Holding, Waiting


@dataclass
class SweepSlots:
    """Per sweep, when each of its `max_parallel` slots is next free (a heap), a member's
    expected run from its running siblings' rates (None: none measured yet), and whether some
    slot's time is a time limit rather than a measured end."""

    free_at: dict[int, list[float]] = field(default_factory=dict)
    run_s: dict[int, float] = field(default_factory=dict)
    bound: set[int] = field(default_factory=set)


def sweep_slots(holding: Sequence[Holding]) -> SweepSlots:
    slots = SweepSlots()
    runs: dict[int, list[float]] = {}
    for h in holding:
        if h.sweep is None or h.ended:
            continue
        slots.free_at.setdefault(h.sweep, []).append(h.ends_at)
        if not h.estimated:
            slots.bound.add(h.sweep)
        if h.run_s is not None:
            runs.setdefault(h.sweep, []).append(h.run_s)
    for heap in slots.free_at.values():
        heapq.heapify(heap)
    # the median: one member slowed by a neighbour's load should not move every estimate
    slots.run_s = {sweep: statistics.median(r) for sweep, r in runs.items()}
    return slots


def member_run_s(slots: SweepSlots, job: Waiting, share: float | None) -> tuple[float, bool]:
    """(how long a member of `job`'s sweep is expected to run, whether that is a bound): its
    running siblings' measured run, else its time limit (times its owner's run share)."""
    measured = slots.run_s.get(job.sweep) if job.sweep is not None else None
    if measured is not None:
        return min(measured, job.time_limit_s), False
    return job.time_limit_s * (share if share is not None else 1.0), share is None


def take_slot(
    slots: SweepSlots, job: Waiting, now: float, share: float | None
) -> tuple[float, bool] | None:
    """(when `job`, waiting for its sweep's cap, takes the next slot, whether that counts a
    time limit); the slot is then its own until it is expected to end. None: no member of its
    sweep runs, so no slot frees by the cap's rule (it waits on something else)."""
    heap = slots.free_at.get(job.sweep) if job.sweep is not None else None
    if not heap:
        return None
    start = max(now, heapq.heappop(heap))
    run, bound = member_run_s(slots, job, share)
    heapq.heappush(heap, start + run)
    from_limits = job.sweep in slots.bound
    if bound and job.sweep is not None:
        slots.bound.add(job.sweep)
    return start, from_limits


def started(slots: SweepSlots, job: Waiting, now: float, share: float | None) -> None:
    """A member the pass starts now holds a slot from now until it is expected to end."""
    if job.sweep is None:
        return
    run, bound = member_run_s(slots, job, share)
    heapq.heappush(slots.free_at.setdefault(job.sweep, []), now + run)
    if bound:
        slots.bound.add(job.sweep)
