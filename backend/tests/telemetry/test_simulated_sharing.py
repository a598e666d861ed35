"""Simulated devices shared by several jobs list each job's real processes with the memory they
hold, as NVML lists a GPU's processes with their usedGpuMemory."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.telemetry.provider import Placement, SampleContext
from gpudeck.telemetry.simulated import SimulatedProvider, process_memory_bytes, sharing_processes
from gpudeck.telemetry.stream import ManagedPid

GIB = 1024**3
MIB = 1024**2
SHARING, OTHER, EXCLUSIVE = 31, 32, 33
# A process with one child, as a rank with a DataLoader worker.
PARENT = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def families() -> Iterator[list[psutil.Process]]:
    started: list[psutil.Process] = []
    yield started
    for parent in started:
        for p in [*parent.children(recursive=True), parent]:
            p.kill()
    psutil.wait_procs(started)


def start_family(started: list[psutil.Process]) -> tuple[int, int]:
    """A parent and its child, both running: (parent pid, child pid)."""
    parent = psutil.Process(subprocess.Popen([sys.executable, "-c", PARENT]).pid)
    started.append(parent)
    deadline = time.monotonic() + 10
    while not parent.children():
        assert time.monotonic() < deadline, "the child did not start"
        time.sleep(0.01)
    return parent.pid, parent.children()[0].pid


def test_a_shared_device_lists_every_process_of_each_placed_job_with_its_memory(
    families: list[psutil.Process],
) -> None:
    rank, rank_child = start_family(families)
    other, other_child = start_family(families)
    guard, guard_child = start_family(families)
    declared = {rank: 3 * GIB, rank_child: GIB, other: 2 * GIB, other_child: 512 * MIB}
    listed_bytes = sum(declared.values())
    declared |= {guard: GIB, guard_child: GIB}  # what it would add, were it listed
    sim = SimulatedProvider(SimulatedDeviceSpec.parse("2x80GiB"), "n1", memory_bytes=declared.get)
    shared, whole = sim.inventory()
    context = SampleContext(
        managed_pids={
            rank: ManagedPid(SHARING, 0, "sae"),
            other: ManagedPid(OTHER, 0, "script"),
            # A job's guard (no rank): its family holds the job's ranks on every device, so it
            # is never listed for one device, and a job with no rank registered lists nothing.
            guard: ManagedPid(OTHER + 1, None, "script"),
        },
        placements={whole.uuid: Placement(EXCLUSIVE, 0, "running", 10 * GIB)},
        shared_placements={
            shared.uuid: [
                Placement(SHARING, 0, "running", None),
                Placement(OTHER, 0, "running", None),
                Placement(OTHER + 1, 0, "running", None),
                Placement(EXCLUSIVE + 1, 0, "queued", None),  # holds nothing yet
            ]
        },
    )
    first, second = sim.read(context)
    listed = {(p.pid, p.job_id, p.rank, p.used_memory_bytes) for p in first.processes}
    assert listed == {
        (rank, SHARING, 0, 3 * GIB),
        (rank_child, SHARING, None, GIB),
        (other, OTHER, 0, 2 * GIB),
        (other_child, OTHER, None, 512 * MIB),
    }
    assert first.memory_used_bytes == listed_bytes
    assert first.memory_free_bytes == 80 * GIB - listed_bytes
    assert second.memory_used_bytes == 10 * GIB  # an exclusive job reads its estimate, as before


def test_a_process_that_ended_is_left_out(families: list[psutil.Process]) -> None:
    rank, _ = start_family(families)
    registered = {(SHARING, 0): (rank, ManagedPid(SHARING, 0, "sae"))}
    placed = [Placement(SHARING, 0, "running", None)]
    assert len(sharing_processes(placed, registered, lambda pid: GIB)) == 2
    assert sharing_processes(placed, registered, lambda pid: None) == []


def test_a_process_reads_its_real_memory(families: list[psutil.Process]) -> None:
    rank, _ = start_family(families)
    held = process_memory_bytes(rank)
    assert held is not None and 0 < held <= psutil.Process(rank).memory_info().rss
