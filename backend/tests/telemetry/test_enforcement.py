"""The sampler holds sharing jobs to their reservations, with real processes: the one over its
reservation is killed (with its children) within 2 samples and its cause published; its
neighbour on the same device, and an exclusive job, go on."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import psutil
import pytest
import redis
from harness import TEST_NODE
from redis.backoff import NoBackoff
from redis.retry import Retry
from telemetry.fake_nvml import GIB, FakeGpu, InstallNvml

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.telemetry import stream
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.enforce import (
    enforce,
    kill_job_processes,
    memory_kill_cause,
    memory_kill_key,
)
from gpudeck.telemetry.nvml import NvmlProvider
from gpudeck.telemetry.provider import Placement, Provider
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.simulated import SimulatedProvider
from gpudeck.telemetry.watchdog import KillDecision

MIB = 1024**2
RESERVED = 128 * MIB
GROW = 256 * MIB
JOB, NEIGHBOUR, EXCLUSIVE = 21, 22, 23

# Holds what it is told to allocate (bytes written, so the pages are real), with a child of its
# own that does nothing: a job's process and its descendant, as a rank and a DataLoader worker.
GROWER = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
held = []
for line in sys.stdin:
    held.append(b"\\x01" * int(line))
    print("grown", flush=True)
"""


@dataclass
class Sharing:
    """The sampler's SharingSource, as the database side of sharing will provide it."""

    reserved: dict[int, int]
    placed: dict[str, list[Placement]] = field(default_factory=dict)

    def reservations(self, node: str) -> Mapping[int, int]:
        return self.reserved

    def shared_placements(self, node: str) -> Mapping[str, Sequence[Placement]]:
        return self.placed


class NoDatabase:
    def placements(self, node: str) -> Mapping[str, Placement]:
        return {}

    def save_inventory(self, node: str, source: str, devices: Sequence[DeviceInfo]) -> None:
        pass

    def record_peaks(self, peaks: Mapping[int, int]) -> None:
        pass

    def record_rank_peaks(self, peaks: Mapping[tuple[int, int], int]) -> None:
        pass


@dataclass
class Grower:
    process: subprocess.Popen[str]
    child_pid: int

    def grow(self, size: int) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{size}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "grown"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


@pytest.fixture
def growers() -> Iterator[list[Grower]]:
    started: list[Grower] = []
    yield started
    for g in started:
        for pid in (g.process.pid, g.child_pid):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
        g.process.wait()


def start_job_process(r: redis.Redis, growers: list[Grower], job_id: int) -> Grower:
    process = subprocess.Popen(
        [sys.executable, "-c", GROWER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    grower = Grower(process, int(process.stdout.readline()))
    growers.append(grower)
    stream.register_rank_pid(r, TEST_NODE, process.pid, job_id, 0, "script")
    return grower


def sampler(r: redis.Redis, provider: Provider, sharing: Sharing) -> Sampler:
    return Sampler(provider, node=TEST_NODE, redis_client=r, store=NoDatabase(), sharing=sharing)


def ended(pid: int) -> bool:
    """Gone, or a zombie its new parent has not reaped yet (it runs no more either way)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def assert_killed(grower: Grower) -> None:
    """The job's process died of SIGKILL, and its child with it."""
    assert grower.process.wait(timeout=10) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while not ended(grower.child_pid):
        assert time.monotonic() < deadline, "the killed process's child still runs"
        time.sleep(0.01)


def test_two_jobs_share_a_simulated_device_the_one_past_its_reservation_dies_alone(
    redis_client: redis.Redis, growers: list[Grower]
) -> None:
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("2x80GiB"), TEST_NODE)
    shared_uuid = provider.inventory()[0].uuid
    greedy = start_job_process(redis_client, growers, JOB)
    neighbour = start_job_process(redis_client, growers, NEIGHBOUR)
    sharing = Sharing(
        reserved={JOB: RESERVED, NEIGHBOUR: RESERVED},
        placed={
            shared_uuid: [
                Placement(JOB, 0, "running", None),
                Placement(NEIGHBOUR, 0, "running", None),
            ]
        },
    )
    s = sampler(redis_client, provider, sharing)

    first = s.tick()
    listed = {p.pid: p.job_id for p in first.devices[0].processes}
    assert listed == {
        greedy.process.pid: JOB,
        greedy.child_pid: JOB,
        neighbour.process.pid: NEIGHBOUR,
        neighbour.child_pid: NEIGHBOUR,
    }
    used = [p.used_memory_bytes or 0 for p in first.devices[0].processes]
    assert first.devices[0].memory_used_bytes == sum(used) and first.devices[1].processes == []

    greedy.grow(GROW)
    s.tick()
    assert greedy.alive  # one sample over is forgiven
    s.tick()
    assert_killed(greedy)
    assert neighbour.alive and psutil.Process(neighbour.child_pid).is_running()

    cause = memory_kill_cause(redis_client, JOB)
    assert cause is not None
    match = re.fullmatch(rf"used (\d+) MiB of its 128 MiB reservation on {TEST_NODE}/0", cause)
    assert match is not None and int(match[1]) * MIB >= GROW
    assert memory_kill_cause(redis_client, NEIGHBOUR) is None
    assert redis_client.ttl(memory_kill_key(JOB)) > 0  # kept for the worker, not forever

    for _ in range(3):  # the neighbour, within its reservation, is never touched
        s.tick()
    assert neighbour.alive


def test_nvml_per_process_memory_kills_the_job_over_its_reservation_and_no_other(
    fake_nvml: InstallNvml, redis_client: redis.Redis, growers: list[Grower]
) -> None:
    greedy = start_job_process(redis_client, growers, JOB)
    neighbour = start_job_process(redis_client, growers, NEIGHBOUR)
    exclusive = start_job_process(redis_client, growers, EXCLUSIVE)
    shared = FakeGpu(
        uuid="GPU-0",
        compute=[(greedy.process.pid, 8 * GIB), (neighbour.process.pid, 7 * GIB)],
    )
    whole = FakeGpu(uuid="GPU-1", compute=[(exclusive.process.pid, 79 * GIB)])
    fake_nvml([shared, whole])
    s = sampler(redis_client, NvmlProvider(), Sharing(reserved={JOB: 8 * GIB, NEIGHBOUR: 8 * GIB}))

    s.tick()
    shared.compute = [(greedy.process.pid, int(9.3 * GIB)), (neighbour.process.pid, 7 * GIB)]
    # Read again at once, not after the 5 s process interval: while a job shares a device the
    # lists are read on every sample, so the growth counts from this sample on.
    s.tick()
    assert greedy.alive
    s.tick()
    assert_killed(greedy)
    assert neighbour.alive and exclusive.alive
    assert memory_kill_cause(redis_client, JOB) == (
        f"used 9.3 GiB of its 8.0 GiB reservation on {TEST_NODE}/0"
    )


def test_without_reservations_no_process_is_judged(
    fake_nvml: InstallNvml, redis_client: redis.Redis, growers: list[Grower]
) -> None:
    exclusive = start_job_process(redis_client, growers, EXCLUSIVE)
    fake_nvml([FakeGpu(uuid="GPU-0", compute=[(exclusive.process.pid, 79 * GIB)])])
    s = Sampler(NvmlProvider(), node=TEST_NODE, redis_client=redis_client, store=NoDatabase())
    for _ in range(3):
        s.tick()
    assert exclusive.alive and memory_kill_cause(redis_client, EXCLUSIVE) is None


def test_a_kill_does_not_wait_on_redis(redis_client: redis.Redis, growers: list[Grower]) -> None:
    greedy = start_job_process(redis_client, growers, JOB)
    managed = stream.managed_pids(redis_client, TEST_NODE)
    unreachable = redis.Redis(host="127.0.0.1", port=1, retry=Retry(NoBackoff(), 0))
    decision = KillDecision(JOB, f"{TEST_NODE}/0", (greedy.process.pid,), 9 * GIB, 8 * GIB)
    enforce(unreachable, decision, managed)
    assert_killed(greedy)


def test_a_pid_no_longer_the_jobs_is_never_signalled(
    redis_client: redis.Redis, growers: list[Grower]
) -> None:
    """Decided on one sample, killed after it: a PID that is by then another job's is spared."""
    neighbour = start_job_process(redis_client, growers, NEIGHBOUR)
    managed = stream.managed_pids(redis_client, TEST_NODE)
    decision = KillDecision(JOB, f"{TEST_NODE}/0", (neighbour.process.pid,), 9 * GIB, 8 * GIB)
    assert kill_job_processes(decision, managed) == []
    assert neighbour.alive
