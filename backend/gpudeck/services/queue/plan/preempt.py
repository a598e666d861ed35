"""Preemption: the running preemptible jobs of lower priority a waiting job may stop to start,
and the devices it claims for the rest of the pass while they write their final checkpoint."""

from __future__ import annotations

from collections.abc import Set

from gpudeck.services.queue.plan.choose import place_spread
from gpudeck.services.queue.plan.model import EMPTY, Dev, Holding, Key, Waiting, fits
from gpudeck.services.queue.plan.state import DeviceState


def victims_for(
    state: DeviceState, job: Waiting, devs: list[Dev], protected: Set[Key]
) -> list[Holding]:
    """The running preemptible jobs of lower priority whose devices let `job` start (jobs
    already being stopped first, then the lowest priority, then the largest: fewest victims);
    empty when no such set exists. A device in another job's reservation is never taken."""
    keys = {d.key for d in devs}

    def victim_of(d: Dev) -> Holding | None:
        holder = state.holder[d.key]
        h = state.holdings.get(holder) if holder is not None else None
        if h is None or d.external or not d.online or d.key in protected:
            return None
        if h.priority >= job.priority:
            return None
        # Its devices still its own in this pass: no earlier job claimed them.
        return h if h.preemptible and h.id not in state.claimed else None

    busy = [d for d in devs if d.key not in state.free]
    if job.requested is not None:
        found = {d.key: victim_of(d) for d in busy}
        if not busy or any(h is None for h in found.values()):
            return []
        return list({h.id: h for h in found.values() if h is not None}.values())
    count = sum(
        1
        for d in devs
        if d.key in state.free and d.key not in protected and fits(d, job.bytes_per_device)
    )
    candidates = {h.id: h for d in busy if (h := victim_of(d)) is not None}
    chosen: list[Holding] = []
    for h in sorted(
        candidates.values(), key=lambda h: (not h.stopping, h.priority, -len(h.devices))
    ):
        if count >= job.world_size:
            break
        chosen.append(h)
        count += sum(1 for k in h.devices if k in keys)
    return chosen if count >= job.world_size else []


def spread_victims_for(
    state: DeviceState, job: Waiting, protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """For a count spread over nodes: the running preemptible jobs of lower priority whose
    devices, with the free ones, let the job be placed by its own rule (`place_spread`), and
    the devices it would take; empty when no such set exists. Whole jobs, chosen as
    `victims_for` does (those already stopping first, then the lowest priority, then the
    largest), then each one the placement can do without is spared. A device in another
    job's reservation is never taken."""

    def usable(h: Holding) -> set[Key]:
        return {
            k
            for k in h.devices
            if k in state.devs
            and state.holder.get(k) == h.id
            and state.devs[k].online
            and not state.devs[k].external
            and k not in protected
        }

    freed = {
        h.id: keys
        for h in state.holdings.values()
        if h.preemptible
        and h.priority < job.priority
        and h.id not in state.claimed
        and (keys := usable(h))
    }
    order = sorted(
        (state.holdings[i] for i in freed),
        key=lambda h: (not h.stopping, h.priority, -len(h.devices)),
    )
    free_now = {k for k in state.free if k not in protected}

    def place(victims: list[Holding]) -> list[Dev]:
        keys = free_now.union(*(freed[h.id] for h in victims))
        return place_spread(state, job, EMPTY, keys)[0]

    victims: list[Holding] = []
    for h in order:
        victims.append(h)
        if place(victims):
            break
    else:
        return [], []
    for h in list(victims[:-1]):  # the last one was needed: without it, no placement
        fewer = [v for v in victims if v is not h]
        if place(fewer):
            victims = fewer
    chosen = place(victims)
    keys = {d.key for d in chosen}
    return [h for h in victims if freed[h.id] & keys], chosen


def find_preemption(
    state: DeviceState, job: Waiting, devs: list[Dev], protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """The victims that let `job` start, and the devices it takes once they stop (`devs`, or a
    count spread's own placement); no victims when none do.

    Found only from which devices are free, held and protected, so a refusal holds until a job
    of the pass takes devices (`take` clears it; a claim only takes devices away): a long
    queue of alike jobs above a preemptible one is one search, not one a job. (One protected
    set a pass: the reservation, once there is one.)"""
    spread = job.node_counts is not None
    refused = (
        "victims",
        None if spread else job.node,  # a spread's node is only where it would go, idle
        job.wanted,
        job.node_counts,
        job.world_size,
        job.bytes_per_device,
        job.priority,
        bool(protected),
    )
    if refused in state.reasons:
        return [], devs
    if spread:
        victims, devs = spread_victims_for(state, job, protected)
    else:
        victims = victims_for(state, job, devs, protected)
    if not victims:
        state.reasons[refused] = ""
    return victims, devs


def claim(
    state: DeviceState, job: Waiting, victims: list[Holding], devs: list[Dev], until: float
) -> None:
    """The devices `job` will start on once its victims stop: taken for the rest of the pass."""
    theirs = {k for h in victims for k in h.devices}
    free = [d for d in devs if d.key in state.free and fits(d, job.bytes_per_device)]
    mine = [d for d in devs if d.key in theirs]
    if job.requested is None:
        free = free[: max(0, job.world_size - len(mine))]
    state.take(job.id, free, until)
    state.claimed.update(h.id for h in victims)
    for d in mine:
        state.holder[d.key] = job.id
        state.set_avail(d, until, bound=True)
    state.used[job.owner] += job.world_size
