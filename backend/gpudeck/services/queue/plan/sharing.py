"""Where a job that shares by memory would start now: best-fit packing by reservation room.

A device is open to a sharing job when it is online, no outside process runs on it, no job holds
it whole, its node allows sharing, and the jobs already sharing it are its owner's (unless the
node lets users share with each other). Among the open devices whose room (usable memory when
idle less the reservations on it) holds the job's share, the tightest first: the fewest devices
are touched, and roomy ones stay whole. Devices outside the backfill reservation come first.
"""

from __future__ import annotations

from collections.abc import Set

from gpudeck.services.placement.packing import short_words
from gpudeck.services.queue.plan.model import Dev, Key, Waiting, fits
from gpudeck.services.queue.plan.state import DeviceState


def _open(state: DeviceState, d: Dev, owner: str) -> bool:
    if d.key not in state.room or not d.shareable:
        return False
    return d.share_across_users or state.share_owners[d.key] <= {owner}


def _holds(state: DeviceState, d: Dev, need: int) -> bool:
    # An idle device's live reading is judged too (what GPUDeck did not place is invisible
    # to reservations); a shared one's moves with its neighbours' use: reservations decide.
    idle = d.key in state.free
    return state.room[d.key] >= need and (not idle or fits(d, need))


def choose_shared(
    state: DeviceState, job: Waiting, devs: list[Dev], shadow: Set[Key]
) -> tuple[list[Dev], str | None]:
    """Devices to start the sharing job on now, or why it cannot (memory short, named)."""
    need = int(job.share_bytes or 0)
    if job.node_counts is not None:  # any one node: the one whose best fit is tightest
        options = [
            chosen
            for node_devs in state.by_node.values()
            if (chosen := _on_devices(state, job, node_devs, need, shadow)[0])
        ]
        if options:
            return min(options, key=lambda c: sum(state.room[d.key] for d in c)), None
        every = [d for node_devs in state.by_node.values() for d in node_devs]
        return [], _why_not(state, job, every, need)
    return _on_devices(state, job, devs, need, shadow)


def _on_devices(
    state: DeviceState, job: Waiting, devs: list[Dev], need: int, shadow: Set[Key]
) -> tuple[list[Dev], str | None]:
    usable = [d for d in devs if _open(state, d, job.owner) and _holds(state, d, need)]
    if job.requested is not None:
        if len(usable) < len(devs):
            return [], _why_not(state, job, devs, need)
        return devs, None
    if len(usable) < job.world_size:
        return [], _why_not(state, job, devs, need)
    usable.sort(key=lambda d: (d.key in shadow, state.room[d.key], d.index))
    return sorted(usable[: job.world_size], key=lambda d: (d.node, d.index)), None


def _why_not(state: DeviceState, job: Waiting, devs: list[Dev], need: int) -> str:
    """The memory short on the open devices with the most room; else why none is open."""
    open_devs = [d for d in devs if _open(state, d, job.owner)]
    if open_devs:
        roomiest = sorted(open_devs, key=lambda d: (-state.room[d.key], d.node, d.index))[:3]
        return "insufficient memory: " + "; ".join(
            short_words(d.node, d.index, state.room[d.key], need) for d in roomiest
        )
    if devs and not any(d.shareable for d in devs):
        return "devices busy: its node does not allow sharing devices"
    return state.busy_reason(job, devs) + " (none may be shared)"
