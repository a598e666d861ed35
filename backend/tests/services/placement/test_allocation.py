from __future__ import annotations

import threading

import pytest
from harness import TEST_NODE, make_job
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.errors import GpuBusy, NotEnoughDevices
from gpudeck.services.submit import submission


def test_count_picks_free_devices_in_index_order(db: Session, devices: str) -> None:
    make_job(db, devices=[0, 2])
    job = make_job(db, count=3)
    assert [a.gpu_index for a in job.allocations] == [1, 3, 4]
    assert [a.rank for a in job.allocations] == [0, 1, 2]


def test_busy_error_names_each_busy_device_and_holder(db: Session, devices: str) -> None:
    first = make_job(db, devices=[1, 2])
    with pytest.raises(GpuBusy) as info:
        make_job(db, devices=[2, 3, 1])
    db.rollback()
    busy = {(b["index"], b["held_by_job_id"]) for b in info.value.extra["busy"]}
    assert busy == {(1, first.id), (2, first.id)}


def test_count_beyond_free_devices(db: Session, devices: str) -> None:
    make_job(db, count=6)
    with pytest.raises(NotEnoughDevices, match="3 devices requested but only 2 are free"):
        make_job(db, count=3)


def test_concurrent_count_requests_split_the_devices(
    session_factory: sessionmaker[Session], devices: str
) -> None:
    """Eight threads each ask for two of eight devices at once: four win, disjointly."""
    results: list[list[int] | str] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        with session_factory() as session:
            spec = JobCreate(
                kind="sae", config={"batch_size": 64}, count=2, node=TEST_NODE, queue=False
            )
            barrier.wait()
            try:
                job = submission.create_job(session, spec, owner="t")
                session.commit()
                results.append([a.gpu_index for a in job.allocations])
            except NotEnoughDevices:
                session.rollback()
                results.append("busy")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [r for r in results if r != "busy"]
    assert len(won) == 4
    assert sorted(i for r in won for i in r) == list(range(8))
