"""Will a job fit where it asks to go? Live free memory (telemetry) against the estimate.

Bridges the telemetry views (`services.cluster.telemetry.device_views`) and the pure recommender
(`services.placement.recommend`): the recommend route ranks devices with it, and job submission
refuses
devices whose free memory, less the safety margin, is below the job's estimate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from sqlalchemy.orm import Session

from gpudeck.schemas.gpus import GpuPublic
from gpudeck.services.cluster.telemetry import device_views, latest_samples, stale_after_s
from gpudeck.services.errors import Conflict
from gpudeck.services.placement.recommend import Candidate, default_safety_margin, usable_of
from gpudeck.services.placement.shared import sharing_nodes

log = logging.getLogger(__name__)


def candidates(
    views: Iterable[GpuPublic], across_users: Mapping[str, bool] | None = None
) -> list[Candidate]:
    """The recommender's view of each device; `across_users`: node -> whether jobs of
    different users may share its devices (nodes.share_across_users; absent: no)."""
    across_users = across_users or {}
    return [
        Candidate(
            node=v.node,
            uuid=v.uuid,
            index=v.index,
            name=v.name,
            memory_total_bytes=v.memory_total_bytes,
            # A stale reading is no reading: the recommender excludes it as stale.
            memory_free_bytes=None if v.stale else v.memory_free_bytes,
            # `held_by` of a shared device is its first sharing job: held whole only if none.
            held_by_job_id=v.held_by.job_id if v.held_by and not v.reservations else None,
            releasing=bool(v.held_by and v.held_by.releasing),
            external_process=bool(v.external_processes),
            sample_age_s=v.sample_age_s,
            shared_by_job_ids=tuple(r.job_id for r in v.reservations),
            sharing_owners=frozenset(r.owner for r in v.reservations),
            reservation_room_bytes=v.reservation_room_bytes,
            node_shares_memory=v.node_shares_memory,
            node_shares_across_users=across_users.get(v.node, False),
        )
        for v in views
    ]


def candidates_now(session: Session, r: redis.Redis) -> list[Candidate]:
    """Every device as the recommend route judges it: the board's view (GET /api/gpus) with
    each node's policy on sharing across users."""
    views = device_views(session, r)
    policies = sharing_nodes(session, sorted({v.node for v in views}))
    return candidates(views, {node: across for node, (_, across) in policies.items()})


class InsufficientMemory(Conflict):
    def __init__(self, bytes_per_device: int, short: list[dict[str, Any]]) -> None:
        names = ", ".join(
            f"{d['node']}/{d['index']} has {d['usable_bytes'] / 1024**3:.2f} GiB usable"
            for d in short
        )
        super().__init__(
            message=(
                f"the job needs {bytes_per_device / 1024**3:.2f} GiB per device but {names} "
                "(free memory less the safety margin); pick other devices or send force: true"
            ),
            field="devices",
            code="insufficient_memory",
            extra={"bytes_per_device": bytes_per_device, "devices": short},
        )


@dataclass(frozen=True)
class LiveMemory:
    node: str
    index: int
    memory_total_bytes: int
    memory_free_bytes: int


# (node, uuid) -> a device's fresh free memory, as the samplers last reported it.
Readings = dict[tuple[str, str], LiveMemory]


def live_memory(r: redis.Redis, *, now: datetime | None = None) -> Readings:
    """(node, uuid) -> free memory, from each node's newest sample if it is fresh."""
    now = now or datetime.now(UTC)
    live = {}
    for node, sample in latest_samples(r).items():
        if (now - sample.sampled_at).total_seconds() > stale_after_s(sample.interval_s):
            continue
        for d in sample.devices:
            if d.memory_free_bytes is not None and not d.lost:
                live[(node, d.uuid)] = LiveMemory(
                    node, d.index, d.memory_total_bytes, d.memory_free_bytes
                )
    return live


def live_memory_or_none(r: redis.Redis) -> Readings | None:
    """As live_memory, but None when Redis cannot be read: a telemetry outage must not stop
    submissions; the job is then placed without the free-memory check (and says so in logs)."""
    try:
        return live_memory(r)
    except redis.RedisError:
        log.warning("no live telemetry: placing the job without the free-memory check")
        return None


def usable(memory: LiveMemory) -> int:
    return usable_of(memory.memory_free_bytes, memory.memory_total_bytes)


def short_devices(
    chosen: Iterable[tuple[str, str]],
    bytes_per_device: int,
    live: Readings,
) -> list[dict[str, Any]]:
    """The chosen (node, uuid) devices whose live free memory cannot hold the estimate.

    A device with no fresh reading is not judged: the sampler may not have reported yet, and
    refusing on missing data would block every first job."""
    return [
        {
            "node": m.node,
            "uuid": uuid,
            "index": m.index,
            "memory_free_bytes": m.memory_free_bytes,
            "safety_margin_bytes": default_safety_margin(m.memory_total_bytes),
            "usable_bytes": usable(m),
        }
        for node, uuid in chosen
        if (m := live.get((node, uuid))) is not None and usable(m) < bytes_per_device
    ]
