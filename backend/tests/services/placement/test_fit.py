"""services/placement/fit: what can never run on a node, refused before anything else. More
devices than the node has names `count`; a per-device estimate past what the node's largest
device gives when idle (the one usable-memory rule) names the field, the device and by how much."""

from __future__ import annotations

import pytest
from harness import register_devices
from sqlalchemy.orm import Session

from gpudeck.models import Device
from gpudeck.services.errors import InvalidInput
from gpudeck.services.placement import fit
from gpudeck.services.placement.recommend import usable_when_idle

GiB = fit.GiB


def device(index: int, total_gib: int, node: str = "n1") -> Device:
    return Device(
        node=node, uuid=f"GPU-{index}", index=index, name="gpu", source="simulated",
        memory_total_bytes=total_gib * GiB,
    )  # fmt: skip


def test_node_devices_are_that_nodes_in_index_order(db: Session) -> None:
    register_devices(db, "3x80GiB", node="alpha")
    register_devices(db, "2x80GiB", node="beta")
    assert [(d.node, d.index) for d in fit.node_devices(db, "alpha")] == [
        ("alpha", 0),
        ("alpha", 1),
        ("alpha", 2),
    ]
    assert [d.index for d in fit.node_devices(db, "beta")] == [0, 1]
    assert fit.node_devices(db, "gamma") == []


def test_a_count_up_to_the_nodes_devices_passes_and_one_more_is_refused() -> None:
    devices = [device(i, 80) for i in range(4)]
    fit.check_count(devices, "n1", 4)
    with pytest.raises(InvalidInput) as info:
        fit.check_count(devices, "n1", 5)
    assert info.value.extra["errors"] == [
        ("count", "node n1 has 4 devices; 5 requested (a job runs on one node)")
    ]


def test_the_largest_devices_idle_room_is_the_bound_to_the_byte() -> None:
    devices = [device(0, 24), device(1, 80), device(2, 40)]
    room = usable_when_idle(80 * GiB)
    fit.check_fits(devices, room, "config")  # exactly the room: it fits
    with pytest.raises(InvalidInput) as info:
        fit.check_fits(devices, room + GiB, "config.batch_size")
    [(field, message)] = info.value.extra["errors"]
    assert field == "config.batch_size"
    assert message.startswith(f"does not fit: the job needs {(room + GiB) / GiB:.2f} GiB")
    assert f"1.00 GiB more than the {room / GiB:.2f} GiB that n1/1 (the largest device)" in message


def test_the_room_is_less_than_the_whole_device() -> None:
    """A job as big as the device itself never fits: the safety margin stays free."""
    with pytest.raises(InvalidInput):
        fit.check_fits([device(0, 80)], 80 * GiB, "config")


def test_no_devices_is_not_judged_here() -> None:
    """An empty inventory is the placement's refusal (no node, no devices), not a size one."""
    fit.check_fits([], 10**15, "config")
