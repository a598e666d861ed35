"""When a sweep's waiting members may start under its cap (services/queue/plan/sweep_slots.py):
each takes the slot a running sibling frees, at the end its rate gives, and then holds it for
its siblings' median measured run; without a measured run, its time limit, said to be one."""

from __future__ import annotations

import pytest

from gpudeck.services.queue.plan.model import Holding, Waiting
from gpudeck.services.queue.plan.sweep_slots import (
    member_run_s,
    started,
    sweep_slots,
    take_slot,
)

NOW = 1000.0


def _running(job_id: int, ends_at: float, run_s: float | None, sweep: int | None = 7) -> Holding:
    return Holding(
        job_id, "ann", (("vm", f"u{job_id}"),), ends_at, estimated=run_s is not None,
        sweep=sweep, run_s=run_s,
    )  # fmt: skip


def _member(job_id: int, sweep: int | None = 7, limit: float = 3600.0) -> Waiting:
    return Waiting(
        id=job_id, owner="ann", node="vm", world_size=1, submitted_at=NOW, time_limit_s=limit,
        sweep=sweep,
    )  # fmt: skip


def test_members_take_the_slots_running_siblings_free_in_the_order_they_end() -> None:
    slots = sweep_slots([_running(1, NOW + 300, 600), _running(2, NOW + 100, 400)])
    first, second, third = (take_slot(slots, _member(i), NOW, None) for i in (10, 11, 12))
    # the median measured run is 500 s: the first freed slot (at +100) comes back at +600
    assert first == (NOW + 100, False)
    assert second == (NOW + 300, False)
    assert third == (NOW + 600, False)


def test_the_median_run_is_not_moved_by_one_slow_member() -> None:
    slots = sweep_slots([_running(1, NOW, 100), _running(2, NOW, 110), _running(3, NOW, 5000)])
    assert member_run_s(slots, _member(9), None) == (110, False)
    # and never past the member's own time limit
    assert member_run_s(slots, _member(9, limit=50.0), None) == (50.0, False)


def test_without_a_measured_run_a_member_counts_its_time_limit_and_says_so() -> None:
    slots = sweep_slots([_running(1, NOW + 60, None)])
    assert member_run_s(slots, _member(9, limit=600.0), None) == (600.0, True)
    assert member_run_s(slots, _member(9, limit=600.0), 0.5) == (300.0, False)  # run share
    start = take_slot(slots, _member(9), NOW, None)
    assert start == (NOW + 60, True)  # the slot's own end was a time limit


def test_a_sweep_with_no_running_member_frees_no_slot_by_the_cap() -> None:
    slots = sweep_slots([_running(1, NOW + 60, 100, sweep=8), _running(2, NOW, 100, sweep=None)])
    assert take_slot(slots, _member(9, sweep=7), NOW, None) is None
    assert take_slot(slots, _member(9, sweep=None), NOW, None) is None


def test_ended_members_hold_no_slot_and_a_start_now_takes_one() -> None:
    ended = Holding(1, "ann", (("vm", "u1"),), NOW, sweep=7, ended=True, run_s=100)
    slots = sweep_slots([ended])
    assert take_slot(slots, _member(9), NOW, None) is None
    started(slots, _member(9), NOW, None)  # no measured run: its time limit, 3,600 s
    assert take_slot(slots, _member(10), NOW, None) == (pytest.approx(NOW + 3600), True)
