"""The NVML adapter against the real libnvidia-ml, on the device machine (`pytest -m gpu`).

test_nvml.py checks the adapter's logic under a fake library; these check that the real driver
answers the calls it makes: the same devices as pynvml and CUDA see, every reading present, and
memory and processes that follow what this test process does on GPU 0.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pynvml
import pytest
import torch
from cuda_cases import require_cuda

from gpudeck.core.config import Settings
from gpudeck.telemetry import nvml
from gpudeck.telemetry.factory import make_provider
from gpudeck.telemetry.provider import SampleContext
from gpudeck.telemetry.schema import DeviceSample
from gpudeck.telemetry.stream import ManagedPid

pytestmark = pytest.mark.gpu

GIB = 1024**3
READINGS = (
    "memory_used_bytes",
    "memory_free_bytes",
    "utilization_gpu_pct",
    "utilization_memory_pct",
    "temperature_c",
    "power_watts",
    "power_limit_watts",
    "sm_clock_mhz",
)


@contextmanager
def real_provider() -> Iterator[nvml.NvmlProvider]:
    """process_interval_s=0: every read lists the processes afresh (by default a list is kept
    for PROCESS_INTERVAL_S, and this test's own process must show at once)."""
    assert nvml.is_available(), "NVML does not initialise: no NVIDIA driver on this machine"
    provider = nvml.NvmlProvider(process_interval_s=0)
    try:
        yield provider
    finally:
        provider.close()


def cuda_uuid(index: int) -> str:
    """NVML's name for CUDA device `index` (CUDA's order and visibility may differ from NVML's)."""
    return f"GPU-{torch.cuda.get_device_properties(index).uuid}"


def sample_of(provider: nvml.NvmlProvider, uuid: str, context: SampleContext) -> DeviceSample:
    samples = provider.read(context)
    found = [s for s in samples if s.uuid == uuid]
    assert found, f"{uuid} not among NVML's devices {[s.uuid for s in samples]}"
    return found[0]


def test_auto_picks_nvml_here() -> None:
    settings = Settings(device_provider="auto", simulated_devices="2x24GiB", node_name="n")
    provider = make_provider(settings)
    try:
        chosen = type(provider).__name__
        assert isinstance(provider, nvml.NvmlProvider), f"auto chose {chosen}: no NVML here"
        assert provider.source == "nvml"
    finally:
        provider.close()


def test_inventory_is_pynvml_s_devices_and_cuda_s_memory() -> None:
    require_cuda()
    with real_provider() as provider:
        inventory = provider.inventory()
        assert len(inventory) == pynvml.nvmlDeviceGetCount() >= 1
        for info in inventory:
            handle = pynvml.nvmlDeviceGetHandleByIndex(info.index)
            assert info.uuid == pynvml.nvmlDeviceGetUUID(handle)
            assert info.name == pynvml.nvmlDeviceGetName(handle)
            assert info.memory_total_bytes == pynvml.nvmlDeviceGetMemoryInfo(handle).total
        by_uuid = {info.uuid: info for info in inventory}
        for index in range(torch.cuda.device_count()):
            uuid = cuda_uuid(index)
            assert uuid in by_uuid, f"CUDA device {index} ({uuid}) is not in {list(by_uuid)}"
            handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            reserved = pynvml.nvmlDeviceGetMemoryInfo(handle, pynvml.nvmlMemory_v2).reserved
            # CUDA's total leaves out what the driver reserves; NVML's counts it.
            cuda_total = torch.cuda.get_device_properties(index).total_memory
            gap = by_uuid[uuid].memory_total_bytes - cuda_total
            assert 0 <= gap <= reserved + GIB // 4, (gap, reserved)


def test_every_device_gives_every_reading() -> None:
    with real_provider() as provider:
        inventory = provider.inventory()
        samples = provider.read(SampleContext())
    assert [(s.uuid, s.index, s.name) for s in samples] == [
        (i.uuid, i.index, i.name) for i in inventory
    ]
    for s, info in zip(samples, inventory, strict=True):
        missing = [name for name in READINGS if getattr(s, name) is None]
        assert not missing, f"GPU {s.index} ({s.name}): NVML gave no {missing}"
        assert not s.lost
        assert s.memory_total_bytes == info.memory_total_bytes
        assert s.memory_used_bytes + s.memory_free_bytes <= s.memory_total_bytes
        assert 0 < s.temperature_c < 120
        assert 0 < s.power_watts < 2 * s.power_limit_watts
        assert s.sm_clock_mhz > 0


def test_a_gib_of_ours_on_gpu_0_is_used_memory_and_an_external_process() -> None:
    """No managed pids are passed: to the sampler this process is someone else's, as a user's
    notebook holding a GPU would be; given as a rank's pid, it is that job's."""
    require_cuda()
    cuda0, pid = torch.device("cuda", 0), os.getpid()
    uuid = cuda_uuid(0)
    torch.zeros(1, device=cuda0)  # the CUDA context first: its memory is not the tensor's
    torch.cuda.synchronize(cuda0)
    with real_provider() as provider:
        before = sample_of(provider, uuid, SampleContext())
        block = torch.ones(GIB, dtype=torch.uint8, device=cuda0)
        torch.cuda.synchronize(cuda0)
        after = sample_of(provider, uuid, SampleContext())
        as_rank = sample_of(
            provider, uuid, SampleContext(managed_pids={pid: ManagedPid(7, 0, "sae")})
        )
        del block
    assert before.memory_used_bytes is not None and after.memory_used_bytes is not None
    assert after.memory_used_bytes - before.memory_used_bytes >= GIB
    listed = {p.pid: p for p in after.processes}
    assert pid in listed, f"pid {pid} not among GPU 0's processes {list(listed)}"
    ours = listed[pid]
    assert (ours.managed, ours.job_id, ours.rank) == (False, None, None)
    assert ours.used_memory_bytes is None or ours.used_memory_bytes >= GIB
    assert ours.command is not None and ours.host_peak_rss_bytes
    rank = {p.pid: p for p in as_rank.processes}[pid]
    assert (rank.managed, rank.job_id, rank.rank) == (True, 7, 0)
