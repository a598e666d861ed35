"""The device inventory: a node's report upserts its devices by (node, uuid), so a re-report
updates rows in place and never duplicates them; the holder of each device is the job with a
live allocation on it; each node is listed with its device count, address and whether its
sampler still reports."""

from __future__ import annotations

from harness import make_job, register_devices
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from gpudeck.models import Device, Node
from gpudeck.services.cluster.inventory import (
    list_devices_with_holders,
    list_nodes,
    upsert_inventory,
)
from gpudeck.telemetry.devices import DeviceInfo

GIB = 1024**3


def devices_of(db: Session, node: str) -> list[tuple[int, str, int, str, int]]:
    db.expire_all()
    rows = db.scalars(select(Device).where(Device.node == node).order_by(Device.index))
    return [(d.id, d.uuid, d.index, d.name, d.memory_total_bytes) for d in rows]


def test_a_report_again_updates_each_device_in_place(db: Session) -> None:
    first = [DeviceInfo("GPU-a", 0, "A100", 40 * GIB), DeviceInfo("GPU-b", 1, "A100", 40 * GIB)]
    upsert_inventory(db, "box", "nvml", first, address="10.0.0.5")
    db.commit()
    before = devices_of(db, "box")
    assert [(uuid, index) for _, uuid, index, _, _ in before] == [("GPU-a", 0), ("GPU-b", 1)]

    # After a reboot the driver numbers them the other way round; one reports an outside process.
    again = [
        DeviceInfo("GPU-b", 0, "A100-80GB", 80 * GIB),
        DeviceInfo("GPU-a", 1, "A100-80GB", 80 * GIB, [{"pid": 4, "used_memory_bytes": GIB}]),
    ]
    upsert_inventory(db, "box", "nvml", again)  # no address: the stored one stays
    db.commit()
    after = devices_of(db, "box")
    ids = {uuid: device_id for device_id, uuid, *_ in before}
    assert after == [
        (ids["GPU-b"], "GPU-b", 0, "A100-80GB", 80 * GIB),
        (ids["GPU-a"], "GPU-a", 1, "A100-80GB", 80 * GIB),
    ]
    external = db.scalar(select(Device.external_processes).where(Device.uuid == "GPU-a"))
    assert external == [{"pid": 4, "used_memory_bytes": GIB}]
    node = db.get(Node, "box")
    assert node is not None and (node.source, node.address) == ("nvml", "10.0.0.5")


def test_a_report_marks_the_node_and_its_devices_seen(db: Session) -> None:
    upsert_inventory(db, "box", "simulated", [DeviceInfo("GPU-a", 0, "sim", GIB)])
    db.execute(text("UPDATE nodes SET last_seen_at = now() - interval '1 hour'"))
    db.execute(text("UPDATE devices SET last_seen_at = now() - interval '1 hour'"))
    db.commit()
    assert [row.online for row in list_nodes(db)] == [False]
    upsert_inventory(db, "box", "simulated", [DeviceInfo("GPU-a", 0, "sim", GIB)])
    db.commit()
    assert [row.online for row in list_nodes(db)] == [True]
    stale = db.scalar(
        text("SELECT count(*) FROM devices WHERE last_seen_at < now() - interval '1 minute'")
    )
    assert stale == 0


def test_each_device_is_listed_with_the_job_holding_it_until_released(
    db: Session, devices: str
) -> None:
    register_devices(db, "2x80GiB", node="alpha")  # sorts before the test node
    job = make_job(db, devices=[1, 3])
    listed = [(d.node, d.index, j.id if j else None) for d, j in list_devices_with_holders(db)]
    assert listed[:2] == [("alpha", 0, None), ("alpha", 1, None)]
    holders = {index: job_id for node, index, job_id in listed if node == devices}
    assert holders == {i: job.id if i in (1, 3) else None for i in range(8)}

    db.execute(text("UPDATE allocations SET released_at = now() WHERE rank = 0"))
    db.commit()
    held = [(d.index, j.id) for d, j in list_devices_with_holders(db) if j is not None]
    assert held == [(3, job.id)]  # released: its device is free, and listed once


def test_nodes_are_listed_with_their_device_count_address_and_online(db: Session) -> None:
    register_devices(db, "4x80GiB", node="beta")
    upsert_inventory(db, "alpha", "nvml", [], address="10.0.0.7")  # a node with no GPUs yet
    db.commit()
    rows = [(r.name, r.source, r.device_count, r.address, r.online) for r in list_nodes(db)]
    assert rows == [("alpha", "nvml", 0, "10.0.0.7", True), ("beta", "simulated", 4, None, True)]
