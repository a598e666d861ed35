"""The NVML adapter against a fake libnvidia-ml under the real pynvml (see fake_nvml.py)."""

from __future__ import annotations

import logging
import os

import pynvml
import pytest
from telemetry.fake_nvml import GIB, FakeGpu, InstallNvml

from gpudeck.core.config import Settings
from gpudeck.telemetry import nvml
from gpudeck.telemetry.factory import make_provider
from gpudeck.telemetry.provider import SampleContext
from gpudeck.telemetry.simulated import SimulatedProvider
from gpudeck.telemetry.stream import ManagedPid

MIB = 1024**2
NOT_A_PID = 2**22 + 17  # above pid_max's default: never a live process here


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def two_gpus() -> list[FakeGpu]:
    busy = FakeGpu(
        uuid="GPU-aaaa",
        memory_used=30 * GIB,
        util_gpu=97,
        util_memory=41,
        temperature=71,
        power_mw=612_345,
        sm_clock=1980,
        compute=[(os.getpid(), 20 * GIB), (NOT_A_PID, 10 * GIB)],
    )
    return [busy, FakeGpu(uuid="GPU-bbbb", name="NVIDIA A100-SXM4-40GB", memory_total=40 * GIB)]


def test_one_snapshot_reads_every_field_in_its_unit(fake_nvml: InstallNvml) -> None:
    fake_nvml(two_gpus())
    provider = nvml.NvmlProvider()
    managed = {os.getpid(): ManagedPid(7, 0, "sae")}
    a, b = provider.read(SampleContext(managed_pids=managed))

    assert (a.uuid, a.index, a.name) == ("GPU-aaaa", 0, "NVIDIA H100 80GB HBM3")
    assert a.memory_total_bytes == 80 * GIB
    assert a.memory_used_bytes == 30 * GIB  # v2: without the driver's reservation
    assert a.memory_free_bytes == 80 * GIB - 30 * GIB - 512 * MIB
    assert (a.utilization_gpu_pct, a.utilization_memory_pct) == (97, 41)
    assert a.temperature_c == 71
    assert a.power_watts == pytest.approx(612.345)
    assert a.power_limit_watts == pytest.approx(700.0)
    assert a.sm_clock_mhz == 1980
    ours, theirs = a.processes
    assert (ours.pid, ours.used_memory_bytes, ours.managed, ours.job_id) == (
        os.getpid(),
        20 * GIB,
        True,
        7,
    )
    assert (theirs.pid, theirs.managed, theirs.job_id) == (NOT_A_PID, False, None)
    assert b.index == 1 and b.memory_total_bytes == 40 * GIB and b.processes == []
    assert [d.uuid for d in provider.inventory()] == ["GPU-aaaa", "GPU-bbbb"]
    assert provider.source == "nvml"
    provider.close()


def test_unsupported_fields_become_none_and_are_logged_once(
    fake_nvml: InstallNvml, caplog: pytest.LogCaptureFixture
) -> None:
    gpus = two_gpus()
    gpus[1].unsupported = {
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
    }
    fake_nvml(gpus)
    provider = nvml.NvmlProvider(process_interval_s=0)
    with caplog.at_level(logging.WARNING, logger="gpudeck.telemetry.nvml"):
        for _ in range(3):
            _, b = provider.read(SampleContext())
    assert b.power_watts is None and b.temperature_c is None
    assert b.utilization_gpu_pct is None and b.utilization_memory_pct is None
    assert b.power_limit_watts == 700.0 and b.memory_used_bytes == 0 and not b.lost
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 4, warnings  # one per field, not one per sample
    assert all("GPU-bbbb" in w and "Not Supported" in w for w in warnings)


def test_a_gpu_lost_mid_run_is_reported_lost_and_the_others_keep_sampling(
    fake_nvml: InstallNvml,
) -> None:
    gpus = two_gpus()
    lib = fake_nvml(gpus)
    provider = nvml.NvmlProvider()
    assert not any(d.lost for d in provider.read(SampleContext()))

    gpus[0].lost = True  # falls off the bus
    a, b = provider.read(SampleContext())
    assert a.lost and a.uuid == "GPU-aaaa" and a.memory_used_bytes is None and a.processes == []
    assert a.memory_total_bytes == 80 * GIB  # known from before, kept for the inventory
    assert not b.lost and b.memory_total_bytes == 40 * GIB

    before = sum(lib.calls.values())
    a, _ = provider.read(SampleContext())
    assert a.lost
    # The lost GPU is not asked again (each call would fail); GPU 1 costs its 6 readings.
    assert sum(lib.calls.values()) - before == 6


def test_processes_are_listed_at_a_lower_rate_than_the_readings(fake_nvml: InstallNvml) -> None:
    lib = fake_nvml(two_gpus())
    clock = Clock()
    provider = nvml.NvmlProvider(process_interval_s=5.0, clock=clock)
    for _ in range(10):  # ten samples, one second apart
        provider.read(SampleContext())
        clock.now += 1.0
    assert lib.calls["nvmlDeviceGetUtilizationRates"] == 20
    # GPU 0 has processes: a sizing call and a fetch, at t=0 and t=5, for two devices.
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 2 * (2 + 1)


def test_older_drivers_fall_back_to_v1_memory_and_v2_process_lists(fake_nvml: InstallNvml) -> None:
    gpus = two_gpus()
    gpus[0].compute = [(NOT_A_PID, None)]  # usedGpuMemory not available (as under WDDM)
    fake_nvml(
        gpus,
        missing={
            "nvmlDeviceGetMemoryInfo_v2",
            "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetGraphicsRunningProcesses_v3",
        },
    )
    a, _ = nvml.NvmlProvider().read(SampleContext())
    assert a.memory_used_bytes == 30 * GIB + 512 * MIB  # v1 counts the reservation as used
    assert a.memory_free_bytes == 80 * GIB - 30 * GIB - 512 * MIB
    assert [(p.pid, p.used_memory_bytes) for p in a.processes] == [(NOT_A_PID, None)]


def test_the_fake_speaks_pynvml_error_classes(fake_nvml: InstallNvml) -> None:
    gpus = two_gpus()
    gpus[0].unsupported = {"nvmlDeviceGetPowerUsage"}
    fake_nvml(gpus)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported) as info:
        pynvml.nvmlDeviceGetPowerUsage(handle)
    assert info.value.value == pynvml.NVML_ERROR_NOT_SUPPORTED == 3
    gpus[0].lost = True
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        pynvml.nvmlDeviceGetUtilizationRates(handle)
    assert isinstance(pynvml.nvmlDeviceGetMemoryInfo, object)


def test_no_library_means_unavailable_never_an_exception(no_nvml_library: None) -> None:
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        pynvml.nvmlInit()
    assert nvml.is_available() is False
    with pytest.raises(nvml.NvmlUnavailable):
        nvml.NvmlProvider()
    auto = Settings(device_provider="auto", simulated_devices="2x24GiB", node_name="n")
    assert isinstance(make_provider(auto), SimulatedProvider)
    with pytest.raises(nvml.NvmlUnavailable):
        make_provider(auto.model_copy(update={"device_provider": "nvml"}))


def test_is_available_on_this_machine_does_not_raise() -> None:
    assert nvml.is_available() in (True, False)
