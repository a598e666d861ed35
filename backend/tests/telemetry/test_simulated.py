from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.telemetry.provider import Placement, SampleContext
from gpudeck.telemetry.simulated import (
    DEFAULT_JOB_FRACTION,
    SimulatedProvider,
    simulated_uuid,
)
from gpudeck.telemetry.stream import ManagedPid

GIB = 1024**3
SPEC = SimulatedDeviceSpec.parse('4 x 80 GiB "Simulated H100"')


def provider(now: float = 1000.0) -> SimulatedProvider:
    return SimulatedProvider(SPEC, "n1", interval_s=1.0, clock=lambda: now)


def test_memory_and_utilization_follow_the_jobs_placed() -> None:
    uuids = [simulated_uuid("n1", i) for i in range(4)]
    placements = {
        uuids[0]: Placement(job_id=5, rank=0, status="running", memory_bytes=30 * GIB),
        uuids[1]: Placement(job_id=5, rank=1, status="running", memory_bytes=None),
        uuids[2]: Placement(job_id=6, rank=0, status="queued", memory_bytes=30 * GIB),
    }
    managed = {4242: ManagedPid(5, 0, "sae")}
    d0, d1, d2, d3 = provider().read(SampleContext(managed, placements))
    assert d0.name == "Simulated H100" and d0.memory_total_bytes == 80 * GIB
    assert d0.memory_used_bytes == 30 * GIB and d0.memory_free_bytes == 50 * GIB
    assert d1.memory_used_bytes == int(80 * GIB * DEFAULT_JOB_FRACTION)
    assert d0.utilization_gpu_pct is not None and d0.utilization_gpu_pct >= 70
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
