"""GET /api/gpus (inventory + holder + live readings) and GET /api/gpus/history."""

from __future__ import annotations

import time

import redis
from fastapi.testclient import TestClient
from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.models import JobStatus
from gpudeck.schemas.gpus import GpuPublic
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.schema import TelemetryHistory
from gpudeck.telemetry.simulated import SimulatedProvider

GIB = 1024**3
LEGACY_FIELDS = {
    "node", "uuid", "index", "name", "source", "memory_total_bytes", "held_by",
    "external_processes", "last_seen_at",
}  # fmt: skip


def sampler(r: redis.Redis, sessions: sessionmaker[Session], clock: float | None = None) -> Sampler:
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("8x80GiB"), TEST_NODE)
    now = (lambda: clock) if clock is not None else time.time
    return Sampler(
        provider, node=TEST_NODE, redis_client=r, store=DatabaseSamplerStore(sessions), clock=now
    )


def test_gpus_before_any_sample_keep_the_old_fields_and_say_stale(
    client: TestClient, devices: str, redis_client: redis.Redis
) -> None:
    gpus = client.get("/api/gpus").json()
    assert len(gpus) == 8 and set(gpus[0]) >= LEGACY_FIELDS
    assert all(g["stale"] and g["memory_free_bytes"] is None for g in gpus)


def test_gpus_merge_the_latest_sample_with_the_holder_job(
    client: TestClient,
    devices: str,
    db: Session,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    job = make_job(db, devices=[1], status=JobStatus.running)
    db.execute(text("UPDATE jobs SET estimate_bytes_per_device = :b"), {"b": 20 * GIB})
    db.commit()
    sampler(redis_client, session_factory).tick()
    gpus = [GpuPublic.model_validate(g) for g in client.get("/api/gpus").json()]
    held = gpus[1]
    assert held.held_by is not None and held.held_by.job_id == job.id
    assert held.memory_used_bytes == 20 * GIB and held.memory_free_bytes == 60 * GIB
    assert held.utilization_gpu_pct == 0  # no rank process registered: no work to show
    assert held.source == "simulated" and not held.stale and held.sampled_at is not None
    assert held.sample_age_s is not None and 0 <= held.sample_age_s < 5
    assert gpus[0].memory_used_bytes == 0 and gpus[0].held_by is None
    assert held.power_limit_watts and held.temperature_c and held.sm_clock_mhz


def test_a_quiet_sampler_makes_readings_stale(
    client: TestClient,
    devices: str,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    sampler(redis_client, session_factory, clock=time.time() - 60).tick()
    gpus = client.get("/api/gpus").json()
    assert all(g["stale"] and g["sample_age_s"] >= 59 for g in gpus)


def test_history_returns_the_samples_of_the_last_seconds(
    client: TestClient,
    devices: str,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    s = sampler(redis_client, session_factory)
    for _ in range(5):
        s.tick()
    history = TelemetryHistory.model_validate(
        client.get("/api/gpus/history", params={"seconds": 60}).json()
    )
    assert history.seconds == 60 and len(history.samples) == 5
    times = [x.sampled_at for x in history.samples]
    assert times == sorted(times)
    assert all(x.source == "simulated" and len(x.devices) == 8 for x in history.samples)
    assert client.get("/api/gpus/history", params={"seconds": 0}).status_code == 422
