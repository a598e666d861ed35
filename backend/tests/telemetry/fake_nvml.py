"""A fake libnvidia-ml.so under the real `pynvml` module.

Rather than imitate nvidia-ml-py's Python surface, this replaces only the C library it loads:
`pynvml.nvmlLib` becomes a `FakeNvmlLib`, whose attributes are the C entry points pynvml looks up
by name (`nvmlDeviceGetMemoryInfo_v2`, `nvmlDeviceGetComputeRunningProcesses_v3`, ...). They take
the same ctypes arguments, fill the same structs (c_nvmlMemory_t, c_nvmlMemory_v2_t,
c_nvmlUtilization_t, c_nvmlProcessInfo_v3_t arrays) and return NVML status codes, so the adapter
meets nvidia-ml-py's real function names, return objects and exception classes (NVMLError
subclasses generated from the codes: NotSupported, GpuIsLost, FunctionNotFound...).
"""

from __future__ import annotations

import ctypes
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml

GIB = 1024**3
InstallNvml = Callable[..., "FakeNvmlLib"]
ProcessList = list[tuple[int, int | None]]  # (pid, used bytes; None = NVML_VALUE_NOT_AVAILABLE)


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    memory_total: int = 80 * GIB
    memory_reserved: int = 512 * 1024**2
    memory_used: int = 0  # excluding the reservation, as the v2 struct reports it
    util_gpu: int = 0
    util_memory: int = 0
    temperature: int = 30
    power_mw: int = 70_000
    power_limit_mw: int = 700_000
    sm_clock: int = 345
    compute: ProcessList = field(default_factory=list)
    graphics: ProcessList = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)  # C functions answering NOT_SUPPORTED
    lost: bool = False  # every call answers GPU_IS_LOST (the GPU fell off the bus)


class _CFunction:
    def __init__(self, name: str, impl: Callable[..., int], lib: FakeNvmlLib) -> None:
        self.name, self.impl, self.lib = name, impl, lib
        self.restype: Any = ctypes.c_int

    def __call__(self, *args: Any) -> Any:
        self.lib.calls[self.name] += 1
        return self.impl(*args)


class FakeNvmlLib:
    def __init__(self, gpus: list[FakeGpu], *, missing: set[str] | None = None) -> None:
        self.gpus = gpus
        self.missing = missing or set()  # entry points this "driver" lacks (older drivers)
        self.calls: Counter[str] = Counter()
        self._handles = [pynvml.struct_c_nvmlDevice_t() for _ in gpus]

    def __getattr__(self, name: str) -> _CFunction:
        impl = getattr(type(self), f"c_{name}", None)
        if impl is None or name in self.missing:
            raise AttributeError(name)  # pynvml turns this into NVMLError_FunctionNotFound
        return _CFunction(name, impl.__get__(self), self)

    # --- helpers -------------------------------------------------------------------------

    def _gpu(self, handle: Any, fn: str) -> tuple[FakeGpu | None, int]:
        address = ctypes.addressof(handle.contents)
        for gpu, h in zip(self.gpus, self._handles, strict=True):
            if ctypes.addressof(h) == address:
                if gpu.lost:
                    return None, pynvml.NVML_ERROR_GPU_IS_LOST
                if fn in gpu.unsupported:
                    return None, pynvml.NVML_ERROR_NOT_SUPPORTED
                return gpu, pynvml.NVML_SUCCESS
        return None, pynvml.NVML_ERROR_INVALID_ARGUMENT

    def _processes(self, procs: ProcessList, c_count: Any, c_procs: Any) -> int:
        count = c_count._obj
        if c_procs is None:  # the sizing call
            count.value = len(procs)
            return pynvml.NVML_ERROR_INSUFFICIENT_SIZE if procs else pynvml.NVML_SUCCESS
        if count.value < len(procs):
            count.value = len(procs)
            return pynvml.NVML_ERROR_INSUFFICIENT_SIZE
        for i, (pid, used) in enumerate(procs):
            c_procs[i].pid = pid
            c_procs[i].usedGpuMemory = (
                pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if used is None else used
            )
            c_procs[i].gpuInstanceId = 0xFFFFFFFF
            c_procs[i].computeInstanceId = 0xFFFFFFFF
        count.value = len(procs)
        return pynvml.NVML_SUCCESS

    # --- C entry points, by the names pynvml looks up ---------------------------------------

    def c_nvmlInitWithFlags(self, flags: int) -> int:
        return pynvml.NVML_SUCCESS

    def c_nvmlShutdown(self) -> int:
        return pynvml.NVML_SUCCESS

    def c_nvmlErrorString(self, result: int) -> bytes:
        return b"Unknown Error"

    def c_nvmlDeviceGetCount_v2(self, c_count: Any) -> int:
        c_count._obj.value = len(self.gpus)
        return pynvml.NVML_SUCCESS

    def c_nvmlDeviceGetHandleByIndex_v2(self, c_index: Any, c_device: Any) -> int:
        if not 0 <= c_index.value < len(self.gpus):
            return pynvml.NVML_ERROR_INVALID_ARGUMENT
        c_device._obj.contents = self._handles[c_index.value]
        return pynvml.NVML_SUCCESS

    def c_nvmlDeviceGetUUID(self, handle: Any, c_buf: Any, size: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetUUID")
        if gpu:
            c_buf.value = gpu.uuid.encode()
        return ret

    def c_nvmlDeviceGetName(self, handle: Any, c_buf: Any, size: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetName")
        if gpu:
            c_buf.value = gpu.name.encode()
        return ret

    def c_nvmlDeviceGetMemoryInfo(self, handle: Any, c_memory: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        if gpu:  # v1: `used` includes the driver's reservation
            m = c_memory._obj
            m.total = gpu.memory_total
            m.used = gpu.memory_used + gpu.memory_reserved
            m.free = gpu.memory_total - m.used
        return ret

    def c_nvmlDeviceGetMemoryInfo_v2(self, handle: Any, c_memory: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetMemoryInfo_v2")
        m = c_memory._obj
        if gpu and m.version != pynvml.nvmlMemory_v2:
            return pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        if gpu:
            m.total, m.reserved, m.used = gpu.memory_total, gpu.memory_reserved, gpu.memory_used
            m.free = gpu.memory_total - gpu.memory_reserved - gpu.memory_used
        return ret

    def c_nvmlDeviceGetUtilizationRates(self, handle: Any, c_util: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetUtilizationRates")
        if gpu:
            c_util._obj.gpu, c_util._obj.memory = gpu.util_gpu, gpu.util_memory
        return ret

    def c_nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, c_temp: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetTemperature")
        if gpu and sensor.value != pynvml.NVML_TEMPERATURE_GPU:
            return pynvml.NVML_ERROR_INVALID_ARGUMENT
        if gpu:
            c_temp._obj.value = gpu.temperature
        return ret

    def c_nvmlDeviceGetPowerUsage(self, handle: Any, c_mw: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetPowerUsage")
        if gpu:
            c_mw._obj.value = gpu.power_mw
        return ret

    def c_nvmlDeviceGetEnforcedPowerLimit(self, handle: Any, c_mw: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetEnforcedPowerLimit")
        if gpu:
            c_mw._obj.value = gpu.power_limit_mw
        return ret

    def c_nvmlDeviceGetClockInfo(self, handle: Any, clock: Any, c_mhz: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetClockInfo")
        if gpu and clock.value != pynvml.NVML_CLOCK_SM:
            return pynvml.NVML_ERROR_NOT_SUPPORTED
        if gpu:
            c_mhz._obj.value = gpu.sm_clock
        return ret

    def c_nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, n: Any, procs: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetComputeRunningProcesses_v3")
        return self._processes(gpu.compute, n, procs) if gpu else ret

    def c_nvmlDeviceGetComputeRunningProcesses_v2(self, handle: Any, n: Any, procs: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetComputeRunningProcesses_v2")
        return self._processes(gpu.compute, n, procs) if gpu else ret

    def c_nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, n: Any, procs: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetGraphicsRunningProcesses_v3")
        return self._processes(gpu.graphics, n, procs) if gpu else ret

    def c_nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: Any, n: Any, procs: Any) -> int:
        gpu, ret = self._gpu(handle, "nvmlDeviceGetGraphicsRunningProcesses_v2")
        return self._processes(gpu.graphics, n, procs) if gpu else ret


def installer(monkeypatch: Any) -> InstallNvml:
    """`install(gpus, **kwargs)` puts a FakeNvmlLib under the real pynvml (undone after tests)."""

    def install(gpus: list[FakeGpu], **kwargs: Any) -> FakeNvmlLib:
        lib = FakeNvmlLib(gpus, **kwargs)
        monkeypatch.setattr(pynvml, "nvmlLib", lib)
        monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
        monkeypatch.setattr(pynvml, "_nvmlLib_refcount", 0)
        return lib

    return install
