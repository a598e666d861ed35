"""Preemption for a job that shares by memory: the running preemptible jobs of lower priority
it may stop until its reservation fits, and the room it claims while they stop.

The rule, kept simple, device by device. A device may take the job when it is online, no
outside process runs on it, no later job of the reservation needs it, its node allows sharing
and the job's reservation fits it idle. On a shared device the victims are the jobs sharing it:
where the node does not let users share, every other user's job first (they must all go), then
those that free what the room lacks stopping no job of a higher priority than needed, then the
fewest jobs, then the least work lost, then the fewest bytes (plan/share_victims.py: exact
while there are few ways to choose, the best found in a bounded search beyond). A device held
whole by one such job may be taken too, that job the one victim. Each device's option costs,
in order: its victims not already stopping, its victims, whether a job holding it whole is
stopped, their highest priority; the job takes the cheapest devices, of those alike the best
fit (the least room left after), then the least work lost. So it stops a job holding a device
whole only where no device fits by fewer victims, and at equal victims it stops sharing jobs
instead (a whole job would lose its device for a few bytes). The best fit comes before the
work lost because the bytes a victim frees past the need stay out of reach of the later jobs
of the pass: the pass's benchmark lost more work with the order the other way round
(docs/benchmarks.md). A victim's bytes stay reserved until it has stopped: the waiting job
starts in a later pass, placed as any sharing job.
"""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass

from gpudeck.services.queue.plan.model import Dev, Holding, Key, Waiting, fits
from gpudeck.services.queue.plan.preempt import remembered_refusal, victim
from gpudeck.services.queue.plan.share_victims import cheapest_victims
from gpudeck.services.queue.plan.state import DeviceState

Cost = tuple[int, int, bool, float]


@dataclass(frozen=True)
class _Option:
    """One device the job could go on once `victims` stop, and the room left there then."""

    dev: Dev
    victims: tuple[Holding, ...]
    whole: bool  # the victim holds the device whole
    room_after: int

    @property
    def cost(self) -> Cost:
        return (
            sum(not h.stopping for h in self.victims),
            len(self.victims),
            self.whole,
            max((h.priority for h in self.victims), default=-math.inf),
        )

    @property
    def lost_device_s(self) -> int:
        """The work its victims lose (those already stopping lose it anyway)."""
        return sum(h.lost_device_s for h in self.victims if not h.stopping)


def _freed_bytes(victims: list[Holding]) -> int:
    return sum(h.share_bytes or 0 for h in victims)


def _among_sharers(state: DeviceState, job: Waiting, d: Dev, need: int) -> _Option | None:
    room = state.room[d.key]
    if d.key in state.free:  # idle: its live reading judged too, as plan/sharing.py does
        return _Option(d, (), False, room - need) if room >= need and fits(d, need) else None
    sharers = state.sharers.get(d.key, [])
    others = (
        set()
        if d.share_across_users
        else {i for i in sharers if state.owner_of.get(i) != job.owner}
    )
    forced = [victim(state, job, i) for i in sorted(others)]
    if any(h is None for h in forced):
        return None  # another user's job it may not stop stays: the device is not open to it
    must = [h for h in forced if h is not None]
    rest = [h for i in sharers if i not in others and (h := victim(state, job, i)) is not None]
    more = cheapest_victims(rest, need - room - _freed_bytes(must))
    if more is None:
        return None
    victims = must + more
    return _Option(d, tuple(victims), False, room + _freed_bytes(victims) - need)


def _option(
    state: DeviceState, job: Waiting, d: Dev, need: int, protected: Set[Key]
) -> _Option | None:
    """What it takes for the job's reservation to fit on `d`; None: it cannot."""
    if d.external or not d.online or d.key in protected or not d.shareable:
        return None
    if d.capacity_bytes is None or d.capacity_bytes < need:
        return None
    if d.key in state.room:
        return _among_sharers(state, job, d, need)
    holder = state.holder.get(d.key)
    h = victim(state, job, holder) if holder is not None else None
    if h is None or h.share_bytes is not None:
        return None  # held whole by a job it may not stop (or claimed by an earlier job)
    return _Option(d, (h,), True, d.capacity_bytes - need)


def _choose(
    state: DeviceState, job: Waiting, devs: list[Dev], need: int, protected: Set[Key]
) -> list[_Option]:
    """The cheapest devices among `devs` (every named one, for named devices); empty: none."""
    options = [_option(state, job, d, need, protected) for d in devs]
    if job.requested is not None:
        found = [o for o in options if o is not None]
        return found if len(found) == len(devs) else []
    ranked = sorted(
        (o for o in options if o is not None),
        key=lambda o: (o.cost, o.room_after, o.lost_device_s, o.dev.node, o.dev.index),
    )
    return ranked[: job.world_size] if len(ranked) >= job.world_size else []


def _total(options: list[_Option]) -> tuple[float, ...]:
    costs = [o.cost for o in options]
    return (sum(c[0] for c in costs), sum(c[1] for c in costs), sum(c[2] for c in costs),
            max((c[3] for c in costs), default=-math.inf),
            sum(o.lost_device_s for o in options))  # fmt: skip


def share_victims_for(
    state: DeviceState, job: Waiting, devs: list[Dev], protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """The victims that let the sharing job's reservation fit, and the devices it would go on
    (rank order); no victims when none do. A count naming no node (node_counts) goes on the
    one node where it costs least, as it would start on one node."""
    need = int(job.share_bytes or 0)
    if job.node_counts is not None:
        per_node = [_choose(state, job, ds, need, protected) for ds in state.by_node.values()]
        options = min((o for o in per_node if o), key=_total, default=[])
    else:
        options = _choose(state, job, devs, need, protected)
    victims = list({h.id: h for o in options for h in o.victims}.values())
    if not victims:
        return [], devs
    chosen = [o.dev for o in options]
    if job.requested is None:
        chosen.sort(key=lambda d: (d.node, d.index))
    return victims, chosen


def find_share_preemption(
    state: DeviceState, job: Waiting, devs: list[Dev], protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """`share_victims_for`, its refusals cached as plan/preempt.find_preemption caches its
    own: a claim only takes room away, and a start clears the cache."""
    refused = (
        "share-victims",
        job.node,
        job.wanted,
        job.node_counts,
        job.world_size,
        job.share_bytes,
        job.owner,
        job.priority,
        bool(protected),
    )
    return remembered_refusal(
        state, refused, devs, lambda: share_victims_for(state, job, devs, protected)
    )


def claim_share(
    state: DeviceState, job: Waiting, victims: list[Holding], devs: list[Dev], until: float
) -> None:
    """The room the sharing job will take once its victims stop: taken for the rest of the
    pass. A shared device keeps for others only what is left both now and after (its victims'
    bytes stay reserved until they release them); a device its whole holder frees stays
    closed to sharing jobs until that one is gone."""
    need = int(job.share_bytes or 0)
    for d in devs:
        if d.key in state.room:
            on_it = set(state.sharers.get(d.key, []))
            freed = _freed_bytes([h for h in victims if h.id in on_it])
            now = state.room[d.key]
            state.take_shared(job.id, job.owner, [d], need, until)
            state.room[d.key] = min(now, now + freed - need)
        else:
            state.holder[d.key] = job.id
            state.set_avail(d, until, bound=True)
    state.claimed.update(h.id for h in victims)
    state.used[job.owner] += job.world_size
