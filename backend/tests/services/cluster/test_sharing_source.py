"""The sampler's sharing source reads the live shared allocations of its node: each sharing
job's reservation, and the sharing jobs on each device; whole-device jobs and released
allocations are not in it."""

from __future__ import annotations

from harness import TEST_NODE, make_job, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.cluster.sharing_source import DatabaseSharingSource
from gpudeck.services.submit import submission
from gpudeck.telemetry.provider import Placement

MiB = 1024**2


def test_reservations_and_placements_of_the_live_sharing_jobs(
    db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "2x8GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    db.commit()
    config = {"entrypoint": "train.py", "memory_per_device_bytes": 256 * MiB}
    on_0 = [{"index": 0, "node": TEST_NODE}]
    jobs = [
        submission.create_job(
            db, JobCreate(kind="script", config=config, devices=on_0, share="memory"), owner="ada"
        )
        for _ in range(2)
    ]
    db.commit()
    whole = make_job(db, devices=[1])
    source = DatabaseSharingSource(session_factory)
    reserved = 756 * MiB
    assert source.reservations(TEST_NODE) == {j.id: reserved for j in jobs}
    uuid = jobs[0].allocations[0].gpu_uuid
    assert source.shared_placements(TEST_NODE) == {
        uuid: [Placement(j.id, 0, "queued", reserved) for j in jobs]
    }
    assert whole.id not in source.reservations(TEST_NODE)
    assert source.reservations("elsewhere") == {}
    db.execute(
        text("UPDATE allocations SET released_at = now() WHERE job_id = :j"), {"j": jobs[0].id}
    )
    db.commit()
    assert source.reservations(TEST_NODE) == {jobs[1].id: reserved}
