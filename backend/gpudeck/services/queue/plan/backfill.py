"""EASY backfill: a job behind the reservation starts now only if it cannot delay it."""

from __future__ import annotations

from collections.abc import Mapping

from gpudeck.services.queue.plan.model import Dev, Policy, Quota, Reservation, Waiting
from gpudeck.services.queue.plan.state import DeviceState


def may_backfill(policy: Policy, reservation: Reservation, ends: float, chosen: list[Dev]) -> bool:
    """EASY: it cannot delay the reservation if it ends first or leaves its devices alone."""
    if not policy.backfill:
        return False
    return ends <= reservation.at or not ({d.key for d in chosen} & reservation.devices)


def quota_delays(
    state: DeviceState, quotas: Mapping[str, Quota], job: Waiting, first: Waiting | None
) -> bool:
    """Backfilling a job of the reserved job's owner must leave that owner's quota room for
    the reserved job, or the reservation would slip behind the quota."""
    if first is None or first.owner != job.owner:
        return False
    quota = quotas.get(job.owner)
    limit = quota.max_devices if quota else None
    return limit is not None and state.used[job.owner] + job.world_size + first.world_size > limit
