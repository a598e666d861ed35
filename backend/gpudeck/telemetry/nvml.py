"""Real GPUs through NVML. The only module in GPUDeck that imports `pynvml` (nvidia-ml-py).

One `read()` is one snapshot per device. A reading NVML refuses (NotSupported, NoPermission...)
becomes None and is logged once per device and field. A GPU that falls off the bus (GpuIsLost)
is reported `lost` from then on, without stopping the others. Process lists cost milliseconds
per call, so they are refreshed every `process_interval_s` rather than every sample, except while
a job on the node shares a device: then every sample, so that the watchdog judges each job's
per-process memory (`usedGpuMemory`; None where NVML answers NVML_VALUE_NOT_AVAILABLE) fresh.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pynvml

from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.processes import RawProcess, classify
from gpudeck.telemetry.provider import SampleContext
from gpudeck.telemetry.schema import DeviceSample, Source

log = logging.getLogger(__name__)
T = TypeVar("T")
SOURCE = "nvml"
PROCESS_INTERVAL_S = 5.0
_LOST_ERRORS: tuple[type[Exception], ...] = tuple(
    getattr(pynvml, name)
    for name in ("NVMLError_GpuIsLost", "NVMLError_GpuNotFound")
    if hasattr(pynvml, name)
)
# Errors meaning "this build of NVML has no such function version": try an older one.
_VERSION_ERRORS = (
    pynvml.NVMLLibraryMismatchError,
    pynvml.NVMLError_FunctionNotFound,
    pynvml.NVMLError_ArgumentVersionMismatch,
)


class NvmlUnavailable(RuntimeError):
    """No NVIDIA driver or library here; `auto` falls back to simulated devices."""


class GpuLost(Exception):
    pass


def is_available() -> bool:
    """True when NVML initialises. Never raises, whatever is (not) installed."""
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, OSError, ...
        log.debug("NVML not available: %s", exc)
        return False
    with contextlib.suppress(Exception):  # availability is already established
        pynvml.nvmlShutdown()
    return True


@dataclass
class _Device:
    index: int
    handle: Any
    uuid: str
    name: str
    memory_total_bytes: int
    memory_v2: bool = True
    lost: bool = False
    raw_processes: list[RawProcess] = field(default_factory=list)
    processes_read_at: float = float("-inf")


class NvmlProvider:
    source: Source = "nvml"
    needs_placements = False

    def __init__(
        self,
        *,
        process_interval_s: float = PROCESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        try:
            pynvml.nvmlInit()
        except Exception as exc:
            raise NvmlUnavailable(str(exc) or type(exc).__name__) from exc
        self._process_interval_s = process_interval_s
        self._clock = clock
        self._warned: set[tuple[str, str]] = set()
        self._devices = [d for i in range(pynvml.nvmlDeviceGetCount()) if (d := self._open(i))]

    def _open(self, index: int) -> _Device | None:
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
        except pynvml.NVMLError as exc:
            log.error("NVML device %d cannot be opened (%s); leaving it out", index, exc)
            return None
        return _Device(index, handle, uuid, name, int(total))

    def inventory(self) -> list[DeviceInfo]:
        return [DeviceInfo(d.uuid, d.index, d.name, d.memory_total_bytes) for d in self._devices]

    def read(self, context: SampleContext) -> list[DeviceSample]:
        now = self._clock()
        return [self._read_device(d, context, now) for d in self._devices]

    def close(self) -> None:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError as exc:
            log.debug("nvmlShutdown: %s", exc)

    def _read_device(self, dev: _Device, context: SampleContext, now: float) -> DeviceSample:
        base = {"uuid": dev.uuid, "index": dev.index, "name": dev.name}
        if dev.lost:
            return DeviceSample(**base, memory_total_bytes=dev.memory_total_bytes, lost=True)
        try:
            readings = self._readings(dev)
            # A job held to a reservation is judged on every sample (telemetry/watchdog.py):
            # a list kept from seconds ago would count one reading as several.
            fresh = bool(context.reservations)
            if fresh or now - dev.processes_read_at >= self._process_interval_s:
                dev.raw_processes = self._processes(dev)
                dev.processes_read_at = now
        except GpuLost:
            dev.lost = True
            log.error(
                "GPU %d (%s) is lost; it reports nothing until NVML is reset", dev.index, dev.uuid
            )
            return DeviceSample(**base, memory_total_bytes=dev.memory_total_bytes, lost=True)
        return DeviceSample(
            **base, **readings, processes=classify(dev.raw_processes, context.managed_pids)
        )

    def _readings(self, dev: _Device) -> dict[str, Any]:
        h = dev.handle
        total, used, free = self._memory(dev)
        util = self._query(dev, "utilization", pynvml.nvmlDeviceGetUtilizationRates, h)
        temp = self._query(
            dev, "temperature", pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU
        )
        power_mw = self._query(dev, "power", pynvml.nvmlDeviceGetPowerUsage, h)
        limit_mw = self._query(dev, "power_limit", pynvml.nvmlDeviceGetEnforcedPowerLimit, h)
        sm = self._query(dev, "sm_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM)
        return {
            "memory_total_bytes": dev.memory_total_bytes if total is None else total,
            "memory_used_bytes": used,
            "memory_free_bytes": free,
            "utilization_gpu_pct": None if util is None else int(util.gpu),
            "utilization_memory_pct": None if util is None else int(util.memory),
            "temperature_c": temp,
            "power_watts": None if power_mw is None else power_mw / 1000,
            "power_limit_watts": None if limit_mw is None else limit_mw / 1000,
            "sm_clock_mhz": sm,
        }

    def _memory(self, dev: _Device) -> tuple[int | None, int | None, int | None]:
        """v2 first: its `used` leaves out the driver's reservation, as nvidia-smi does."""
        if dev.memory_v2:
            try:
                mem = self._call(pynvml.nvmlDeviceGetMemoryInfo, dev.handle, pynvml.nvmlMemory_v2)
                return int(mem.total), int(mem.used), int(mem.free)
            except (*_VERSION_ERRORS, pynvml.NVMLError_NotSupported):
                dev.memory_v2 = False
            except pynvml.NVMLError as exc:
                self._warn_once(dev, "memory", exc)
                return None, None, None
        mem = self._query(dev, "memory", pynvml.nvmlDeviceGetMemoryInfo, dev.handle)
        return (None, None, None) if mem is None else (int(mem.total), int(mem.used), int(mem.free))

    def _processes(self, dev: _Device) -> list[RawProcess]:
        seen: dict[int, int | None] = {}
        for kind in ("Compute", "Graphics"):
            for p in self._list_processes(dev, kind):
                if seen.get(p.pid) is None:
                    seen[p.pid] = None if p.usedGpuMemory is None else int(p.usedGpuMemory)
        return list(seen.items())

    def _list_processes(self, dev: _Device, kind: str) -> list[Any]:
        for suffix in ("", "_v2"):
            fn = getattr(pynvml, f"nvmlDeviceGet{kind}RunningProcesses{suffix}")
            try:
                return list(self._call(fn, dev.handle))
            except _VERSION_ERRORS:
                continue
            except pynvml.NVMLError as exc:
                self._warn_once(dev, f"{kind.lower()}_processes", exc)
                return []
        return []

    def _query(self, dev: _Device, what: str, fn: Callable[..., T], *args: Any) -> T | None:
        try:
            return self._call(fn, *args)
        except pynvml.NVMLError as exc:
            self._warn_once(dev, what, exc)
            return None

    @staticmethod
    def _call(fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except _LOST_ERRORS as exc:
            raise GpuLost from exc

    def _warn_once(self, dev: _Device, what: str, exc: Exception) -> None:
        if (dev.uuid, what) not in self._warned:
            self._warned.add((dev.uuid, what))
            log.warning("GPU %d (%s): cannot read %s: %s", dev.index, dev.uuid, what, exc)
