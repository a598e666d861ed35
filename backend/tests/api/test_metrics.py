"""GET /metrics: DCGM exporter names, units and labels, plus gpudeck_* metrics."""

from __future__ import annotations

import pytest
import redis
from fastapi.testclient import TestClient
from harness import TEST_NODE, make_job
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker
from telemetry.fake_nvml import GIB, FakeGpu, InstallNvml, installer

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.models import JobStatus
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.services.submit import submission
from gpudeck.telemetry import stream
from gpudeck.telemetry.nvml import NvmlProvider
from gpudeck.telemetry.provider import Provider
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.simulated import SimulatedProvider

MIB = 1024**2
DCGM = {
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",
}  # fmt: skip
DCGM_LABELS = {"gpu", "UUID", "device", "modelName", "Hostname", "source"}


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> InstallNvml:
    return installer(monkeypatch)


def scrape(client: TestClient) -> dict[str, list[Sample]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {f.name: f.samples for f in text_string_to_metric_families(response.text)}


def node_sampler(
    provider: Provider, redis_client: redis.Redis, session_factory: sessionmaker[Session]
) -> Sampler:
    """The sampler of the test node, storing into this test's database and Redis."""
    return Sampler(
        provider,
        node=TEST_NODE,
        redis_client=redis_client,
        store=DatabaseSamplerStore(session_factory),
    )


def one(samples: list[Sample], **labels: str) -> float:
    (match,) = [s for s in samples if labels.items() <= s.labels.items()]
    return float(match.value)


def test_simulated_devices_under_dcgm_names_and_jobs_attributed(
    client: TestClient,
    devices: str,
    db: Session,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    job = make_job(db, devices=[0, 2], status=JobStatus.running)
    db.execute(text("UPDATE jobs SET estimate_bytes_per_device = :b"), {"b": 30 * GIB})
    db.commit()
    make_job(db, devices=[5])  # queued
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("8x80GiB"), TEST_NODE)
    node_sampler(provider, redis_client, session_factory).tick()

    m = scrape(client)
    assert set(m) >= DCGM
    for name in DCGM:
        assert len(m[name]) == 8 and all(set(s.labels) == DCGM_LABELS for s in m[name])
    first = {"gpu": "0", "Hostname": TEST_NODE}
    label = next(s.labels for s in m["DCGM_FI_DEV_FB_USED"] if s.labels["gpu"] == "0")
    assert label["device"] == "nvidia0" and label["UUID"].startswith("SIM-")
    assert label["modelName"] == "Simulated 80GiB GPU" and label["source"] == "simulated"
    assert one(m["DCGM_FI_DEV_FB_USED"], **first) == 30 * 1024  # MiB
    assert one(m["DCGM_FI_DEV_FB_FREE"], **first) == 50 * 1024
    assert one(m["DCGM_FI_DEV_FB_USED"], gpu="1") == 0
    # no rank process is registered, so the simulated device reads idle (it follows CPU work)
    assert one(m["DCGM_FI_DEV_GPU_UTIL"], **first) == 0
    assert 10 < one(m["DCGM_FI_DEV_POWER_USAGE"], **first) <= 700  # W, not mW
    assert 100 < one(m["DCGM_FI_DEV_SM_CLOCK"], **first) < 3000  # MHz

    assert one(m["gpudeck_jobs"], state="running") == 1
    assert one(m["gpudeck_jobs"], state="queued") == 1
    assert one(m["gpudeck_jobs"], state="failed") == 0
    assert one(m["gpudeck_allocations_live"], Hostname=TEST_NODE) == 3
    assert 0 <= one(m["gpudeck_sampler_last_sample_age_seconds"], Hostname=TEST_NODE) < 5
    assert one(m["gpudeck_sampler_errors"], Hostname=TEST_NODE) == 0  # exposed as *_total
    assert one(m["gpudeck_sampler_samples"], Hostname=TEST_NODE) == 1

    job_mem = m["gpudeck_job_device_memory_used_bytes"]
    assert {(s.labels["job_id"], s.labels["gpu"], s.labels["owner"]) for s in job_mem} == {
        (str(job.id), "0", "tester"),
        (str(job.id), "2", "tester"),
    }
    assert one(job_mem, gpu="2") == 30 * GIB
    assert one(m["gpudeck_job_device_utilization_pct"], gpu="2", job_id=str(job.id)) == 0
    assert one(m["gpudeck_ws_clients"]) == 0


def test_nvml_processes_are_attributed_to_their_jobs(
    fake_nvml: InstallNvml,
    client: TestClient,
    db: Session,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    rank_pid, child_pid, external = 51001, 51002, 2**22 + 5
    fake_nvml(
        [
            FakeGpu(
                uuid="GPU-0",
                memory_used=7 * GIB,
                util_gpu=93,
                compute=[(rank_pid, 6 * GIB), (external, GIB)],
            ),
            FakeGpu(uuid="GPU-1", compute=[(external, 2 * GIB)]),
        ]
    )
    sampler = node_sampler(NvmlProvider(), redis_client, session_factory)
    sampler.tick()  # registers the devices
    job = make_job(db, devices=[0], status=JobStatus.running)
    stream.register_rank_pid(redis_client, TEST_NODE, rank_pid, job.id, 0)
    sampler.tick()

    m = scrape(client)
    assert one(m["DCGM_FI_DEV_FB_USED"], UUID="GPU-0", source="nvml") == 7 * 1024
    job_mem = m["gpudeck_job_device_memory_used_bytes"]
    assert [(s.labels["job_id"], s.labels["UUID"], s.value) for s in job_mem] == [
        (str(job.id), "GPU-0", 6 * GIB)
    ]
    assert one(m["gpudeck_job_device_utilization_pct"], UUID="GPU-0") == 93
    assert one(m["gpudeck_device_external_processes"], UUID="GPU-1") == 1
    assert one(m["gpudeck_device_external_processes"], UUID="GPU-0") == 1
    assert child_pid not in {int(s.value) for s in job_mem}


def test_a_shared_device_credits_each_job_its_own_processes_and_no_job_its_utilization(
    fake_nvml: InstallNvml,
    client: TestClient,
    db: Session,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    """Two jobs share GPU-0 by memory: each is credited what its rank holds, never the
    first's whole device (the first sharing job is the device's `held_by`)."""
    first_pid, second_pid = 52001, 52002
    fake_nvml(
        [
            FakeGpu(
                uuid="GPU-0",
                memory_used=5 * GIB,
                util_gpu=80,
                compute=[(first_pid, 3 * GIB), (second_pid, 2 * GIB)],
            ),
        ]
    )
    sampler = node_sampler(NvmlProvider(), redis_client, session_factory)
    sampler.tick()  # registers the device
    db.execute(text("UPDATE nodes SET share_memory = true WHERE name = :n"), {"n": TEST_NODE})
    db.commit()
    jobs = []
    for name, pid, gib in (("small-a", first_pid, 3), ("small-b", second_pid, 2)):
        config = {"entrypoint": "train.py", "memory_per_device_bytes": gib * GIB}
        body = JobCreate(
            kind="script", name=name, config=config, devices=[DeviceRef(index=0)], share="memory"
        )
        job = submission.create_job(db, body, owner="ada")
        db.commit()
        stream.register_rank_pid(redis_client, TEST_NODE, pid, job.id, 0)
        jobs.append(job.id)
    db.execute(text("UPDATE jobs SET status = 'running'"))
    db.commit()
    sampler.tick()

    m = scrape(client)
    job_mem = m["gpudeck_job_device_memory_used_bytes"]
    assert sorted((s.labels["job_id"], s.labels["owner"], s.value) for s in job_mem) == [
        (str(jobs[0]), "ada", 3 * GIB),
        (str(jobs[1]), "ada", 2 * GIB),
    ]
    assert m["gpudeck_job_device_utilization_pct"] == []
    assert one(m["DCGM_FI_DEV_GPU_UTIL"], UUID="GPU-0") == 80
