"""The devices as one pass sees them: what is free, when each frees up, and why a job waits."""

from __future__ import annotations

import math

from gpudeck.services.queue.plan.model import Dev, Holding, Waiting
from gpudeck.services.queue.plan.state import DeviceState

NOW = 1000.0


def _devices() -> list[Dev]:
    return [
        Dev("vm", "u0", 0, holder=5),
        Dev("vm", "u1", 1),
        Dev("vm", "u2", 2, external=True),
        Dev("vm", "u3", 3, online=False),
    ]


def test_free_held_external_and_offline_devices_get_their_availability() -> None:
    state = DeviceState(_devices(), [Holding(5, "ann", (("vm", "u0"),), NOW + 60)], NOW)
    assert state.free == {("vm", "u1")}
    assert state.avail[("vm", "u0")] == NOW + 60
    assert math.isinf(state.avail[("vm", "u2")]) and math.isinf(state.avail[("vm", "u3")])
    assert state.used["ann"] == 1


def test_taking_devices_moves_them_out_of_free_until_the_jobs_end() -> None:
    state = DeviceState(_devices(), [Holding(5, "ann", (("vm", "u0"),), NOW + 60)], NOW)
    state.take(7, [Dev("vm", "u1", 1)], NOW + 30)
    assert not state.free and state.free_total == 0 and state.free_count["vm"] == 0
    assert state.holder[("vm", "u1")] == 7
    job = Waiting(8, "bob", "vm", 2, submitted_at=NOW, time_limit_s=10.0)
    assert state.earliest(job, state.candidates(job) or []) == (
        NOW + 60,
        [("vm", "u1"), ("vm", "u0")],
    )


def test_a_busy_reason_names_each_held_device_and_why() -> None:
    state = DeviceState(_devices(), [Holding(5, "ann", (("vm", "u0"),), NOW + 60)], NOW)
    job = Waiting(8, "bob", "vm", 3, submitted_at=NOW, time_limit_s=10.0)
    reason = state.busy_reason(job, state.candidates(job) or [])
    assert reason == (
        "devices busy: needs 3 on vm, 1 free (vm/0 held by job 5, vm/2 used by another "
        "process, vm/3 offline)"
    )
