"""Preemption: the running preemptible jobs of lower priority a waiting job may stop to start,
and the devices it claims for the rest of the pass while they write their final checkpoint.

A device comes free for a job that takes devices whole only when every job on it stops: its
holder, or every job sharing it by memory (`DeviceState.occupants`); one such job that may not
be stopped keeps the device. A job that itself shares by memory looks for victims by the bytes
they free instead (plan/share_preempt.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set

from gpudeck.services.queue.plan.choose import place_spread
from gpudeck.services.queue.plan.model import EMPTY, Dev, Holding, Key, Waiting, fits
from gpudeck.services.queue.plan.state import DeviceState


def victim(state: DeviceState, job: Waiting, job_id: int) -> Holding | None:
    """The running job `job_id` when `job` may stop it: preemptible, of lower priority, its
    devices still its own in this pass (no earlier job claimed it). A job placed by this pass
    is no holding: never a victim."""
    h = state.holdings.get(job_id)
    if h is None or not h.preemptible or h.priority >= job.priority or h.id in state.claimed:
        return None
    return h


def _takeable(state: DeviceState, job: Waiting, d: Dev, protected: Set[Key]) -> bool:
    """Whether stopping every job on the busy device frees it for `job`."""
    if d.external or not d.online or d.key in protected or d.key in state.free:
        return False
    jobs = state.occupants(d.key)
    return bool(jobs) and all(victim(state, job, i) is not None for i in jobs)


def _on(state: DeviceState, keys: Iterable[Key]) -> list[Holding]:
    """The jobs on these devices, each once, in the order first met."""
    return list({i: state.holdings[i] for k in keys for i in state.occupants(k)}.values())


def _cost(state: DeviceState) -> Callable[[Holding], tuple[bool, int, int, int, int]]:
    """The order victims are taken in: those already stopping first, then the lowest priority,
    then the fewest jobs beside them on their devices (a sharing job frees its device only
    with all of them; a whole-device holder is alone), then the largest: the fewest victims;
    then the least work lost (device-seconds since their newest checkpoint), so of jobs alike
    in all that the one that just checkpointed goes, not the one an hour past its last."""

    def cost(h: Holding) -> tuple[bool, int, int, int, int]:
        beside = set().union(*(state.occupants(k) for k in h.devices if k in state.devs))
        return (not h.stopping, h.priority, len(beside), -len(h.devices), h.lost_device_s)

    return cost


def fewest(order: Sequence[Holding], enough: Callable[[list[Holding]], bool]) -> list[Holding]:
    """Victims taken in `order` until they are `enough`, then each but the last spared when the
    others still are; empty when all of them are not."""
    victims: list[Holding] = []
    for h in order:
        victims.append(h)
        if enough(victims):
            break
    else:
        return []
    for h in list(victims[:-1]):  # the last one was needed: without it, not enough
        fewer = [v for v in victims if v is not h]
        if enough(fewer):
            victims = fewer
    return victims


def _freed(state: DeviceState, victims: Iterable[Holding], keys: Iterable[Key]) -> set[Key]:
    """The devices among `keys` that every job on them is among `victims`."""
    ids = {h.id for h in victims}
    return {k for k in keys if (jobs := state.occupants(k)) and ids.issuperset(jobs)}


def victims_for(
    state: DeviceState, job: Waiting, devs: list[Dev], protected: Set[Key]
) -> list[Holding]:
    """The running preemptible jobs of lower priority whose devices let `job` start (`_cost`'s
    order, then each one it does without spared: the fewest victims); empty when no such set
    exists. A device in another job's reservation is never taken."""
    busy = [d for d in devs if d.key not in state.free]
    open_keys = [d.key for d in busy if _takeable(state, job, d, protected)]
    if job.requested is not None:
        return _on(state, open_keys) if busy and len(open_keys) == len(busy) else []
    count = sum(
        1
        for d in devs
        if d.key in state.free and d.key not in protected and fits(d, job.bytes_per_device)
    )
    short = job.world_size - count
    if short <= 0:
        return []
    order = sorted(_on(state, open_keys), key=_cost(state))
    return fewest(order, lambda victims: len(_freed(state, victims, open_keys)) >= short)


def spread_victims_for(
    state: DeviceState, job: Waiting, protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """For a count spread over nodes: the running preemptible jobs of lower priority whose
    devices, with the free ones, let the job be placed by its own rule (`place_spread`), and
    the devices it would take; empty when no such set exists. Chosen as `victims_for` does
    (`_cost`'s order, then each one the placement can do without spared). A device in another
    job's reservation is never taken."""
    open_keys = [k for k, d in state.devs.items() if _takeable(state, job, d, protected)]
    order = sorted(_on(state, open_keys), key=_cost(state))
    free_now = {k for k in state.free if k not in protected}

    def place(victims: list[Holding]) -> list[Dev]:
        keys = free_now | _freed(state, victims, open_keys)
        return place_spread(state, job, EMPTY, keys)[0]

    victims = fewest(order, lambda victims: bool(place(victims)))
    if not victims:
        return [], []
    chosen = place(victims)
    keys = {d.key for d in chosen}
    return [h for h in victims if keys.intersection(h.devices)], chosen


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

    def search() -> tuple[list[Holding], list[Dev]]:
        if spread:
            return spread_victims_for(state, job, protected)
        return victims_for(state, job, devs, protected), devs

    return remembered_refusal(state, refused, devs, search)


def remembered_refusal(
    state: DeviceState,
    refused: tuple[object, ...],
    devs: list[Dev],
    search: Callable[[], tuple[list[Holding], list[Dev]]],
) -> tuple[list[Holding], list[Dev]]:
    """`search` for victims unless the pass already found none for the same `refused` key,
    and remember it when it finds none (the caller's key says what the answer depends on)."""
    if refused in state.reasons:
        return [], devs
    victims, devs = search()
    if not victims:
        state.reasons[refused] = ""
    return victims, devs


def claim(
    state: DeviceState, job: Waiting, victims: list[Holding], devs: list[Dev], until: float
) -> None:
    """The devices `job` will start on once its victims stop: taken for the rest of the pass
    (a shared one closed to sharing jobs too: it is to be held whole)."""
    theirs = _freed(state, victims, (d.key for d in devs if d.key not in state.free))
    free = [d for d in devs if d.key in state.free and fits(d, job.bytes_per_device)]
    mine = [d for d in devs if d.key in theirs]
    if job.requested is None:
        free = free[: max(0, job.world_size - len(mine))]
    state.take(job.id, free, until)
    state.claimed.update(h.id for h in victims)
    for d in mine:
        state.room.pop(d.key, None)
        state.sharers.pop(d.key, None)
        state.holder[d.key] = job.id
        state.set_avail(d, until, bound=True)
    state.used[job.owner] += job.world_size
