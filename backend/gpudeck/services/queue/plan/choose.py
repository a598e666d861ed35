"""Which free devices a waiting job would start on now: a count on one node, named devices,
or a count spread over nodes (best fit), preferring devices outside the reservation."""

from __future__ import annotations

from collections.abc import Sequence, Set

from gpudeck.services.queue.plan.model import EMPTY, Dev, Key, Waiting, fits
from gpudeck.services.queue.plan.state import DeviceState


def choose_now(
    state: DeviceState, job: Waiting, devs: list[Dev], shadow: Set[Key]
) -> tuple[list[Dev], str | None]:
    """Devices to start on now (prefer ones outside the reservation), or a reason it cannot."""
    if job.requested is None and state.free_count[job.node] < job.world_size:
        return [], state.busy_reason(job, devs)  # the common case in a long queue: no lists
    free = [d for d in devs if d.key in state.free]
    fitting = [d for d in free if fits(d, job.bytes_per_device)]
    if job.requested is not None:
        if len(free) < len(devs):
            return [], state.busy_reason(job, devs)
        if len(fitting) < len(devs):
            return [], "insufficient memory: " + ", ".join(
                f"{d.node}/{d.index} has {(d.usable_bytes or 0) / 1024**3:.2f} GiB usable"
                for d in free
                if d not in fitting
            )
        return devs, None
    if len(fitting) < job.world_size:
        if len(free) >= job.world_size:
            return [], (
                f"insufficient memory: {len(fitting)} of {len(free)} free devices on "
                f"{job.node} hold its estimate, it needs {job.world_size}"
            )
        return [], state.busy_reason(job, devs)
    fitting.sort(key=lambda d: (d.key in shadow, d.index))
    return fitting[: job.world_size], None


def choose_spread_now(
    state: DeviceState, job: Waiting, shadow: Set[Key]
) -> tuple[list[Dev], str | None]:
    """A count spread over nodes: its share on each of the fewest nodes it allows that have
    it free, node by node in rank order; best fit (the nodes with the fewest free devices
    that suffice first, keeping whole nodes for larger jobs), nodes that need no device of
    the reservation before those that do. Or a reason it cannot start now."""
    if state.free_total < job.world_size:
        return [], state.busy_reason(job, [])
    # Whether it fits depends only on which devices are free: a refusal is cached until a job
    # starts (a long queue of alike spread jobs is then one look, not one per job).
    refused = ("spread", job.world_size, job.node_counts, job.bytes_per_device)
    if refused in state.reasons:
        return [], state.reasons[refused]
    chosen, why = place_spread(state, job, shadow)
    if why is not None:
        state.reasons[refused] = why
    return chosen, why


def place_spread(
    state: DeviceState, job: Waiting, shadow: Set[Key], free_keys: Set[Key] | None = None
) -> tuple[list[Dev], str | None]:
    """`free_keys`: the devices to place it on, if not those free now (a preemption's)."""
    free: dict[str, list[Dev]] = {}
    fitting: dict[str, list[Dev]] = {}
    for node, devs in state.by_node.items():
        if free_keys is None and state.free_count[node] == 0:
            continue  # nothing free there: no list to build
        usable = state.free if free_keys is None else free_keys
        on_node = [d for d in devs if d.key in usable]
        if on_node:
            free[node] = on_node
            fitting[node] = [d for d in on_node if fits(d, job.bytes_per_device)]
    for m in job.node_counts or ():
        per = job.world_size // m
        ok = [n for n, devs in fitting.items() if len(devs) >= per]
        if len(ok) < m:
            continue

        def rank(n: str, per: int = per) -> tuple[bool, int, str]:
            spare = sum(1 for d in fitting[n] if d.key not in shadow)
            return (spare < per, len(fitting[n]), n)

        chosen: list[Dev] = []
        for n in sorted(ok, key=rank)[:m]:
            mine = sorted(fitting[n], key=lambda d: (d.key in shadow, d.index))[:per]
            chosen.extend(sorted(mine, key=lambda d: d.index))
        return chosen, None
    for m in job.node_counts or ():
        if sum(1 for devs in free.values() if len(devs) >= job.world_size // m) >= m:
            return [], (
                f"insufficient memory: too few free devices hold its estimate to place "
                f"{m} x {job.world_size // m} (nodes x devices)"
            )
    return [], state.busy_reason(job, [])


def choose_spread(
    devices: Sequence[Dev],
    world_size: int,
    node_counts: tuple[int, ...],
    bytes_per_device: int | None = None,
) -> list[Dev] | None:
    """The pass's choice for a count spread over nodes, among `devices` as they are now (in
    rank order), or None: the submit's fast path, and its check that the job can ever run
    (on the devices as if idle), follow the same rule as the scheduler."""
    job = Waiting(
        id=0,
        owner="",
        node="",
        world_size=world_size,
        submitted_at=0.0,
        time_limit_s=0.0,
        bytes_per_device=bytes_per_device,
        node_counts=node_counts,
    )
    chosen, _ = choose_spread_now(DeviceState(devices, [], 0.0), job, EMPTY)
    return chosen or None
