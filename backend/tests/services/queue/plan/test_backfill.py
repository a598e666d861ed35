"""EASY backfill's two rules: a job behind the reservation starts now only if it ends before
the reservation or leaves its devices alone, and never eats the reserved owner's quota."""

from __future__ import annotations

from gpudeck.services.queue.plan.backfill import may_backfill, quota_delays
from gpudeck.services.queue.plan.model import Dev, Holding, Policy, Quota, Reservation, Waiting
from gpudeck.services.queue.plan.state import DeviceState

NOW = 1000.0
DEVS = [Dev("vm", f"u{i}", i) for i in range(2)]
RESERVED = Reservation(job_id=9, at=NOW + 100, devices=frozenset({("vm", "u0")}))


def test_a_job_that_ends_before_the_reservation_or_uses_other_devices_backfills() -> None:
    assert may_backfill(Policy(), RESERVED, NOW + 50, [DEVS[0]])  # ends first
    assert may_backfill(Policy(), RESERVED, NOW + 500, [DEVS[1]])  # other devices
    assert not may_backfill(Policy(), RESERVED, NOW + 500, [DEVS[0]])  # would delay it


def test_backfill_off_starts_nothing_behind_the_reservation() -> None:
    assert not may_backfill(Policy(backfill=False), RESERVED, NOW + 1, [DEVS[1]])


def _job(job_id: int, owner: str, world_size: int) -> Waiting:
    return Waiting(job_id, owner, "vm", world_size, submitted_at=NOW, time_limit_s=60.0)


def test_backfilling_the_reserved_owners_job_must_leave_room_in_their_quota() -> None:
    state = DeviceState(DEVS, [Holding(5, "ann", (("vm", "u1"),), NOW + 60)], NOW)
    quotas = {"ann": Quota(max_devices=2)}
    first = _job(9, "ann", 1)
    assert quota_delays(state, quotas, _job(2, "ann", 1), first)  # 1 held + 1 + 1 > 2
    assert not quota_delays(state, quotas, _job(2, "bob", 1), first)  # another owner
    assert not quota_delays(state, {}, _job(2, "ann", 1), first)  # no quota
    assert not quota_delays(state, quotas, _job(2, "ann", 1), None)  # no reservation yet
