"""The submit answer of a job that shares by memory (queue.summary.place_of): the pass's
summary carries each open device's reservation room, and a sharing job that no device has room
for is told the memory it is short of, without a pass of its own."""

from __future__ import annotations

from gpudeck.models import Job
from gpudeck.services.queue.summary import Summary, place_of

GiB = 1024**3
T = 1_800_000_000.0


def _sharing_job(need: int, **fields: object) -> Job:
    values: dict[str, object] = {
        "owner": "alice",
        "priority": 0,
        "held": False,
        "depends_on": [],
        "node": "n1",
        "world_size": 1,
        "requested_devices": None,
        "requested_nodes": None,
        "spread_nodes": None,
        "devices_per_node": None,
        "share": "memory",
        "reserved_bytes_per_device": need,
    }
    return Job(**{**values, **fields})


def _summary(room: dict[str, list[int]]) -> Summary:
    free_at: dict[str, dict[str, float | None]] = {"n1": {"u0": T + 60, "u1": T + 90}}
    return Summary(T, {}, [], free_at, {"n1": room})


def test_a_sharing_job_without_room_is_told_the_memory_short() -> None:
    summary = _summary({"u0": [0, int(3.1 * GiB)], "u1": [1, GiB]})
    place = place_of(summary, _sharing_job(int(4.2 * GiB)))
    assert place.reason_code == "insufficient_memory"
    assert place.reason == (
        "insufficient memory: device n1/0: 3.1 GiB free of reservations, needs 4.2 GiB; "
        "device n1/1: 1.0 GiB free of reservations, needs 4.2 GiB"
    )
    named = _sharing_job(int(4.2 * GiB), requested_devices=["u1"])
    assert place_of(summary, named).reason == (
        "insufficient memory: device n1/1: 1.0 GiB free of reservations, needs 4.2 GiB"
    )


def test_a_sharing_job_with_room_waits_for_its_turn_not_for_memory() -> None:
    place = place_of(_summary({"u0": [0, 8 * GiB]}), _sharing_job(4 * GiB))
    assert place.reason_code != "insufficient_memory"
