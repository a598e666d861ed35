"""Telemetry read back from Redis and merged with the inventory: the newest sample per node, the
history of the last seconds across nodes in time order, the per-device view (readings, holder,
and outside processes from a fresh sample or else as last stored), the placements the simulated
provider reads, the measured peaks that only ever grow, and each sampler's health."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import redis
from harness import TEST_NODE, make_job, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.schemas.gpus import ExternalProcess, Holder
from gpudeck.services.cluster import telemetry
from gpudeck.telemetry import stream
from gpudeck.telemetry.provider import Placement
from gpudeck.telemetry.schema import DeviceSample, GpuProcess, NodeSample
from gpudeck.telemetry.simulated import simulated_uuid

GIB = 1024**3
INTERVAL_S = 1.0


def sample(
    node: str, at: datetime, used: int = 0, processes: list[GpuProcess] | None = None
) -> NodeSample:
    device = DeviceSample(
        uuid=simulated_uuid(node, 0),
        index=0,
        name="sim",
        memory_total_bytes=80 * GIB,
        memory_used_bytes=used,
        processes=processes or [],
    )
    return NodeSample(
        node=node, source="simulated", sampled_at=at, interval_s=INTERVAL_S, devices=[device]
    )


def publish(r: redis.Redis, node_sample: NodeSample, ms_ago: int = 0) -> None:
    """As the sampler publishes it, with the entry's id `ms_ago` before Redis's clock."""
    server_s, server_us = r.time()
    at_ms = int(server_s) * 1000 + int(server_us) // 1000 - ms_ago
    r.xadd(
        stream.stream_key(node_sample.node),
        {stream.STREAM_FIELD: node_sample.model_dump_json()},
        id=f"{at_ms}-0",
    )
    r.sadd(stream.NODES_KEY, node_sample.node)


def test_readings_go_stale_after_three_intervals_but_never_under_the_minimum() -> None:
    short = telemetry.STALE_MIN_S / telemetry.STALE_INTERVALS / 2
    assert telemetry.stale_after_s(short) == telemetry.STALE_MIN_S
    long = telemetry.STALE_MIN_S * 2
    assert telemetry.stale_after_s(long) == telemetry.STALE_INTERVALS * long


def test_latest_samples_are_each_node_s_newest(redis_client: redis.Redis) -> None:
    now = datetime.now(UTC)
    publish(redis_client, sample("alpha", now - timedelta(seconds=2), used=1), ms_ago=2000)
    publish(redis_client, sample("alpha", now, used=2))
    publish(redis_client, sample("beta", now, used=3))
    redis_client.sadd(stream.NODES_KEY, "gamma")  # registered, nothing published yet
    latest = telemetry.latest_samples(redis_client)
    assert telemetry.nodes(redis_client) == ["alpha", "beta", "gamma"]
    assert {node: s.devices[0].memory_used_bytes for node, s in latest.items()} == {
        "alpha": 2,
        "beta": 3,
    }


def test_history_is_the_last_seconds_of_every_node_oldest_first(
    redis_client: redis.Redis,
) -> None:
    now = datetime.now(UTC)
    for node, seconds_ago in (("alpha", 120), ("alpha", 40), ("alpha", 10), ("beta", 30)):
        at = now - timedelta(seconds=seconds_ago)
        publish(redis_client, sample(node, at, used=seconds_ago), ms_ago=seconds_ago * 1000)

    def read(**kwargs: str) -> list[tuple[str, int | None]]:
        raw = telemetry.history_json(redis_client, 60, **kwargs)
        parsed = [NodeSample.model_validate_json(r) for r in raw]
        return [(s.node, s.devices[0].memory_used_bytes) for s in parsed]

    assert read() == [("alpha", 40), ("beta", 30), ("alpha", 10)]  # 120 s ago is too old
    assert read(node="alpha") == [("alpha", 40), ("alpha", 10)]


def test_a_device_view_merges_the_sample_the_holder_and_outside_processes(
    db: Session, redis_client: redis.Redis
) -> None:
    register_devices(db, "2x80GiB")
    running = make_job(db, devices=[0], status=JobStatus.running)
    ended = make_job(db, devices=[1], status=JobStatus.failed)  # its node has not confirmed
    stored = [{"pid": 77, "used_memory_bytes": GIB}]  # as the sampler last stored them
    db.execute(
        text("UPDATE devices SET external_processes = CAST(:p AS jsonb)"),
        {"p": json.dumps(stored)},
    )
    db.commit()
    processes = [
        GpuProcess(pid=10, used_memory_bytes=5 * GIB, managed=True, job_id=running.id, rank=0),
        GpuProcess(pid=11, used_memory_bytes=2 * GIB, managed=False),
    ]
    sampled_at = datetime.now(UTC)
    publish(redis_client, sample(TEST_NODE, sampled_at, used=7 * GIB, processes=processes))

    fresh = {v.index: v for v in telemetry.device_views(db, redis_client, now=sampled_at)}
    assert fresh[0].held_by == Holder(
        job_id=running.id, job_name=running.name, owner="tester", releasing=False
    )
    assert fresh[1].held_by is not None and fresh[1].held_by.job_id == ended.id
    assert fresh[1].held_by.releasing  # ended, its device not yet confirmed free
    assert not fresh[0].stale and fresh[0].sample_age_s == 0
    assert fresh[0].memory_used_bytes == 7 * GIB and fresh[0].sampled_at == sampled_at
    assert fresh[0].external_processes == [ExternalProcess(pid=11, used_memory_bytes=2 * GIB)]
    # Device 1 has no reading in the sample: no readings, stale, its outside processes stored.
    assert fresh[1].memory_used_bytes is None and fresh[1].stale and fresh[1].sampled_at is None
    assert [p.model_dump() for p in fresh[1].external_processes] == stored

    later = sampled_at + timedelta(seconds=telemetry.stale_after_s(INTERVAL_S) + 1)
    quiet = telemetry.device_views(db, redis_client, now=later)[0]
    assert quiet.stale and quiet.memory_used_bytes == 7 * GIB  # the last reading, marked stale
    assert [p.model_dump() for p in quiet.external_processes] == stored


def test_live_placements_are_the_node_s_unreleased_allocations(db: Session) -> None:
    register_devices(db, "4x80GiB")
    held = make_job(db, devices=[2, 3], status=JobStatus.running)
    gone = make_job(db, devices=[0])
    db.execute(
        text("UPDATE jobs SET estimate_bytes_per_device = :b WHERE id = :id"),
        {"b": 12 * GIB, "id": held.id},
    )
    db.execute(
        text("UPDATE allocations SET released_at = now() WHERE job_id = :id"), {"id": gone.id}
    )
    db.commit()
    assert telemetry.live_placements(db, TEST_NODE) == {
        simulated_uuid(TEST_NODE, 2): Placement(held.id, 0, "running", 12 * GIB),
        simulated_uuid(TEST_NODE, 3): Placement(held.id, 1, "running", 12 * GIB),
    }
    assert telemetry.live_placements(db, "elsewhere") == {}


def test_measured_peaks_only_ever_grow(db: Session, devices: str) -> None:
    first = make_job(db, devices=[0])
    second = make_job(db, devices=[1])
    telemetry.raise_peaks(db, {first.id: 5 * GIB, second.id: GIB})
    telemetry.raise_peaks(db, {first.id: 3 * GIB, second.id: 2 * GIB})  # another sampler
    db.commit()
    rows = db.execute(text("SELECT id, peak_memory_bytes FROM jobs"))
    peaks = {job_id: peak for job_id, peak in rows}
    assert peaks == {first.id: 5 * GIB, second.id: 2 * GIB}


def test_each_rank_s_peak_only_ever_grows_and_keeps_the_host_figures(
    db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0, 1])
    db.execute(
        text("UPDATE jobs SET rank_memory = CAST(:m AS jsonb) WHERE id = :id"),
        {"m": json.dumps({"host_limit_bytes": 9}), "id": job.id},
    )
    telemetry.raise_rank_peaks(db, {(job.id, 0): 4 * GIB})
    telemetry.raise_rank_peaks(db, {(job.id, 0): GIB, (job.id, 1): 2 * GIB})
    db.commit()
    db.expire_all()
    rank_memory = db.get(Job, job.id).rank_memory  # type: ignore[union-attr]
    assert rank_memory == {
        "host_limit_bytes": 9,
        "device_peak_bytes": {"0": 4 * GIB, "1": 2 * GIB},
    }


def test_sampler_health_reads_each_node_s_figures(redis_client: redis.Redis) -> None:
    now = datetime.now(UTC)
    redis_client.sadd(stream.NODES_KEY, "alpha", "beta")
    redis_client.hset(
        stream.health_key("alpha"),
        mapping={
            "source": "nvml",
            "last_sample_at": (now - timedelta(seconds=4)).timestamp(),
            "samples_total": 12,
            "errors_total": 2,
            "last_error": "RuntimeError: driver hiccup",
            "last_duration_s": 0.004,
        },
    )
    alpha, beta = telemetry.sampler_health(redis_client, now=now)
    assert (alpha.node, alpha.source, alpha.samples_total, alpha.errors_total) == (
        "alpha",
        "nvml",
        12,
        2,
    )
    assert alpha.last_sample_age_s is not None and abs(alpha.last_sample_age_s - 4) < 1e-3
    assert (alpha.last_error, alpha.last_duration_s) == ("RuntimeError: driver hiccup", 0.004)
    # A node that has not reported yet: nothing but its name.
    assert (beta.node, beta.source, beta.last_sample_at, beta.last_sample_age_s) == (
        "beta",
        None,
        None,
        None,
    )
    assert (beta.samples_total, beta.errors_total, beta.last_error) == (0, 0, None)
