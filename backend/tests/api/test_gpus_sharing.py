"""What the board reads of sharing a device by memory: GET /api/gpus gives each device's
reservations by job, the room a sharing job could still reserve and whether its node allows
sharing; GET /api/nodes gives the node's policy and the CUDA context reserve a share adds."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.schemas.gpus import GpuPublic, NodePublic
from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit import submission

GiB = 1024**3
MiB = 1024**2
CONTEXT = 500 * MiB  # the default context reserve


def submit(db: Session, memory_bytes: int, name: str, **placement: Any) -> int:
    """A script job through the submit pipeline (the API's own, less its code-root check)."""
    config = {"entrypoint": "train.py", "memory_per_device_bytes": memory_bytes}
    body = JobCreate(kind="script", name=name, config=config, **placement)
    job = submission.create_job(db, body, owner="ada")
    db.commit()
    return job.id


def gpus(client: TestClient) -> list[GpuPublic]:
    return [GpuPublic.model_validate(g) for g in client.get("/api/gpus").json()]


def test_the_board_reads_each_devices_reservations_and_its_room(
    client: TestClient, db: Session
) -> None:
    register_devices(db, "3x8GiB")
    usable = usable_when_idle(8 * GiB)
    before = gpus(client)
    assert [(g.reservations, g.reservation_room_bytes, g.node_shares_memory) for g in before] == [
        ([], None, False)
    ] * 3  # sharing is off by default: no room for anyone
    db.execute(text("UPDATE nodes SET share_memory = true WHERE name = :n"), {"n": TEST_NODE})
    db.commit()

    first = submit(db, 3 * GiB, "small-a", devices=[DeviceRef(index=0)], share="memory")
    second = submit(db, 2 * GiB, "small-b", devices=[DeviceRef(index=0)], share="memory")
    whole = submit(db, 1 * GiB, "whole", devices=[DeviceRef(index=1)])

    shared, held, idle = gpus(client)  # one row per device, however many jobs share it
    assert [(r.job_id, r.job_name, r.owner, r.reserved_bytes) for r in shared.reservations] == [
        (first, "small-a", "ada", 3 * GiB + CONTEXT),
        (second, "small-b", "ada", 2 * GiB + CONTEXT),
    ]
    assert shared.reservation_room_bytes == usable - 5 * GiB - 2 * CONTEXT
    assert shared.held_by is not None and shared.held_by.job_id == first
    assert held.held_by is not None and held.held_by.job_id == whole
    assert held.reservations == [] and held.reservation_room_bytes is None  # held whole
    assert idle.reservations == [] and idle.reservation_room_bytes == usable
    assert all(g.node_shares_memory for g in (shared, held, idle))

    assert client.post(f"/api/jobs/{first}/cancel").status_code == 200
    shared = gpus(client)[0]
    assert [r.job_id for r in shared.reservations] == [second]
    assert shared.reservation_room_bytes == usable - 2 * GiB - CONTEXT


def test_nodes_say_whether_they_share_and_what_a_share_adds(
    client: TestClient, db: Session
) -> None:
    register_devices(db, "1x8GiB")
    (node,) = [NodePublic.model_validate(n) for n in client.get("/api/nodes").json()]
    assert (node.share_memory, node.share_across_users) == (False, False)
    assert node.cuda_context_reserve_bytes == CONTEXT
    db.execute(
        text("UPDATE nodes SET share_memory = true, share_across_users = true WHERE name = :n"),
        {"n": TEST_NODE},
    )
    db.commit()
    (node,) = [NodePublic.model_validate(n) for n in client.get("/api/nodes").json()]
    assert (node.share_memory, node.share_across_users) == (True, True)
