"""`/metrics`: device metrics under NVIDIA DCGM exporter's names, units and labels (so DCGM
Grafana dashboards work unchanged), and gpudeck_* metrics DCGM cannot give: jobs, allocations,
sampler health, and per-job attribution of device memory and utilization."""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from sqlalchemy.orm import Session

from gpudeck.api.telemetry_hub import TelemetryHub
from gpudeck.models import JobStatus
from gpudeck.services.cluster.counts import job_owners, jobs_by_status, live_allocations_by_node
from gpudeck.services.cluster.telemetry import GpuView, device_views, sampler_health

MIB = 1024**2
DCGM_LABELS = ["gpu", "UUID", "device", "modelName", "Hostname", "source"]
JOB_LABELS = ["job_id", "owner", "gpu", "UUID", "Hostname", "source"]
# (name, help as DCGM's exporter words it, how to read it from a view)
DCGM_FIELDS = [
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda v: v.utilization_gpu_pct),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", lambda v: v.utilization_memory_pct),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
     lambda v: None if v.memory_used_bytes is None else v.memory_used_bytes // MIB),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
     lambda v: None if v.memory_free_bytes is None else v.memory_free_bytes // MIB),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda v: v.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda v: v.power_watts),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda v: v.sm_clock_mhz),
]  # fmt: skip


def _dcgm_labels(v: GpuView) -> list[str]:
    return [str(v.index), v.uuid, f"nvidia{v.index}", v.name, v.node, v.source]


def device_metrics(views: list[GpuView]) -> Iterator[Metric]:
    live = [v for v in views if not v.stale and not v.lost]
    for name, doc, read in DCGM_FIELDS:
        family = GaugeMetricFamily(name, doc, labels=DCGM_LABELS)
        for v in live:
            if (value := read(v)) is not None:
                family.add_metric(_dcgm_labels(v), float(value))
        yield family
    age = GaugeMetricFamily(
        "gpudeck_device_sample_age_seconds",
        "Age of the device's newest sample.",
        labels=DCGM_LABELS,
    )
    lost = GaugeMetricFamily(
        "gpudeck_device_lost", "1 when NVML reports the GPU lost.", labels=DCGM_LABELS
    )
    external = GaugeMetricFamily(
        "gpudeck_device_external_processes",
        "Processes on the device that GPUDeck did not start.",
        labels=DCGM_LABELS,
    )
    for v in views:
        if v.sample_age_s is not None:
            age.add_metric(_dcgm_labels(v), v.sample_age_s)
        lost.add_metric(_dcgm_labels(v), float(v.lost))
        external.add_metric(_dcgm_labels(v), float(len(v.external_processes)))
    yield from (age, lost, external)


def job_metrics(session: Session, views: list[GpuView]) -> Iterator[Metric]:
    memory = GaugeMetricFamily(
        "gpudeck_job_device_memory_used_bytes",
        "Device memory held by a job's ranks on each device.",
        labels=JOB_LABELS,
    )
    util = GaugeMetricFamily(
        "gpudeck_job_device_utilization_pct",
        "Device utilization while the job holds the device.",
        labels=JOB_LABELS,
    )
    live = [v for v in views if not v.stale and not v.lost]
    owners = job_owners(
        session, {p.job_id for v in live for p in v.processes if p.job_id is not None}
    )
    for v in live:
        per_job: dict[int, int] = {}
        for p in v.processes:
            if p.job_id is not None and p.used_memory_bytes is not None:
                per_job[p.job_id] = per_job.get(p.job_id, 0) + p.used_memory_bytes
        # A device shared by memory has several jobs: `held_by` is only the first of them, so
        # its memory is each job's processes' and its utilization no one job's (NVML's is the
        # device's; DCGM_FI_DEV_GPU_UTIL carries it).
        holder = None if v.reservations else v.held_by
        if (
            holder
            and v.source == "simulated"
            and holder.job_id not in per_job
            and v.memory_used_bytes
        ):
            per_job[holder.job_id] = v.memory_used_bytes  # simulated memory is all the holder's
        device = [str(v.index), v.uuid, v.node, v.source]
        for job_id, used in per_job.items():
            owner = holder.owner if holder and holder.job_id == job_id else owners.get(job_id, "")
            memory.add_metric([str(job_id), owner, *device], float(used))
        if holder and v.utilization_gpu_pct is not None:
            util.add_metric(
                [str(holder.job_id), holder.owner, *device], float(v.utilization_gpu_pct)
            )
    yield from (memory, util)


def state_metrics(session: Session) -> Iterator[Metric]:
    jobs = GaugeMetricFamily("gpudeck_jobs", "Jobs by state.", labels=["state"])
    counts = jobs_by_status(session)
    for state in JobStatus:
        jobs.add_metric([state.value], float(counts.get(state.value, 0)))
    allocations = GaugeMetricFamily(
        "gpudeck_allocations_live",
        "Devices held by jobs (unreleased allocations).",
        labels=["Hostname"],
    )
    for node, count in live_allocations_by_node(session).items():
        allocations.add_metric([node], float(count))
    yield from (jobs, allocations)


def sampler_metrics(r: redis.Redis) -> Iterator[Metric]:
    labels = ["Hostname", "source"]
    age = GaugeMetricFamily(
        "gpudeck_sampler_last_sample_age_seconds",
        "Seconds since the node's last sample.",
        labels=labels,
    )
    duration = GaugeMetricFamily(
        "gpudeck_sampler_last_duration_seconds", "Time the last sample took.", labels=labels
    )
    samples = CounterMetricFamily("gpudeck_sampler_samples", "Samples published.", labels=labels)
    errors = CounterMetricFamily(
        "gpudeck_sampler_errors", "Failed sampling attempts.", labels=labels
    )
    for h in sampler_health(r):
        values = [h.node, h.source or ""]
        if h.last_sample_age_s is not None:
            age.add_metric(values, h.last_sample_age_s)
        if h.last_duration_s is not None:
            duration.add_metric(values, h.last_duration_s)
        samples.add_metric(values, float(h.samples_total))
        errors.add_metric(values, float(h.errors_total))
    yield from (age, duration, samples, errors)


def hub_metrics(hub: TelemetryHub) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "gpudeck_ws_clients",
        "Telemetry WebSocket clients of this API process.",
        value=len(hub.subscriptions),
    )
    yield CounterMetricFamily(
        "gpudeck_ws_frames",
        "Telemetry samples fanned out by this process.",
        value=hub.frames_total,
    )
    yield CounterMetricFamily(
        "gpudeck_ws_dropped_frames", "Frames dropped for slow clients.", value=hub.dropped_total
    )


class _Snapshot:
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> list[Metric]:
        return self.metrics


def render_metrics(session: Session, r: redis.Redis, hub: TelemetryHub | None = None) -> bytes:
    """The Prometheus text exposition of everything above, computed now."""
    views = device_views(session, r)
    metrics = [
        *device_metrics(views),
        *job_metrics(session, views),
        *state_metrics(session),
        *sampler_metrics(r),
        *(hub_metrics(hub) if hub is not None else []),
    ]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(metrics))
    return generate_latest(registry)
