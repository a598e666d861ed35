"""The pass's first step: what needs no device settles a job before any device is looked at."""

from __future__ import annotations

from gpudeck.services.queue.plan.decide import Pass, gate
from gpudeck.services.queue.plan.model import Dev, Holding, Quota, Waiting
from gpudeck.services.queue.plan.state import DeviceState
from gpudeck.services.queue.plan.sweep_slots import sweep_slots

NOW = 1000.0


def _pass(holding: tuple[Holding, ...] = (), **quotas: Quota) -> Pass:
    devices = [Dev("vm", f"u{i}", i) for i in range(4)]
    return Pass(DeviceState(devices, holding, NOW), NOW, quotas=quotas)


def _job(job_id: int = 1, world_size: int = 1, **extra: object) -> Waiting:
    fields = {"owner": "ann", "node": "vm", "submitted_at": NOW, "time_limit_s": 60.0, **extra}
    return Waiting(id=job_id, world_size=world_size, **fields)  # type: ignore[arg-type]


def test_a_job_free_of_every_gate_goes_on_with_its_queue_position() -> None:
    p = _pass()
    assert gate(p, _job()) is True
    assert p.position == 1 and not p.out.infos and not p.out.cancels


def test_a_failed_dependency_cancels_the_job_and_takes_no_queue_position() -> None:
    p = _pass()
    assert gate(p, _job(dependencies={7: "succeeded", 8: "timeout"})) is False
    assert p.out.cancels == [(1, "dependency job 8 ended timeout")]
    assert p.position == 0


def test_held_and_unfinished_dependencies_wait_with_their_reason() -> None:
    p = _pass()
    assert gate(p, _job(1, held=True)) is False
    assert gate(p, _job(2, dependencies={7: "running"})) is False
    assert (p.out.infos[1].reason_code, p.out.infos[1].position) == ("held", 1)
    assert p.out.infos[2].reason_code == "dependency"
    assert p.out.infos[2].reason == "waiting for job 7 to succeed"


def test_a_sweep_at_its_cap_waits_until_a_member_ends() -> None:
    running = Holding(5, "ann", (("vm", "u0"),), NOW + 60, sweep=3)
    ended = Holding(6, "ann", (("vm", "u1"),), NOW + 60, sweep=3, ended=True)
    p = _pass((running, ended))
    assert gate(p, _job(1, sweep=3, sweep_max_parallel=1)) is False
    assert p.out.infos[1].reason == "sweep 3: 1 members running (max_parallel 1)"
    assert gate(p, _job(2, sweep=3, sweep_max_parallel=2)) is True  # the ended one counts no more


def test_a_job_over_its_owners_device_quota_waits_naming_the_figures() -> None:
    holding = Holding(5, "ann", (("vm", "u0"), ("vm", "u1")), NOW + 60)
    p = _pass((holding,), ann=Quota(max_devices=3))
    assert gate(p, _job(1, world_size=2)) is False
    assert p.out.infos[1].reason == (
        "quota: ann may hold 3 devices at once, holds 2, this job needs 2"
    )
    assert gate(p, _job(2, world_size=1)) is True


def test_a_sweeps_waiting_members_start_as_its_running_ones_end_at_their_rates() -> None:
    """max_parallel 2: members end at +100 and +300 (measured); each member runs 400 s at the
    measured rate, so the 3rd waiting one takes the slot the 1st frees at +100 + 400."""
    running = (
        Holding(5, "ann", (("vm", "u0"),), NOW + 300, sweep=3, estimated=True, run_s=400.0),
        Holding(6, "ann", (("vm", "u1"),), NOW + 100, sweep=3, estimated=True, run_s=400.0),
    )
    p = _pass(running)
    p.slots = sweep_slots(running)
    for job_id in (1, 2, 3):
        assert gate(p, _job(job_id, sweep=3, sweep_max_parallel=2, time_limit_s=3600.0)) is False
    starts = [p.out.infos[j].expected_start for j in (1, 2, 3)]
    assert starts == [NOW + 100, NOW + 300, NOW + 500]
    assert [p.out.infos[j].position for j in (1, 2, 3)] == [1, 2, 3]
    assert not any(p.out.infos[j].from_time_limits for j in (1, 2, 3))


def test_without_a_measured_rate_a_sweeps_members_count_time_limits_and_say_so() -> None:
    running = (Holding(5, "ann", (("vm", "u0"),), NOW + 60, sweep=3),)  # its time limit
    p = _pass(running)
    p.slots = sweep_slots(running)
    assert gate(p, _job(1, sweep=3, sweep_max_parallel=1, time_limit_s=60.0)) is False
    assert gate(p, _job(2, sweep=3, sweep_max_parallel=1, time_limit_s=60.0)) is False
    assert [p.out.infos[j].expected_start for j in (1, 2)] == [NOW + 60, NOW + 120]
    assert p.out.infos[2].from_time_limits
