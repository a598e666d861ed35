"""Sharing a device by memory, decided by Postgres (migration 0021's trigger and the partial
unique index): a device holds one live exclusive allocation, or shared ones whose bytes fit its
usable memory; the refusals come from the database itself, whatever the caller read."""

from __future__ import annotations

from typing import Any

import pytest
from harness import TEST_NODE, make_job, register_devices
from psycopg.errors import ExclusionViolation
from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.errors import GpuBusy, InvalidInput
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.placement.shared import NoRoomToShare
from gpudeck.services.submit import submission

GiB = 1024**3
MiB = 1024**2
CONTEXT = 500 * MiB  # the configured default context reserve
USABLE_8 = usable_when_idle(8 * GiB)  # 7.5 GiB (simulated devices: ranks on this CPU)


def allow_sharing(db: Session, *, across_users: bool = False) -> None:
    db.execute(
        text("UPDATE nodes SET share_memory = true, share_across_users = :a WHERE name = :n"),
        {"a": across_users, "n": TEST_NODE},
    )
    db.commit()


def script(memory_bytes: int, **placement: Any) -> JobCreate:
    config = {"entrypoint": "train.py", "memory_per_device_bytes": memory_bytes}
    return JobCreate(kind="script", config=config, share="memory", **placement)


def shared_job(db: Session, memory_bytes: int, owner: str = "ada", **placement: Any) -> Job:
    job = submission.create_job(db, script(memory_bytes, **placement), owner=owner)
    db.commit()
    return job


def sql_allocation(db: Session, job_id: int, index: int, reserved: int | None) -> None:
    """An allocation inserted by hand, past every Python check: only the database judges."""
    db.execute(
        text(
            "INSERT INTO allocations (job_id, node, gpu_uuid, gpu_index, rank, reserved_bytes) "
            "SELECT :job, node, uuid, index, 0, :reserved FROM devices "
            "WHERE node = :node AND index = :index"
        ),
        {"job": job_id, "reserved": reserved, "node": TEST_NODE, "index": index},
    )


@pytest.mark.parametrize(
    "total", [256 * MiB, 8 * GiB, 10 * GiB, 10 * GiB + 19, 80 * GiB, 141 * GiB, 192 * GiB - 7]
)
def test_the_triggers_usable_memory_is_the_one_margin_rule(db: Session, total: int) -> None:
    in_sql = db.scalar(text("SELECT gpudeck_usable_when_idle(:t)"), {"t": total})
    assert in_sql == usable_when_idle(total)


def test_shared_jobs_reserve_estimate_plus_context_best_fit(db: Session) -> None:
    register_devices(db, "2x8GiB")
    allow_sharing(db)
    first = shared_job(db, 3 * GiB, count=1, node=TEST_NODE)
    assert [(a.gpu_index, a.reserved_bytes) for a in first.allocations] == [(0, 3 * GiB + CONTEXT)]
    assert first.share == "memory" and first.reserved_bytes_per_device == 3 * GiB + CONTEXT
    # Best fit: the device with the least room that holds it, not the idle one.
    second = shared_job(db, 2 * GiB, count=1, node=TEST_NODE)
    assert [a.gpu_index for a in second.allocations] == [0]
    # 7.5 - 3.5 - 2.5 = 1.5 GiB left on device 0: a 3 GiB job goes to device 1.
    third = shared_job(db, 3 * GiB, count=1, node=TEST_NODE)
    assert [a.gpu_index for a in third.allocations] == [1]


def test_a_share_that_does_not_fit_waits_or_is_refused_naming_the_memory(db: Session) -> None:
    register_devices(db, "1x8GiB")
    allow_sharing(db)
    shared_job(db, 5 * GiB, count=1, node=TEST_NODE)
    spec = script(3 * GiB, count=1, node=TEST_NODE, queue=False)
    with pytest.raises(NoRoomToShare, match=r"device testnode/0: 2\.0 GiB free of reservations, "
                       r"needs 3\.5 GiB"):  # fmt: skip
        submission.create_job(db, spec, owner="ada")
    db.rollback()
    waiting = shared_job(db, 3 * GiB, count=1, node=TEST_NODE)  # queue: true, the default
    assert waiting.allocations == []


def test_the_database_refuses_shared_beside_exclusive_and_over_the_usable_sum(
    db: Session,
) -> None:
    register_devices(db, "2x8GiB")
    whole = make_job(db, devices=[0])
    other = make_job(db, devices=[1])
    db.execute(
        text("UPDATE allocations SET released_at = now() WHERE job_id = :j"), {"j": other.id}
    )
    db.commit()
    with pytest.raises(IntegrityError) as held:
        sql_allocation(db, other.id, 0, 4 * GiB)  # shared beside an exclusive one
    assert isinstance(held.value.orig, ExclusionViolation)
    assert f"held whole by job {whole.id}" in str(held.value.orig)
    db.rollback()
    sql_allocation(db, other.id, 1, 4 * GiB)
    db.commit()
    with pytest.raises(IntegrityError) as shared:
        sql_allocation(db, whole.id, 1, None)  # exclusive beside a shared one
    assert isinstance(shared.value.orig, ExclusionViolation)
    db.rollback()
    sql_allocation(db, whole.id, 1, USABLE_8 - 4 * GiB)  # exactly full: allowed
    db.commit()
    with pytest.raises(IntegrityError) as over:
        sql_allocation(db, whole.id, 1, 1)  # one byte over the usable memory
    assert isinstance(over.value.orig, ExclusionViolation)
    assert "0 bytes free of reservations" in str(over.value.orig)
    db.rollback()
    # A release frees its bytes; an exclusive pair on one device is still the index's.
    db.execute(text("UPDATE allocations SET released_at = now() WHERE gpu_index = 1"))
    sql_allocation(db, whole.id, 1, 1)
    db.commit()


def test_an_exclusive_request_on_a_shared_device_is_busy_naming_the_sharer(db: Session) -> None:
    register_devices(db, "2x8GiB")
    allow_sharing(db)
    sharer = shared_job(db, 2 * GiB, devices=[{"index": 0, "node": TEST_NODE}])
    with pytest.raises(GpuBusy) as busy:
        make_job(db, devices=[0])
    assert busy.value.extra["busy"][0]["held_by_job_id"] == sharer.id
    db.rollback()
    holder = make_job(db, devices=[1])
    with pytest.raises(GpuBusy, match=f"testnode/1 \\(job {holder.id}\\)"):
        submission.create_job(
            db, script(GiB, devices=[{"index": 1, "node": TEST_NODE}], queue=False), owner="ada"
        )


def test_other_users_share_only_where_the_node_allows_it(db: Session) -> None:
    register_devices(db, "1x8GiB")
    allow_sharing(db)
    shared_job(db, 2 * GiB, count=1, node=TEST_NODE, owner="ada")
    with pytest.raises(NoRoomToShare, match="another user's job"):
        submission.create_job(db, script(GiB, count=1, node=TEST_NODE, queue=False), owner="bob")
    db.rollback()
    allow_sharing(db, across_users=True)
    assert shared_job(db, 2 * GiB, count=1, node=TEST_NODE, owner="bob").allocations


def test_sharing_refusals_name_share(db: Session) -> None:
    register_devices(db, "1x8GiB")
    with pytest.raises(InvalidInput, match="does not allow sharing devices") as off:
        submission.create_job(db, script(GiB, count=1, node=TEST_NODE), owner="ada")
    assert off.value.field == "share"
    db.rollback()
    allow_sharing(db)
    no_estimate = JobCreate(
        kind="map",
        config={"function": "m:f", "input": "x.npy", "output": "out/y"},
        count=1,
        node=TEST_NODE,
        share="memory",
    )
    with pytest.raises(InvalidInput, match="gives no memory estimate") as none:
        submission.create_job(db, no_estimate, owner="ada")
    assert none.value.field == "share"
    db.rollback()
    with pytest.raises(ValidationError, match="cannot share devices"):
        JobCreate(kind="sae", count=1, cluster="lab", share="memory")
    assert db.scalar(text("SELECT count(*) FROM jobs")) == 0
