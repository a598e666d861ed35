"""The pass's values: after-success dependencies, the queue's order, and the memory fit."""

from __future__ import annotations

from gpudeck.services.queue.plan.model import (
    Dev,
    Policy,
    Waiting,
    dependency_state,
    fits,
    order_key,
)


def test_dependencies_are_after_success() -> None:
    assert dependency_state({1: "succeeded"}) == ("ok", "")
    assert dependency_state({1: "succeeded", 2: "queued"}) == (
        "wait",
        "waiting for job 2 to succeed",
    )
    assert dependency_state({1: "stopped_early", 2: "queued"}) == (
        "failed",
        "dependency job 1 ended stopped_early",
    )


def test_order_is_priority_then_usage_then_age_or_age_alone_in_fifo() -> None:
    old_low = Waiting(1, "ann", "vm", 1, submitted_at=1.0, time_limit_s=1.0)
    new_high = Waiting(2, "bob", "vm", 1, submitted_at=2.0, time_limit_s=1.0, priority=5)
    usage = {"ann": 0.0, "bob": 99.0}
    fair = sorted([old_low, new_high], key=lambda j: order_key(j, usage, Policy()))
    fifo = sorted([new_high, old_low], key=lambda j: order_key(j, usage, Policy(order="fifo")))
    assert [j.id for j in fair] == [2, 1] and [j.id for j in fifo] == [1, 2]


def test_a_device_fits_when_its_usable_memory_holds_the_need_or_nothing_is_known() -> None:
    dev = Dev("vm", "u0", 0, usable_bytes=100)
    assert fits(dev, 100) and not fits(dev, 101) and fits(dev, None)
    assert fits(Dev("vm", "u1", 1), 10**12)  # no reading: memory is not judged
