from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.telemetry.provider import Placement, SampleContext
from gpudeck.telemetry.simulated import (
    DEFAULT_JOB_FRACTION,
    IDLE_POWER_WATTS,
    SimulatedProvider,
    process_cpu_seconds,
    simulated_uuid,
)
from gpudeck.telemetry.stream import ManagedPid

GIB = 1024**3
SPEC = SimulatedDeviceSpec.parse('4 x 80 GiB "Simulated H100"')


def provider(now: float = 1000.0) -> SimulatedProvider:
    return SimulatedProvider(SPEC, "n1", interval_s=1.0, clock=lambda: now)


class Clock:
    """Wall time a test moves on by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_memory_and_utilization_follow_the_jobs_placed() -> None:
    uuids = [simulated_uuid("n1", i) for i in range(4)]
    placements = {
        uuids[0]: Placement(job_id=5, rank=0, status="running", memory_bytes=30 * GIB),
        uuids[1]: Placement(job_id=5, rank=1, status="running", memory_bytes=None),
        uuids[2]: Placement(job_id=6, rank=0, status="queued", memory_bytes=30 * GIB),
    }
    managed = {4242: ManagedPid(5, 0, "sae")}
    clock = Clock()
    cpu = {4242: 10.0}  # the rank's CPU seconds: 0.9 s of work in the next second
    sim = SimulatedProvider(SPEC, "n1", clock=clock, cpu_seconds=cpu.get)
    sim.read(SampleContext(managed, placements))
    clock.now, cpu[4242] = 1001.0, 10.9
    d0, d1, d2, d3 = sim.read(SampleContext(managed, placements))
    assert d0.name == "Simulated H100" and d0.memory_total_bytes == 80 * GIB
    assert d0.memory_used_bytes == 30 * GIB and d0.memory_free_bytes == 50 * GIB
    assert d1.memory_used_bytes == int(80 * GIB * DEFAULT_JOB_FRACTION)
    assert d0.utilization_gpu_pct == 90
    assert d1.utilization_gpu_pct == 0  # no process to measure: nothing is invented
    assert [(p.pid, p.job_id, p.kind, p.managed) for p in d0.processes] == [(4242, 5, "sae", True)]
    assert d1.processes == []  # rank 1's pid is not registered
    for idle in (d2, d3):  # queued: nothing runs yet
        assert idle.memory_used_bytes == 0 and idle.utilization_gpu_pct == 0


def test_readings_are_deterministic_per_tick() -> None:
    ctx = SampleContext(placements={simulated_uuid("n1", 0): Placement(1, 0, "running", 8 * GIB)})
    assert provider(1000.2).read(ctx) == provider(1000.7).read(ctx)  # same tick
    assert [d.uuid for d in provider().read(ctx)] == [simulated_uuid("n1", i) for i in range(4)]


@given(
    estimate=st.one_of(st.none(), st.integers(min_value=0, max_value=200 * GIB)),
    status=st.sampled_from(["queued", "starting", "running"]),
    now=st.floats(min_value=0, max_value=1e10, allow_nan=False),
)
def test_readings_stay_physical(estimate: int | None, status: str, now: float) -> None:
    ctx = SampleContext(placements={simulated_uuid("n1", 0): Placement(1, 0, status, estimate)})
    for d in provider(now).read(ctx):
        assert d.memory_used_bytes is not None and d.memory_free_bytes is not None
        assert 0 <= d.memory_used_bytes <= d.memory_total_bytes
        assert d.memory_used_bytes + d.memory_free_bytes == d.memory_total_bytes
        assert 0 <= (d.utilization_gpu_pct or 0) <= 100
        assert d.power_watts is not None and 0 < d.power_watts <= (d.power_limit_watts or 0)


def test_a_rank_reads_busy_while_it_computes_and_idle_while_it_sleeps() -> None:
    clock = Clock()
    cpu = {77: 50.0}
    sim = SimulatedProvider(SPEC, "n1", clock=clock, cpu_seconds=cpu.get)
    ctx = SampleContext(
        {77: ManagedPid(3, 0, "script")}, {simulated_uuid("n1", 0): Placement(3, 0, "running", GIB)}
    )
    first = sim.read(ctx)[0]
    assert (
        first.utilization_gpu_pct == 0 and first.power_watts == IDLE_POWER_WATTS
    )  # nothing measured yet
    readings = []
    for work_s in (0.0, 2.0, 1.0):  # asleep, then busier than one core, then half a core
        clock.now += 2.0
        cpu[77] += work_s
        readings.append(sim.read(ctx)[0])
    assert [r.utilization_gpu_pct for r in readings] == [0, 100, 50]
    asleep, flat_out, half = readings
    assert asleep.power_watts == IDLE_POWER_WATTS
    assert asleep.power_watts < half.power_watts < flat_out.power_watts <= SPEC_POWER_LIMIT
    assert (asleep.sm_clock_mhz or 0) < (half.sm_clock_mhz or 0) < (flat_out.sm_clock_mhz or 0)


SPEC_POWER_LIMIT = 700.0


def _started(code: str) -> subprocess.Popen[str]:
    """A Python process past its start-up (which itself takes CPU): it has said so on stdout."""
    process = subprocess.Popen(
        [sys.executable, "-c", f"print('ready', flush=True)\n{code}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


@pytest.fixture
def sleeper_and_spinner() -> Iterator[tuple[int, int]]:
    sleeper = _started("import time; time.sleep(60)")
    spinner = _started("while True: pass")
    try:
        yield sleeper.pid, spinner.pid
    finally:
        for process in (sleeper, spinner):
            process.kill()
            process.wait()


def test_real_processes_a_sleeping_script_reads_idle_a_spinning_one_busy(
    sleeper_and_spinner: tuple[int, int],
) -> None:
    """The default reader against two real processes: psutil's CPU times, not a made-up figure."""
    sleeper, spinner = sleeper_and_spinner
    sim = SimulatedProvider(SPEC, "n1", interval_s=0.1)
    uuids = [simulated_uuid("n1", i) for i in range(2)]
    ctx = SampleContext(
        {sleeper: ManagedPid(1, 0, "script"), spinner: ManagedPid(2, 0, "script")},
        {uuids[0]: Placement(1, 0, "running", GIB), uuids[1]: Placement(2, 0, "running", GIB)},
    )
    sim.read(ctx)
    time.sleep(0.5)  # the interval measured over, as the sampler's second between reads
    asleep, spinning = sim.read(ctx)[:2]
    assert asleep.utilization_gpu_pct == 0 and asleep.power_watts == IDLE_POWER_WATTS
    # on a shared two-core machine the spinner may not get a whole core; it gets some
    assert spinning.utilization_gpu_pct is not None and spinning.utilization_gpu_pct >= 10
    assert process_cpu_seconds(2**22 + 12345) is None  # no such process: nothing to report
