"""The sampler against real Redis and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import redis
from harness import TEST_NODE, make_job
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker
from telemetry.fake_nvml import GIB, FakeGpu, InstallNvml

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.models import Device, JobStatus
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.services.runs import lifecycle as runs
from gpudeck.telemetry import stream
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.nvml import NvmlProvider
from gpudeck.telemetry.provider import Placement, SampleContext
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.schema import DeviceSample, NodeSample
from gpudeck.telemetry.simulated import SimulatedProvider

EXTERNAL_PID = 2**22 + 99


def simulated_sampler(r: redis.Redis, sessions: sessionmaker[Session], **kwargs: float) -> Sampler:
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("8x80GiB"), TEST_NODE)
    store = DatabaseSamplerStore(sessions)
    return Sampler(provider, node=TEST_NODE, redis_client=r, store=store, **kwargs)  # type: ignore[arg-type]


def test_a_tick_publishes_one_snapshot_and_registers_the_devices(
    redis_client: redis.Redis, session_factory: sessionmaker[Session], db: Session
) -> None:
    sample = simulated_sampler(redis_client, session_factory).tick()
    assert sample.source == "simulated" and len(sample.devices) == 8
    assert db.scalar(select(Device).where(Device.index == 7)) is not None  # inventory upserted

    entries: Any = redis_client.xrange(stream.stream_key(TEST_NODE))
    ((_, fields),) = entries
    assert NodeSample.model_validate_json(fields[stream.STREAM_FIELD]) == sample
    assert redis_client.smembers(stream.NODES_KEY) == {TEST_NODE}
    health = redis_client.hgetall(stream.health_key(TEST_NODE))
    assert health["samples_total"] == "1" and health["source"] == "simulated"


def test_simulated_memory_follows_the_running_job(
    redis_client: redis.Redis, session_factory: sessionmaker[Session], db: Session, devices: str
) -> None:
    job = make_job(db, devices=[2, 5], status=JobStatus.running)
    db.execute(text("UPDATE jobs SET estimate_bytes_per_device = :b"), {"b": 12 * GIB})
    db.commit()
    stream.register_rank_pid(redis_client, TEST_NODE, 31337, job.id, 1)
    sample = simulated_sampler(redis_client, session_factory).tick()
    used = {d.index: d.memory_used_bytes for d in sample.devices}
    assert used == {0: 0, 1: 0, 2: 12 * GIB, 3: 0, 4: 0, 5: 12 * GIB, 6: 0, 7: 0}
    assert [(p.pid, p.job_id) for p in sample.devices[5].processes] == [(31337, job.id)]


class MemoryStore:
    """A SamplerStore with no database behind it: telemetry needs nothing but this protocol."""

    def __init__(self, placements: dict[str, Placement]) -> None:
        self._placements = placements
        self.saved: list[tuple[str, str, list[DeviceInfo]]] = []
        self.peaks: list[dict[int, int]] = []

    def placements(self, node: str) -> Mapping[str, Placement]:
        return self._placements

    def save_inventory(self, node: str, source: str, devices: Sequence[DeviceInfo]) -> None:
        self.saved.append((node, source, list(devices)))

    def record_peaks(self, peaks: Mapping[int, int]) -> None:
        self.peaks.append(dict(peaks))

    def record_rank_peaks(self, peaks: Mapping[tuple[int, int], int]) -> None:
        self.peaks.append({job: peak for (job, _), peak in peaks.items()})


def test_the_sampler_reads_and_writes_the_database_only_through_its_store(
    redis_client: redis.Redis,
) -> None:
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("2x80GiB"), TEST_NODE)
    held = provider.inventory()[1].uuid
    store = MemoryStore({held: Placement(job_id=7, rank=0, status="running", memory_bytes=GIB)})
    sampler = Sampler(provider, node=TEST_NODE, redis_client=redis_client, store=store)
    sample = sampler.tick()
    assert [d.memory_used_bytes for d in sample.devices] == [0, GIB]
    ((node, source, devices),) = store.saved
    assert (node, source) == (TEST_NODE, "simulated")
    assert [d.uuid for d in devices] == [d.uuid for d in provider.inventory()]
    sampler.tick()
    assert len(store.saved) == 1  # unchanged inventory: not rewritten within the refresh period


def test_the_stream_is_capped_but_keeps_the_history_asked_for(
    redis_client: redis.Redis, session_factory: sessionmaker[Session]
) -> None:
    sampler = simulated_sampler(redis_client, session_factory, interval_s=1.0, history_s=20)
    for _ in range(400):
        sampler.tick()
    length = redis_client.xlen(stream.stream_key(TEST_NODE))
    assert sampler.maxlen == 21
    assert sampler.maxlen <= length < 400  # approximate trimming: at least maxlen, bounded


def test_processes_gpudeck_did_not_start_mark_the_device_externally_busy(
    fake_nvml: InstallNvml,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
    db: Session,
) -> None:
    ours = 40404
    fake_nvml(
        [
            FakeGpu(uuid="GPU-0", compute=[(ours, 5 * GIB)]),
            FakeGpu(uuid="GPU-1", compute=[(EXTERNAL_PID, 3 * GIB)]),
        ]
    )
    stream.register_rank_pid(redis_client, TEST_NODE, ours, job_id=9, rank=0)
    sampler = Sampler(
        NvmlProvider(),
        node=TEST_NODE,
        redis_client=redis_client,
        store=DatabaseSamplerStore(session_factory),
    )
    sample = sampler.tick()
    assert sample.source == "nvml"
    rows = {d.uuid: d for d in db.scalars(select(Device))}
    assert rows["GPU-0"].external_processes == []
    assert rows["GPU-1"].external_processes == [{"pid": EXTERNAL_PID, "used_memory_bytes": 3 * GIB}]
    assert rows["GPU-1"].source == "nvml" and rows["GPU-1"].memory_total_bytes == 80 * GIB


def test_each_rank_peak_device_memory_is_kept_on_its_job_beside_the_host_figures(
    fake_nvml: InstallNvml,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
    db: Session,
    devices: str,
) -> None:
    job = make_job(db, devices=[0, 1], status=JobStatus.running)
    ranks = {0: 40500, 1: 40501}
    for rank, pid in ranks.items():
        stream.register_rank_pid(redis_client, TEST_NODE, pid, job.id, rank)
    stream.register_rank_pid(redis_client, TEST_NODE, 40499, job.id, None)  # a script's guard

    def tick(used: dict[int, int]) -> None:
        gpus = [FakeGpu(uuid=f"GPU-{r}", compute=[(ranks[r], used[r])]) for r in (0, 1)]
        fake_nvml(gpus)
        store = DatabaseSamplerStore(session_factory)
        Sampler(NvmlProvider(), node=TEST_NODE, redis_client=redis_client, store=store).tick()

    def rank_memory() -> Any:
        db.expire_all()
        return db.scalar(text("SELECT rank_memory FROM jobs WHERE id = :id"), {"id": job.id})

    tick({0: 5 * GIB, 1: 3 * GIB})
    tick({0: 2 * GIB, 1: 4 * GIB})  # a lower reading never lowers a peak
    assert rank_memory() == {"device_peak_bytes": {"0": 5 * GIB, "1": 4 * GIB}}
    # The worker's host figures, written when the job ends, keep the device peaks.
    host = {
        "host_limit_bytes": GIB,
        "exceeded": False,
        "ranks": [{"rank": 0, "host_peak_rss_bytes": 7}],
    }
    with session_factory.begin() as session:
        runs.record_rank_memory(session, job.id, host, host_is_device=False)
    assert rank_memory() == {**host, "device_peak_bytes": {"0": 5 * GIB, "1": 4 * GIB}}


class Failing:
    source = "simulated"
    needs_placements = False

    def inventory(self) -> list[DeviceInfo]:
        return []

    def read(self, context: SampleContext) -> list[DeviceSample]:
        raise RuntimeError("driver hiccup")

    def close(self) -> None:
        pass


def test_a_failing_tick_is_counted_and_the_loop_goes_on(
    redis_client: redis.Redis, session_factory: sessionmaker[Session]
) -> None:
    sampler = Sampler(
        Failing(),  # type: ignore[arg-type]
        node=TEST_NODE,
        redis_client=redis_client,
        store=DatabaseSamplerStore(session_factory),
        interval_s=0.05,
    )
    stop = threading.Event()
    thread = threading.Thread(target=sampler.run, args=(stop,))
    thread.start()
    try:
        deadline = threading.Event()
        for _ in range(100):
            if int(redis_client.hget(stream.health_key(TEST_NODE), "errors_total") or 0) >= 3:
                break
            deadline.wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=5)
    health = redis_client.hgetall(stream.health_key(TEST_NODE))
    assert int(health["errors_total"]) >= 3
    assert health["last_error"] == "RuntimeError: driver hiccup"


@pytest.mark.parametrize("raw", [{"12": "3:0", "13": "4", "x": "1:0", "14": "oops"}])
def test_pid_contract_parsing_ignores_malformed_entries(raw: dict[str, str]) -> None:
    assert stream.parse_pids(raw) == {12: (3, 0, None), 13: (4, None, None)}


def test_pid_contract_carries_the_kind(redis_client: redis.Redis) -> None:
    stream.register_rank_pid(redis_client, "kinds-node", 41, 12, 0, "sae")
    stream.register_rank_pid(redis_client, "kinds-node", 42, 12, None, "sae")
    try:
        assert stream.managed_pids(redis_client, "kinds-node") == {
            41: stream.ManagedPid(12, 0, "sae"),
            42: stream.ManagedPid(12, None, "sae"),
        }
    finally:
        redis_client.delete(stream.pids_key("kinds-node"))
