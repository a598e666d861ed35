"""services/placement/live_memory: live free memory from the samplers' newest samples (stale
samples, lost devices and missing readings are no reading), a telemetry outage that does not
stop submissions, the chosen devices that cannot hold an estimate (a device without a reading
is not judged), and the telemetry views turned into the recommender's candidates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import redis
from harness import TEST_NODE, free_port, make_job
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Device
from gpudeck.services.cluster.telemetry import device_views, stale_after_s
from gpudeck.services.placement import live_memory
from gpudeck.services.placement.live_memory import LiveMemory
from gpudeck.services.placement.recommend import default_safety_margin, usable_of
from gpudeck.telemetry import stream
from gpudeck.telemetry.schema import DeviceSample, GpuProcess, NodeSample

GiB = 1024**3
INTERVAL_S = 1.0


def reading(index: int, free_gib: float | None, **extra: object) -> DeviceSample:
    free = None if free_gib is None else int(free_gib * GiB)
    return DeviceSample(
        uuid=f"GPU-{index}", index=index, name="gpu", memory_total_bytes=80 * GiB,
        memory_free_bytes=free, **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def publish(r: redis.Redis, node: str, devices: list[DeviceSample], at: datetime) -> None:
    """A sample as a node's sampler writes it (telemetry.sampler._publish)."""
    sample = NodeSample(
        node=node, source="simulated", sampled_at=at, interval_s=INTERVAL_S, devices=devices
    )
    r.xadd(stream.stream_key(node), {stream.STREAM_FIELD: sample.model_dump_json()})
    r.sadd(stream.NODES_KEY, node)


def test_live_memory_reads_fresh_samples_only_and_skips_lost_and_missing_readings(
    redis_client: redis.Redis,
) -> None:
    now = datetime.now(UTC)
    lost = reading(2, 70, lost=True)
    publish(redis_client, "a", [reading(0, 10), reading(1, None), lost], now)
    publish(redis_client, "b", [reading(0, 20)], now - timedelta(seconds=5))  # older sample
    publish(redis_client, "b", [reading(0, 30)], now)  # the node's newest
    publish(redis_client, "c", [reading(0, 40)], now - timedelta(seconds=60))  # gone quiet

    live = live_memory.live_memory(redis_client, now=now)
    assert live == {
        ("a", "GPU-0"): LiveMemory("a", 0, 80 * GiB, 10 * GiB),
        ("b", "GPU-0"): LiveMemory("b", 0, 80 * GiB, 30 * GiB),
    }
    # The staleness bound is the telemetry views' own: just inside it, node c still counts.
    inside = now - timedelta(seconds=60) + timedelta(seconds=stale_after_s(INTERVAL_S))
    assert ("c", "GPU-0") in live_memory.live_memory(redis_client, now=inside)


def test_a_telemetry_outage_gives_no_readings_instead_of_an_error() -> None:
    """Submissions go on without the free-memory check when Redis cannot be read."""
    # No retries: redis-py's default backoff would spend ~4 s proving the same refusal.
    unreachable = redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0))
    assert live_memory.live_memory_or_none(unreachable) is None


def test_short_devices_are_those_whose_usable_memory_is_below_the_estimate() -> None:
    total = 80 * GiB
    live = {
        ("a", "GPU-0"): LiveMemory("a", 0, total, 30 * GiB),
        ("a", "GPU-1"): LiveMemory("a", 1, total, 10 * GiB),
    }
    need = usable_of(30 * GiB, total)  # exactly what GPU-0 can give
    chosen = [("a", "GPU-0"), ("a", "GPU-1"), ("a", "GPU-2")]  # GPU-2: no reading yet
    assert live_memory.short_devices(chosen, need, live) == [
        {
            "node": "a",
            "uuid": "GPU-1",
            "index": 1,
            "memory_free_bytes": 10 * GiB,
            "safety_margin_bytes": default_safety_margin(total),
            "usable_bytes": usable_of(10 * GiB, total),
        }
    ]
    assert live_memory.short_devices(chosen, need + 1, live)[0]["uuid"] == "GPU-0"
    assert live_memory.short_devices(chosen[1:], 0, live) == []  # no estimate beyond 0 bytes


def test_insufficient_memory_says_what_each_short_device_has() -> None:
    short = live_memory.short_devices(
        [("a", "GPU-1")], 20 * GiB, {("a", "GPU-1"): LiveMemory("a", 1, 80 * GiB, 10 * GiB)}
    )
    error = live_memory.InsufficientMemory(20 * GiB, short)
    usable_gib = usable_of(10 * GiB, 80 * GiB) / GiB
    assert error.code == "insufficient_memory" and error.field == "devices"
    assert f"needs 20.00 GiB per device but a/1 has {usable_gib:.2f} GiB usable" in error.message
    assert error.extra == {"bytes_per_device": 20 * GiB, "devices": short}


def test_candidates_carry_the_holder_the_outsiders_and_only_fresh_readings(
    db: Session, devices: str, redis_client: redis.Redis
) -> None:
    holder = make_job(db, devices=[0])
    inventory = db.scalars(select(Device).where(Device.node == TEST_NODE)).all()
    outsider = GpuProcess(pid=4242, used_memory_bytes=GiB, managed=False)
    now = datetime.now(UTC)
    readings = [
        DeviceSample(
            uuid=d.uuid, index=d.index, name=d.name, memory_total_bytes=d.memory_total_bytes,
            memory_free_bytes=(50 + d.index) * GiB, processes=[outsider] if d.index == 1 else [],
        )
        for d in inventory
    ]  # fmt: skip
    publish(redis_client, TEST_NODE, readings, now)

    fresh = {c.index: c for c in live_memory.candidates(device_views(db, redis_client, now=now))}
    assert fresh[0].held_by_job_id == holder.id and not fresh[0].external_process
    assert fresh[1].external_process and fresh[1].held_by_job_id is None
    assert fresh[2].memory_free_bytes == 52 * GiB and fresh[2].sample_age_s is not None
    assert len(fresh) == len(inventory)

    later = now + timedelta(seconds=stale_after_s(INTERVAL_S) + 1)
    stale = live_memory.candidates(device_views(db, redis_client, now=later))
    assert all(c.memory_free_bytes is None for c in stale)  # a stale reading is no reading
