"""The watchdog's decisions: who runs over a reservation, for how long, and what the cause says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpudeck.telemetry.watchdog import (
    GIB,
    MIB,
    DeviceUse,
    KillDecision,
    ProcessUse,
    Watchdog,
    format_bytes,
)

NODE2 = "node/2"
JOB, NEIGHBOUR, EXCLUSIVE = 11, 12, 13
RESERVED = 8 * GIB


def device(*processes: tuple[int, int | None, int | None], name: str = NODE2) -> DeviceUse:
    return DeviceUse(name, [ProcessUse(pid, used, job) for pid, used, job in processes])


def run(watchdog: Watchdog, *samples: DeviceUse, reservations: dict[int, int]) -> list[list[int]]:
    """The jobs decided at each sample, one device per sample."""
    return [[d.job_id for d in watchdog.observe([s], reservations)] for s in samples]


def test_two_samples_over_kill_with_the_bytes_used_and_reserved_in_the_cause() -> None:
    watchdog = Watchdog()
    over = device((100, int(9.3 * GIB), JOB), (200, 2 * GIB, NEIGHBOUR))
    reservations = {JOB: RESERVED, NEIGHBOUR: RESERVED}
    assert watchdog.observe([over], reservations) == []
    (decision,) = watchdog.observe([over], reservations)
    assert decision == KillDecision(JOB, NODE2, (100,), int(9.3 * GIB), RESERVED)
    assert decision.cause == "used 9.3 GiB of its 8.0 GiB reservation on node/2"


def test_the_tolerance_is_64_mib_or_2_percent_of_the_reservation_whichever_is_larger() -> None:
    watchdog = Watchdog()
    assert watchdog.tolerance_bytes(RESERVED) == int(0.02 * RESERVED)  # 164 MiB
    assert watchdog.tolerance_bytes(GIB) == 64 * MIB
    at_the_edge = device((100, RESERVED + int(0.02 * RESERVED), JOB))
    past_it = device((100, RESERVED + int(0.02 * RESERVED) + 1, JOB))
    assert run(watchdog, at_the_edge, at_the_edge, at_the_edge, reservations={JOB: RESERVED}) == [
        [],
        [],
        [],
    ]
    assert run(watchdog, past_it, past_it, reservations={JOB: RESERVED}) == [[], [JOB]]
    small = device((100, GIB + 64 * MIB + 1, JOB))
    assert run(Watchdog(), small, small, reservations={JOB: GIB}) == [[], [JOB]]


def test_the_tolerance_and_the_samples_are_configurable() -> None:
    strict = Watchdog(samples=3, min_tolerance_bytes=0, tolerance_fraction=0.0)
    over = device((100, RESERVED + 1, JOB))
    assert run(strict, over, over, over, reservations={JOB: RESERVED}) == [[], [], [JOB]]


def test_a_single_spike_is_forgiven_and_dropping_back_resets_the_count() -> None:
    watchdog = Watchdog()
    over, under = device((100, 10 * GIB, JOB)), device((100, 7 * GIB, JOB))
    decided = run(watchdog, over, under, over, under, over, over, reservations={JOB: RESERVED})
    assert decided == [[], [], [], [], [], [JOB]]


def test_a_jobs_processes_on_a_device_are_summed() -> None:
    watchdog = Watchdog()
    # two ranks and a child, each under the reservation, together 9 GiB of 8
    together = device((100, 4 * GIB, JOB), (101, 4 * GIB, JOB), (102, GIB, JOB), (200, GIB, None))
    assert watchdog.observe([together], {JOB: RESERVED}) == []
    (decision,) = watchdog.observe([together], {JOB: RESERVED})
    assert decision.pids == (100, 101, 102) and decision.used_bytes == 9 * GIB


def test_each_device_is_judged_on_its_own() -> None:
    """A reservation is per device: 6 GiB on each of two devices is within 8 GiB on each."""
    watchdog = Watchdog()
    spread = [device((100, 6 * GIB, JOB)), device((101, 6 * GIB, JOB), name="node/3")]
    for _ in range(3):
        assert watchdog.observe(spread, {JOB: RESERVED}) == []


def test_an_exclusive_job_and_external_processes_are_never_judged() -> None:
    watchdog = Watchdog()
    full = device((300, 79 * GIB, EXCLUSIVE), (400, 70 * GIB, None))
    for _ in range(5):
        assert watchdog.observe([full], {JOB: RESERVED}) == []


def test_an_unreported_figure_neither_counts_nor_resets() -> None:
    watchdog = Watchdog()
    over = device((100, 10 * GIB, JOB))
    unknown = device((100, 10 * GIB, JOB), (101, None, JOB))
    assert run(watchdog, unknown, unknown, reservations={JOB: RESERVED}) == [[], []]
    assert run(watchdog, over, unknown, over, reservations={JOB: RESERVED}) == [[], [], [JOB]]


def test_a_job_that_left_the_device_starts_afresh() -> None:
    watchdog = Watchdog()
    over, gone = device((100, 10 * GIB, JOB)), device()
    assert run(watchdog, over, gone, over, over, reservations={JOB: RESERVED}) == [
        [],
        [],
        [],
        [JOB],
    ]


def test_a_decided_job_is_counted_afresh_rather_than_killed_every_sample() -> None:
    watchdog = Watchdog()
    over = device((100, 10 * GIB, JOB))
    assert run(watchdog, *[over] * 5, reservations={JOB: RESERVED}) == [[], [JOB], [], [JOB], []]


def test_sizes_below_a_gib_read_in_mib() -> None:
    assert format_bytes(600 * MIB) == "600 MiB"
    assert format_bytes(8 * GIB) == "8.0 GiB"


@given(
    used=st.lists(st.integers(0, 100 * GIB), min_size=1, max_size=6),
    reserved=st.integers(1, 80 * GIB),
)
def test_never_a_kill_within_the_reservation_and_its_tolerance(
    used: list[int], reserved: int
) -> None:
    watchdog = Watchdog()
    sample = device(*((100, u, JOB) for u in used))
    decisions = [watchdog.observe([sample], {JOB: reserved}) for _ in range(2)]
    over = sum(used) > reserved + watchdog.tolerance_bytes(reserved)
    killed = [KillDecision(JOB, NODE2, (100,) * len(used), sum(used), reserved)]
    assert decisions == ([[], killed] if over else [[], []])
