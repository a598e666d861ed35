"""The sampler's database side: each write is its own committed transaction (another session
sees it at once, as the API and the scheduler do), the inventory carries the node's advertised
address, and the placements it reads are the node's live allocations."""

from __future__ import annotations

from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import JobStatus
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.provider import Placement
from gpudeck.telemetry.simulated import simulated_uuid

GIB = 1024**3


def test_the_inventory_is_committed_with_the_node_s_address(
    session_factory: sessionmaker[Session],
) -> None:
    store = DatabaseSamplerStore(session_factory, address="10.0.0.9")
    store.save_inventory("box", "nvml", [DeviceInfo("GPU-a", 0, "H100", 80 * GIB)])
    with session_factory() as other:
        node = other.execute(text("SELECT source, address FROM nodes WHERE name = 'box'")).one()
        assert tuple(node) == ("nvml", "10.0.0.9")
        assert other.scalars(text("SELECT uuid FROM devices WHERE node = 'box'")).all() == ["GPU-a"]


def test_placements_are_the_live_allocations_of_the_node_asked(
    session_factory: sessionmaker[Session], db: Session, devices: str
) -> None:
    job = make_job(db, devices=[4], status=JobStatus.running)
    assert job.estimate_bytes_per_device  # what the simulated readings show it using
    store = DatabaseSamplerStore(session_factory)
    assert store.placements(TEST_NODE) == {
        simulated_uuid(TEST_NODE, 4): Placement(job.id, 0, "running", job.estimate_bytes_per_device)
    }
    assert store.placements("elsewhere") == {}


def test_peaks_are_committed_and_only_ever_grow(
    session_factory: sessionmaker[Session], db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0, 1], status=JobStatus.running)
    store = DatabaseSamplerStore(session_factory)
    store.record_peaks({job.id: 6 * GIB})
    store.record_rank_peaks({(job.id, 0): 3 * GIB, (job.id, 1): 5 * GIB})
    store.record_peaks({job.id: GIB})
    store.record_rank_peaks({(job.id, 1): 2 * GIB})
    with session_factory() as other:
        peak, rank_memory = other.execute(
            text("SELECT peak_memory_bytes, rank_memory FROM jobs WHERE id = :id"), {"id": job.id}
        ).one()
    assert peak == 6 * GIB
    assert rank_memory == {"device_peak_bytes": {"0": 3 * GIB, "1": 5 * GIB}}
