"""The per-process view of each device, and the job's measured peak memory, with real
processes (a real rank stand-in holding real memory), real Redis and real PostgreSQL."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis
from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker
from telemetry.fake_nvml import GIB, FakeGpu, InstallNvml

from gpudeck.core.config import SimulatedDeviceSpec
from gpudeck.models import Job, JobStatus
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry import stream
from gpudeck.telemetry.nvml import NvmlProvider
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.simulated import SimulatedProvider

HELD_BYTES = 96 * 1024**2
HOLDER = f"b = bytearray({HELD_BYTES}); import sys; print('ready', flush=True); sys.stdin.read()"


@pytest.fixture
def rank_process() -> Iterator[subprocess.Popen[str]]:
    """A process that has touched HELD_BYTES of memory, as a rank would, until stdin closes."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    yield process
    assert process.stdin is not None
    process.stdin.close()
    process.wait(10)


def test_simulated_devices_list_the_ranks_and_the_job_gets_their_peak_memory(
    redis_client: redis.Redis, session_factory: sessionmaker[Session], db: Session,
    devices: str, rank_process: subprocess.Popen[str],
) -> None:  # fmt: skip
    job = make_job(db, devices=[3], status=JobStatus.running)
    stream.register_rank_pid(redis_client, TEST_NODE, rank_process.pid, job.id, 0)
    provider = SimulatedProvider(SimulatedDeviceSpec.parse("8x80GiB"), TEST_NODE)
    sampler = Sampler(
        provider, node=TEST_NODE, redis_client=redis_client,
        store=DatabaseSamplerStore(session_factory),
    )  # fmt: skip
    sample = sampler.tick()

    [process] = sample.devices[3].processes
    assert (process.pid, process.job_id, process.rank, process.managed) == (
        rank_process.pid, job.id, 0, True,
    )  # fmt: skip
    assert process.user == getpass.getuser()
    assert process.command is not None and "bytearray" in process.command
    assert process.host_peak_rss_bytes is not None and process.host_peak_rss_bytes > HELD_BYTES
    assert sample.devices[2].processes == []

    db.expire_all()
    peak = db.get(Job, job.id).peak_memory_bytes  # type: ignore[union-attr]
    assert peak == process.host_peak_rss_bytes
    # A lower figure later (a new job's accounting, a restarted sampler) never lowers the peak.
    DatabaseSamplerStore(session_factory).record_peaks({job.id: 1})
    db.expire_all()
    assert db.get(Job, job.id).peak_memory_bytes == peak  # type: ignore[union-attr]


def test_nvml_processes_are_named_and_external_ones_flagged(
    redis_client: redis.Redis, session_factory: sessionmaker[Session], db: Session,
    devices: str, rank_process: subprocess.Popen[str], fake_nvml: InstallNvml,
) -> None:  # fmt: skip
    job = make_job(db, devices=[0], status=JobStatus.running)
    stream.register_rank_pid(redis_client, TEST_NODE, rank_process.pid, job.id, 0, "sae")
    outsider = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        uuid = job.allocations[0].gpu_uuid  # the job's device, now read through NVML
        fake_nvml([FakeGpu(uuid=uuid, compute=[(rank_process.pid, 3 * GIB), (outsider.pid, GIB)])])
        sampler = Sampler(
            NvmlProvider(), node=TEST_NODE, redis_client=redis_client,
            store=DatabaseSamplerStore(session_factory),
        )  # fmt: skip
        [device] = sampler.tick().devices
    finally:
        outsider.kill()
        outsider.wait()
    ours, theirs = sorted(device.processes, key=lambda p: p.pid != rank_process.pid)
    assert (ours.job_id, ours.rank, ours.used_memory_bytes) == (job.id, 0, 3 * GIB)
    assert (theirs.managed, theirs.job_id, theirs.used_memory_bytes) == (False, None, GIB)
    assert theirs.command is not None and "time.sleep(60)" in theirs.command
    # A rank reads as its job, kind and rank; another program by its name and arguments, the
    # interpreter's directory left to the whole command line (the list's hover).
    assert (ours.kind, ours.rank) == ("sae", 0)
    interpreter = os.path.basename(sys.executable)
    assert theirs.program == f"{interpreter} -c import time; time.sleep(60)"
    assert theirs.command == f"{sys.executable} -c import time; time.sleep(60)"
    assert theirs.kind is None
    db.expire_all()
    # On GPUs the peak is NVML's per-process memory of the job's ranks.
    peak = db.execute(text("SELECT peak_memory_bytes FROM jobs WHERE id = :i"), {"i": job.id})
    assert peak.scalar_one() == 3 * GIB
