"""Reading telemetry back: the latest sample per node, history, and the merged per-device view
that `GET /api/gpus`, `/metrics` and the recommender share. Takes a Session and a Redis client."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import redis
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Device, Job, JobStatus
from gpudeck.schemas.gpus import ExternalProcess, GpuPublic, Holder
from gpudeck.services.cluster.device_sharing import DeviceSharing, sharing_by_device
from gpudeck.services.cluster.inventory import list_devices_with_holders
from gpudeck.services.jobs import state as job_state
from gpudeck.telemetry import stream
from gpudeck.telemetry.provider import Placement
from gpudeck.telemetry.schema import DeviceSample, NodeSample, SamplerHealth

GpuView = GpuPublic  # what the recommender consumes: one row per device, live readings merged
STALE_MIN_S = 5.0
STALE_INTERVALS = 3


def stale_after_s(interval_s: float) -> float:
    return max(STALE_MIN_S, STALE_INTERVALS * interval_s)


def nodes(r: redis.Redis) -> list[str]:
    return sorted(r.smembers(stream.NODES_KEY))  # type: ignore[arg-type]


def latest_samples(r: redis.Redis) -> dict[str, NodeSample]:
    names = nodes(r)
    pipe = r.pipeline(transaction=False)
    for node in names:
        pipe.xrevrange(stream.stream_key(node), count=1)
    out = {}
    for node, entries in zip(names, pipe.execute(), strict=True):
        if entries:
            out[node] = NodeSample.model_validate_json(entries[0][1][stream.STREAM_FIELD])
    return out


def history_json(r: redis.Redis, seconds: int, node: str | None = None) -> list[str]:
    """Raw `NodeSample` JSON of the last `seconds`, oldest first (not re-validated: the sampler
    wrote it from the same model)."""
    server_s, server_us = r.time()
    start_ms = int(server_s) * 1000 + int(server_us) // 1000 - seconds * 1000
    names = [node] if node else nodes(r)
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.xrange(stream.stream_key(name), min=f"{max(0, start_ms)}-0")
    merged = [
        (entry_id, fields[stream.STREAM_FIELD])
        for entries in pipe.execute()
        for entry_id, fields in entries
    ]
    merged.sort(key=lambda e: tuple(int(p) for p in e[0].split("-")))
    return [raw for _, raw in merged]


def device_views(session: Session, r: redis.Redis, *, now: datetime | None = None) -> list[GpuView]:
    """Every device in the inventory with its holder job and its newest sample's readings.

    `memory_free_bytes` is NVML's (or the simulated provider's); `external_processes` are
    from the newest sample when it is fresh, else as the sampler last stored them."""
    now = now or datetime.now(UTC)
    latest = latest_samples(r)
    sharing = sharing_by_device(session)
    views: dict[tuple[str, str], GpuView] = {}
    for device, job in list_devices_with_holders(session):
        key = (device.node, device.uuid)
        shared = sharing.get(key, DeviceSharing())
        if key in views:
            # A shared device has a row per sharing job: the first (lowest id) is `held_by`.
            first = views[key].held_by
            if first is None or job is None or first.job_id < job.id:
                continue
        sample = latest.get(device.node)
        reading = (
            next((d for d in sample.devices if d.uuid == device.uuid), None) if sample else None
        )
        views[key] = _view(device, job, sample, reading, now, shared)
    return list(views.values())


def _view(
    device: Device,
    job: Job | None,
    sample: NodeSample | None,
    reading: DeviceSample | None,
    now: datetime,
    sharing: DeviceSharing,
) -> GpuView:
    age = (now - sample.sampled_at).total_seconds() if sample and reading else None
    stale = age is None or sample is None or age > stale_after_s(sample.interval_s)
    if reading is not None and not stale:
        external = [
            ExternalProcess(pid=p.pid, used_memory_bytes=p.used_memory_bytes)
            for p in reading.processes
            if not p.managed
        ]
    else:
        external = [ExternalProcess(**p) for p in device.external_processes]
    readings = (
        reading.model_dump(exclude={"uuid", "index", "name", "memory_total_bytes"})
        if reading
        else {}
    )
    return GpuView(
        **readings,
        node=device.node,
        uuid=device.uuid,
        index=device.index,
        name=device.name,
        source=device.source,
        memory_total_bytes=device.memory_total_bytes,
        held_by=_holder(job) if job else None,
        reservations=sharing.reservations,
        reservation_room_bytes=sharing.room_bytes,
        node_shares_memory=sharing.node_shares,
        external_processes=external,
        last_seen_at=device.last_seen_at,
        sampled_at=sample.sampled_at if reading and sample else None,
        sample_age_s=None if age is None else round(max(0.0, age), 3),
        stale=stale,
    )


def _holder(job: Job) -> Holder:
    ended = JobStatus(job.status) in job_state.TERMINAL
    return Holder(job_id=job.id, job_name=job.name, owner=job.owner, releasing=ended)


def live_placements(session: Session, node: str) -> dict[str, Placement]:
    """Device uuid -> the job holding it on `node` (live allocations), for simulated readings."""
    rows = session.execute(
        select(
            Allocation.gpu_uuid, Allocation.rank, Job.id, Job.status, Job.estimate_bytes_per_device
        )
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.node == node, Allocation.released_at.is_(None))
    )
    return {
        uuid: Placement(job_id=job_id, rank=rank, status=status, memory_bytes=estimate)
        for uuid, rank, job_id, status, estimate in rows
    }


def raise_peaks(session: Session, peaks: Mapping[int, int]) -> None:
    """Each job's measured peak memory per device only ever grows (GREATEST in the UPDATE, so
    two samplers of a multi-device job never lower each other's figure)."""
    for job_id, peak in peaks.items():
        session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(peak_memory_bytes=func.greatest(func.coalesce(Job.peak_memory_bytes, 0), peak))
        )
    session.flush()


# jobs.rank_memory->'device_peak_bytes'->'<rank>' only ever grows, as peak_memory_bytes does;
# the rest of rank_memory (the worker's host figures, written at the end) is left as it is.
_RAISE_RANK_PEAK = text(
    """
    UPDATE jobs SET rank_memory = jsonb_set(
        coalesce(rank_memory, '{}'::jsonb),
        '{device_peak_bytes}',
        coalesce(rank_memory->'device_peak_bytes', '{}'::jsonb) || jsonb_build_object(
            CAST(:rank AS text),
            greatest(coalesce(CAST(rank_memory->'device_peak_bytes'->>CAST(:rank AS text)
                                   AS bigint), 0), :peak)
        )
    )
    WHERE id = :job_id
    """
)


def raise_rank_peaks(session: Session, peaks: Mapping[tuple[int, int], int]) -> None:
    """Each rank's measured peak device memory (NVML per process) only ever grows."""
    for (job_id, rank), peak in peaks.items():
        session.execute(_RAISE_RANK_PEAK, {"job_id": job_id, "rank": rank, "peak": peak})
    session.flush()


def sampler_health(r: redis.Redis, *, now: datetime | None = None) -> list[SamplerHealth]:
    now = now or datetime.now(UTC)
    names = nodes(r)
    pipe = r.pipeline(transaction=False)
    for node in names:
        pipe.hgetall(stream.health_key(node))
    out = []
    for node, h in zip(names, pipe.execute(), strict=True):
        last = (
            datetime.fromtimestamp(float(h["last_sample_at"]), UTC)
            if h.get("last_sample_at")
            else None
        )
        out.append(
            SamplerHealth(
                node=node,
                source=h.get("source") or None,
                last_sample_at=last,
                last_sample_age_s=(now - last).total_seconds() if last else None,
                samples_total=int(h.get("samples_total", 0)),
                errors_total=int(h.get("errors_total", 0)),
                last_error=h.get("last_error") or None,
                last_duration_s=float(h["last_duration_s"]) if h.get("last_duration_s") else None,
            )
        )
    return out
